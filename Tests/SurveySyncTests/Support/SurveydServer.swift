import Foundation

/// A real `surveyd serve` on a loopback port the system chose, with its own temporary data dir.
final class SurveydServer {
    let dataDir: URL
    let port: UInt16
    private let child: KillableChild

    init() throws {
        dataDir = try PackagePaths.temporaryDirectory("surveysync-server")
        child = try KillableChild(PackagePaths.surveyd, ["serve", "--data-dir", dataDir.path, "--port", "0", "--no-log"],
                                  readStandardError: true)
        port = try child.waitForPort(after: "surveyd: serving")
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// `surveyd admin ...` on the same data dir; returns the last line of stdout.
    func admin(_ args: [String]) throws -> String {
        let out = try runToCompletion(PackagePaths.surveyd, ["admin"] + args + ["--data-dir", dataDir.path])
        return out.split(separator: "\n").last.map(String.init) ?? ""
    }

    func stop() {
        child.killNow()
        try? FileManager.default.removeItem(at: dataDir)
    }

    deinit { stop() }
}

/// The fault-injecting proxy (Harness/fault_proxy.py) in front of a server, driven by a rules file.
final class FaultProxy {
    let port: UInt16
    let rulesFile: URL
    private let child: KillableChild

    init(upstream: UInt16, directory: URL) throws {
        rulesFile = directory.appendingPathComponent("proxy-rules")
        try Data().write(to: rulesFile)
        child = try KillableChild("/usr/bin/env", ["python3", PackagePaths.faultProxy, "--upstream", String(upstream), "--listen", "0",
                                                   "--weights", "pass=1", "--rules", rulesFile.path])
        port = try child.waitForPort(after: "fault proxy on")
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// Replaces the rules (`MODE [sticky] PATTERN` lines); written whole and renamed into place.
    func setRules(_ rules: [String]) throws {
        let temporary = rulesFile.appendingPathExtension("new")
        try Data((rules.joined(separator: "\n") + "\n").utf8).write(to: temporary)
        guard rename(temporary.path, rulesFile.path) == 0 else { throw TestFailure("rename rules: \(errno)") }
    }

    /// Airplane mode: every connection is reset before anything reaches the server.
    func goOffline() throws { try setRules(["refuse sticky *"]) }
    func goOnline() throws { try setRules([]) }

    /// Every request line that went through, with the mode it got.
    var log: [(mode: String, request: String)] {
        let text = (try? String(contentsOfFile: rulesFile.path + ".log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { line in
            let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
            return (parts.first ?? "", parts.count > 1 ? parts[1] : "")
        }
    }

    /// How many requests reached the server (not refused) whose request line contains `text`.
    func delivered(_ text: String) -> Int { log.filter { $0.mode != "refuse" && $0.request.contains(text) }.count }

    func stop() { child.killNow() }

    deinit { stop() }
}
