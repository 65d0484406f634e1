import Foundation
import Testing
import TestProcesses

/// Children start while the test process holds thousands of descriptors — a whole run's test
/// process has held over 2,000, past where Foundation's `Process.run()` crashed it.
@Suite struct ManyDescriptorsTests {
    @Test func aChildStartsWhileThisProcessHoldsThreeThousandDescriptors() throws {
        let (listed, held) = try OpenDescriptors.holding(3_000) {
            #expect(try SpawnedProcess.run("/bin/true", []).termination == .exited(0))
            // The child lists its own descriptors: 0, 1, 2 and the directory being read — none
            // of the thousands held here.
            let (ended, output) = try SpawnedProcess.run("/bin/ls", ["/proc/self/fd"])
            #expect(ended == .exited(0))
            return (String(decoding: output, as: UTF8.self).split(separator: "\n"), OpenDescriptors.count)
        }
        #expect(held > 3_000)
        #expect(listed.count <= 4, "\(listed)")
    }

    @Test func aServerStartsAndStopsWhileThisProcessHoldsThreeThousandDescriptors() throws {
        try OpenDescriptors.holding(3_000) {
            let server = ServerProcess()
            try server.start()
            #expect(try server.client.get("/healthz").status == 200)
            #expect(server.terminate() == 0)
        }
    }
}
