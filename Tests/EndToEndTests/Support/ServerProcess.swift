import Foundation
import SurveyDomain
import TestProcesses

/// The real `surveyd` binary in its own process, for what only a process can show: kill -9,
/// signals, peak memory.
final class ServerProcess: @unchecked Sendable {
    // @unchecked: used from one test at a time.
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
    /// SURVEYD_BIN when set (scripts/coverage.sh points it at an instrumented build), else the debug build.
    static var binary: String {
        ProcessInfo.processInfo.environment["SURVEYD_BIN"].flatMap { $0.isEmpty ? nil : $0 }
            ?? packageRoot.appendingPathComponent(".build/debug/surveyd").path
    }

    let dataDir: String
    private(set) var port: UInt16 = 0
    private(set) var process: SpawnedProcess?
    var client: RawHTTPClient { RawHTTPClient(port: port) }

    init(dataDir: String? = nil) {
        self.dataDir = dataDir ?? NSTemporaryDirectory() + "surveyd-proc-" + UUID().uuidString
    }

    deinit {
        process?.killNow()
        try? FileManager.default.removeItem(atPath: dataDir)
        try? FileManager.default.removeItem(atPath: stderrPath)
    }

    /// Where the server's stderr goes (beside the data dir, not in it).
    var stderrPath: String { dataDir + ".stderr" }
    /// What the server wrote on stderr so far (start-up lines; a crash's message and backtrace).
    var stderrText: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Runs a `surveyd` command to completion and returns its last line of stdout.
    @discardableResult
    func run(_ args: [String]) throws -> String {
        let (ended, data) = try SpawnedProcess.run(Self.binary, args + ["--data-dir", dataDir] + (try TestEngine.urlArguments(dataDir: dataDir)),
                                                   error: .null)
        guard ended == .exited(0) else { throw TestFailure("surveyd \(args) \(ended)") }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
    }

    struct CommandOutcome {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs `surveyd args` to completion — killed after `timeout`, so a command that hangs (or a
    /// server started by mistake) fails the test instead of the run. stderr goes through a file,
    /// so neither stream can fill its pipe while the other is read.
    static func command(_ args: [String], directory: String? = nil, environment: [String: String]? = nil,
                        timeout: TimeInterval = 60) throws -> CommandOutcome {
        let errPath = NSTemporaryDirectory() + "surveyd-command-" + UUID().uuidString + ".stderr"
        defer { try? FileManager.default.removeItem(atPath: errPath) }
        let (ended, data) = try SpawnedProcess.run(binary, args, directory: directory, environment: environment,
                                                   error: .file(errPath), timeout: timeout)
        return CommandOutcome(status: ended.status, stdout: String(decoding: data, as: UTF8.self),
                              stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    static func regularFiles(under root: String) -> [String] {
        guard let e = FileManager.default.enumerator(atPath: root) else { return [] }
        var out: [String] = []
        while let rel = e.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: root + "/" + rel, isDirectory: &isDir), !isDir.boolValue { out.append(rel) }
        }
        return out
    }

    /// The port a `surveyd serve --port 0` chose, from its start-up line on stderr
    /// ("surveyd: serving http://HOST:PORT (…)"); only whole lines count, a line half written
    /// could name half a port.
    static func servingPort(in stderr: String) -> UInt16? {
        let prefix = "surveyd: serving http://"
        for line in stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast() where line.hasPrefix(prefix) {
            let address = line.dropFirst(prefix.count).prefix { $0 != " " }
            if let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) { return port }
        }
        return nil
    }

    /// Waits (up to `seconds`) for `p`, whose stderr goes to the file at `path`, to name its port.
    static func servingPort(stderrFile path: String, of p: SpawnedProcess, within seconds: Double = 20) throws -> UInt16 {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            if let port = servingPort(in: text) { return port }
            guard p.isRunning, Date() < deadline else {
                throw TestFailure("surveyd named no port (\(p.termination?.description ?? "still running")): \(text.suffix(2000))")
            }
            usleep(10_000)
        }
    }

