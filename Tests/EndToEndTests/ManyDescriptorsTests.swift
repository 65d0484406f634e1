import Foundation
import Testing
import TestProcesses

/// Children start while the test process holds thousands of descriptors — a whole run's test
/// process has held over 2,000, past where Foundation's `Process.run()` crashed it — and a
/// stopped server holds none of its files (each used to keep about ten, its database's).
@Suite struct ManyDescriptorsTests {
    /// The descriptors of this process open on files under `directory`.
    static func open(under directory: String) -> [String] {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
            .filter { $0.hasPrefix(directory + "/") }
    }

    @Test func aStoppedServerLetsGoOfItsDatabaseFiles() throws {
        var dataDir = ""
        do {
            let server = try TestServer { $0.databaseURL = nil }
            dataDir = server.dataDir
            #expect(try server.client.get("/healthz").status == 200)
            #expect(!Self.open(under: dataDir).isEmpty)
            server.stop()
        }
        // Its timer lets go of the database once cancelled, on the timer's queue.
        let deadline = Date().addingTimeInterval(5)
        while !Self.open(under: dataDir).isEmpty && Date() < deadline { usleep(20_000) }
        #expect(Self.open(under: dataDir) == [])
    }

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
