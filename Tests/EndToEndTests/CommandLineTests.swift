import Foundation
import Testing

/// The `surveyd` binary's own arguments: a mistyped option or `--help` must never start a
/// server or create a data dir somewhere unexpected.
@Suite struct CommandLineTests {
    struct Outcome {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs `surveyd args` in a fresh empty working directory (where the default `./data` would go).
    static func run(_ args: [String], in directory: String) throws -> Outcome {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ServerProcess.binary)
        p.arguments = args
        p.currentDirectoryURL = URL(fileURLWithPath: directory)
        var environment = ProcessInfo.processInfo.environment
        for key in environment.keys where key.hasPrefix("SURVEYD_") { environment[key] = nil }
        p.environment = environment
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // A server started by mistake would never exit: stop it after a while and fail.
        let deadline = Date().addingTimeInterval(20)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        return Outcome(status: p.terminationStatus,
                       stdout: String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
                       stderr: String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }

    static func emptyDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "surveyd-cli-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test(arguments: [["serve", "--help"], ["serve", "--port", "0", "--help"], ["admin", "create-org", "--help"], ["--help"]])
    func helpShowsTheUsageAndRunsNothing(args: [String]) throws {
        let dir = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = try Self.run(args, in: dir)
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("usage:"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing may be created")
    }

    /// An option followed by another option has no value: `--to --data-dir d` must not back up
    /// into a directory named "--data-dir".
    @Test func anOptionWithoutItsValueIsRefused() throws {
        let dir = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = try Self.run(["backup", "--to", "--data-dir", dir + "/d"], in: dir)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("--to needs a value"), "stderr: \(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing may be created")
    }

    @Test(arguments: [["serve", "--data-dri", "x"], ["serve", "--prot=9000"], ["check", "--verbose"], ["admin", "create-org", "--nmae", "A"]])
    func anUnknownOptionIsRefusedAndNothingIsCreated(args: [String]) throws {
        let dir = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = try Self.run(args, in: dir)
        #expect(outcome.status == 1)
        let option = args.first { $0.hasPrefix("--") }!.split(separator: "=")[0]
        #expect(outcome.stderr.contains("unknown option \(option)"), "stderr: \(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing may be created")
    }
}
