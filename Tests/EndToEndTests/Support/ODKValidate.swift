import Foundation
import SurveyDomain
import TestProcesses

/// ODK Validate — JavaRosa's own form parser, what ODK Collect runs — which pyxform's wheel carries
/// as `ODK_Validate.jar` (`scripts/setup.sh` installs pyxform in `.build/venv-forms` and Java 17).
/// Tests call it on every XForm a server serves them; each accepted form is counted in
/// `.build/odk-validate-accepted.log` (one line per form: its SHA-256 and a label), so a run can
/// say how many distinct XForms ODK Validate accepted.
enum ODKValidate {
    static let projectRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var jar: URL {
        projectRoot.appendingPathComponent(".build/venv-forms/lib/python3.11/site-packages/pyxform/validators/odk_validate/bin/ODK_Validate.jar")
    }

    struct Rejected: Error, CustomStringConvertible {
        let label: String
        let output: String
        var description: String { "ODK Validate rejected \(label):\n\(output)" }
    }

    struct Unavailable: Error, CustomStringConvertible {
        let description: String
    }

    /// Throws `Rejected` with JavaRosa's message unless ODK Validate accepts `xform`.
    static func accept(_ xform: [UInt8], label: String) throws {
        guard FileManager.default.fileExists(atPath: jar.path) else {
            throw Unavailable(description: "ODK_Validate.jar is not at \(jar.path): run scripts/setup.sh")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("odk-validate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("form.xml")
        try Data(xform).write(to: file)

        let ended: SpawnedProcess.Termination, data: Data
        do {
            (ended, data) = try SpawnedProcess.run("/usr/bin/env", ["java", "-Djava.awt.headless=true", "-jar", jar.path, file.path],
                                                   error: .standardOutput)
        } catch {
            throw Unavailable(description: "java could not start (\(error)): scripts/setup.sh installs openjdk-17-jdk-headless")
        }
        let output = String(decoding: data, as: UTF8.self)
        guard ended == .exited(0), output.contains("Xform is valid") else {
            throw Rejected(label: label, output: output)
        }
        record(xform, label: label)
    }

    private static let lock = NSLock()

    private static func record(_ xform: [UInt8], label: String) {
        lock.lock(); defer { lock.unlock() }
        let log = projectRoot.appendingPathComponent(".build/odk-validate-accepted.log")
        let line = Data("\(Digest.sha256Hex(xform)) \(label)\n".utf8)
        if let handle = try? FileHandle(forWritingTo: log) {
            handle.seekToEndOfFile(); handle.write(line); try? handle.close()
        } else {
            try? line.write(to: log)
        }
    }
}
