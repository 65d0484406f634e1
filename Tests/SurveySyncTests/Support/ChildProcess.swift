import Foundation

/// Where the package's binaries and harness are, and small process helpers.
enum PackagePaths {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
    static var surveyd: String { root.appendingPathComponent(".build/debug/surveyd").path }
    static var surveysync: String { root.appendingPathComponent(".build/debug/surveysync").path }
    static var faultProxy: String { root.appendingPathComponent("Harness/fault_proxy.py").path }

    static func temporaryDirectory(_ prefix: String) throws -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A port nobody listens on right now.
    static func freePort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return UInt16(bigEndian: addr.sin_port)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Runs a command to completion and returns its stdout (stderr to a file, so no pipe fills).
@discardableResult
func runToCompletion(_ executable: String, _ args: [String]) throws -> String {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = args
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { throw TestFailure("\(executable) \(args) exited \(p.terminationStatus)") }
    return String(decoding: data, as: UTF8.self)
}

/// A `surveysync` child that a test reads line by line and then kills with SIGKILL.
final class KillableChild {
    let process = Process()
    private let output = Pipe()
    private var buffer = Data()

    init(_ executable: String, _ args: [String]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = args
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Blocks until a line containing `text` arrives (or the child exits / the time is up).
    func waitForLine(containing text: String, timeout: TimeInterval = 20) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            let lines = String(decoding: buffer, as: UTF8.self).split(separator: "\n")
            if let line = lines.first(where: { $0.contains(text) }) { return String(line) }
        }
        throw TestFailure("no line containing \(text); got: \(String(decoding: buffer, as: UTF8.self))")
    }

    func killNow() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { if process.isRunning { killNow() } }
}