    /// The same from a stderr pipe; the process is killed after `seconds` without a port, which
    /// ends the read.
    static func servingPort(stderrPipe pipe: FileHandle, of p: SpawnedProcess, within seconds: Double = 20) throws -> UInt16 {
        let watchdog = p.killing(after: seconds)
        defer { watchdog.cancel() }
        var text = ""
        while true {
            let data = pipe.availableData
            guard !data.isEmpty else { throw TestFailure("surveyd named no port: \(text.suffix(2000))") }
            text += String(decoding: data, as: UTF8.self)
            if let port = servingPort(in: text) { return port }
        }
    }

    /// Serves `dataDir` on a port the system picks (`--port 0`: no other process can take it
    /// between a choice and the bind), read back from the start-up line.
    /// `requestLog`: a file for the request log (stdout); none by default (`--no-log`).
    /// `environment`: variables added to the test's own for the server (e.g. `LD_PRELOAD`).
    func start(extra: [String] = [], requestLog: String? = nil, environment: [String: String] = [:]) throws {
        let arguments = ["serve", "--data-dir", dataDir, "--port", "0"] + (requestLog == nil ? ["--no-log"] : []) + extra
            + (try TestEngine.urlArguments(dataDir: dataDir))
        // stderr is kept beside the data dir: a crash's message is what a failing test must show.
        let p = try SpawnedProcess(Self.binary, arguments,
                                   environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 },
                                   output: requestLog.map { .file($0) } ?? .null, error: .file(stderrPath))
        process = p
        port = try Self.servingPort(stderrFile: stderrPath, of: p)
        guard client.becomesHealthy(within: 20) else { throw TestFailure("surveyd did not come up on \(port)") }
    }

    func kill9() {
        process?.killNow()
        process = nil
    }

    /// SIGTERM and wait; returns the exit status.
    func terminate() -> Int32 {
        guard let p = process else { return -1 }
        p.send(SIGTERM)
        process = nil
        return p.waitUntilExit().status
    }

    /// A kB figure from /proc/<pid>/status (VmRSS, VmHWM).
    func memoryKB(_ field: String) -> Int {
        guard let p = process, let s = try? String(contentsOfFile: "/proc/\(p.pid)/status", encoding: .utf8) else { return -1 }
        for line in s.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
        }
        return -1
    }

    /// An organization with a collector and a published survey, set up through the CLI and API.
    func seed(fileMaxBytes: Int? = nil) throws -> (orgId: String, operatorToken: String, adminToken: String, collectorToken: String, versionId: String, contentHash: String) {
        let op = try run(["admin", "create-operator"])
        let orgId = try run(["admin", "create-org", "--name", "Proc", "--expires-at", Timestamp.format(Timestamp.nowMillis() + 86_400_000)])
        let admin = try run(["admin", "create-user", "--org", orgId, "--name", "A", "--roles", "admin"])
        let collector = try run(["admin", "create-user", "--org", orgId, "--name", "C", "--roles", "collector"])
        let c = client
        let s = try c.post("/v1/orgs/\(orgId)/surveys", token: admin, ["title": "Media"])
        let surveyId = try s.json?["surveyId"]?.stringValue ?? { throw TestFailure("survey: \(s.text)") }()
        var photo: [String: JSONValue] = ["id": "video", "type": "file", "label": "Video", "accept": ["video/mp4", "image/jpeg"]]
        if let fileMaxBytes { photo["maxBytes"] = .number(Double(fileMaxBytes)) }
        let v = try c.post("/v1/orgs/\(orgId)/surveys/\(surveyId)/versions", token: admin,
                           ["definition": ["title": "Media", "questions": [.object(photo), ["id": "n", "type": "integer", "label": "N"]]]])
        guard let vid = v.json?["surveyVersionId"]?.stringValue, let hash = v.json?["contentHash"]?.stringValue else { throw TestFailure("version: \(v.text)") }
        return (orgId, op, admin, collector, vid, hash)
    }
}
