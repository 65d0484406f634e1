import Foundation
import TestProcesses

/// Where the package's binaries and harness are, and small process helpers.
enum PackagePaths {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
    /// SURVEYD_BIN and SURVEYSYNC_BIN when set (scripts/coverage.sh points them at an instrumented
    /// build), else the debug build.
    static var surveyd: String { binary("SURVEYD_BIN", default: "surveyd") }
    static var surveysync: String { binary("SURVEYSYNC_BIN", default: "surveysync") }
    static var faultProxy: String { root.appendingPathComponent("Harness/fault_proxy.py").path }

    private static func binary(_ variable: String, default name: String) -> String {
        ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 }
            ?? root.appendingPathComponent(".build/debug/" + name).path
    }

    static func temporaryDirectory(_ prefix: String) throws -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Runs a command to completion and returns its stdout.
@discardableResult
func runToCompletion(_ executable: String, _ args: [String]) throws -> String {
    let (ended, output) = try SpawnedProcess.run(executable, args, error: .null)
    guard ended == .exited(0) else { throw TestFailure("\(executable) \(args) \(ended)") }
    return String(decoding: output, as: UTF8.self)
}

/// Reads a child's output line by line as it comes.
final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    /// Blocks until a line containing `text` arrives (or the stream ends / the time is up).
    func waitForLine(containing text: String, timeout: TimeInterval = 20) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = String(decoding: buffer, as: UTF8.self).split(separator: "\n").first(where: { $0.contains(text) }) {
                return String(line)
            }
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
        }
        throw TestFailure("no line containing \(text); got: \(String(decoding: buffer, as: UTF8.self))")
    }
}

/// A child process a test reads and then kills with SIGKILL (a phone killing an app, a server
/// stopped at the end of a test).
final class KillableChild {
    private let process: SpawnedProcess
    private let lines: LineReader

    /// `readStandardError`: read stderr instead of stdout (surveyd says where it serves on stderr).
    init(_ executable: String, _ args: [String], readStandardError: Bool = false) throws {
        process = try SpawnedProcess(executable, args, output: readStandardError ? .null : .pipe, error: readStandardError ? .pipe : .null)
        lines = LineReader(readStandardError ? process.standardError! : process.standardOutput!)
    }

    func waitForLine(containing text: String, timeout: TimeInterval = 20) throws -> String {
        try lines.waitForLine(containing: text, timeout: timeout)
    }

    /// The port in a line like "... 127.0.0.1:PORT ...".
    func waitForPort(after text: String) throws -> UInt16 {
        let line = try waitForLine(containing: text)
        guard let range = line.range(of: "127.0.0.1:"),
              let port = UInt16(line[range.upperBound...].prefix(while: \.isNumber)) else { throw TestFailure("no port in \(line)") }
        return port
    }

    func killNow() {
        process.killNow()
    }

    deinit { killNow() }
}
