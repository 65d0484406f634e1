import Foundation
import SurveyForms
import Testing
@testable import SurveyXForm

@Suite struct ZZProbeTests {
    @Test func probe() throws {
        guard let dir = ProcessInfo.processInfo.environment["PROBE_DIR"] else { return }
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".xml") }.sorted()
        var ok = 0
        for f in files {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/" + f)))
            do {
                let json = try XFormReader.unresolvedDefinition(from: bytes)
                if FormAttachments.named(in: json).isEmpty { try XFormReader.check(json) }
                ok += 1
                print("PROBE OK \(f)")
            } catch {
                print("PROBE REFUSED \(f): \(error.message)")
            }
        }
        print("PROBE \(ok) of \(files.count)")
    }
}
