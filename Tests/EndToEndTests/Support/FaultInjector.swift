import Foundation
import Synchronization
import TestProcesses

/// A failing disk under a real server: `Faults/faultinject.c`, compiled once per test run into
/// the build directory and preloaded (`LD_PRELOAD`) into a `surveyd serve`, makes the
/// file-system call a test arms fail with EIO or ENOSPC — armed and disarmed while the server
/// runs, through a control file beside the data dir. Everything else passes through untouched.
final class FaultInjector: Sendable {
    /// Which calls a rule watches: `write` (write, pwrite, pwrite64), `fsync` (fsync, fdatasync),
    /// `rename` (rename, renameat, renameat2), `link` (link, linkat).
    enum Call: String, Sendable { case write, fsync, rename, link }
    enum Failure: String, Sendable { case eio = "EIO", enospc = "ENOSPC" }

    /// One failure the library injected: the C function, the calling thread's name, and the path it acted on.
    struct Fired: Equatable, Sendable, CustomStringConvertible {
        let function: String
        let thread: String
        let path: String
        var description: String { "\(function) on \(thread) \(path)" }
    }

    let controlPath: String
    private let token = Mutex("")

    /// `dataDir`: the data dir of the server it is for; the control file goes beside it.
    init(besides dataDir: String) {
        controlPath = dataDir + ".faults"
    }

    deinit {
        for path in [controlPath, controlPath + ".fired"] { try? FileManager.default.removeItem(atPath: path) }
    }

    /// What the server's process needs in its environment.
    func environment() throws -> [String: String] {
        ["LD_PRELOAD": try Self.library.get(), "FAULTINJECT_CONTROL": controlPath]
    }

    /// From now on, the `nth` matching call (1: the next one) and the `count - 1` after it
    /// (`count` 0: every one from there) fail with `failure`. `path`: the file's whole path, `*`
    /// standing for any run of characters. `thread`: only calls of the thread of this name count
    /// (the server names its own: `surveyd-writer`, `surveyd-ckpt`).
    func arm(_ call: Call, path pattern: String, nth: Int = 1, count: Int = 1, failure: Failure = .eio, thread: String? = nil) throws {
        precondition(!pattern.contains(" ") && nth >= 1 && count >= 0 && (thread ?? "").utf8.count < 16 && thread?.contains(" ") != true)
        let fresh = "f" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let line = "\(fresh) \(call.rawValue) \(nth) \(count) \(failure.rawValue) \(pattern)" + (thread.map { " " + $0 } ?? "") + "\n"
        // Written beside it, then renamed over it: the library never reads half a rule.
        let staged = controlPath + ".next"
        try line.write(toFile: staged, atomically: false, encoding: .utf8)
        guard rename(staged, controlPath) == 0 else { throw TestFailure("arming \(controlPath): errno \(errno)") }
        token.withLock { $0 = fresh }
    }

    /// Nothing fails from now on.
    func disarm() {
        unlink(controlPath)
    }

    /// The failures injected since the last `arm`.
    var fired: [Fired] {
        let current = token.withLock { $0 }
        let text = (try? String(contentsOfFile: controlPath + ".fired", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 3).map(String.init)
            guard parts.count == 4, parts[0] == current else { return nil }
            return Fired(function: parts[1], thread: parts[2], path: parts[3])
        }
    }

    /// The preloadable library, compiled from its source into the build directory once per run
    /// (to a name of its own, then renamed into place: concurrent runs never load half a file).
    static let library: Result<String, any Error> = Result(catching: compile)

    private static func compile() throws -> String {
        let root = ServerProcess.packageRoot
        let source = root.appendingPathComponent("Tests/EndToEndTests/Faults/faultinject.c").path
        let built = root.appendingPathComponent(".build/debug/faultinject.so").path
        let staged = built + ".\(getpid())"
        let compiler = ["/usr/bin/cc", "/usr/bin/gcc"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let compiler else { throw TestFailure("no C compiler (cc, gcc) to build \(source)") }
        let p: SpawnedProcess
        do {
            p = try SpawnedProcess(compiler, ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o", staged, source, "-ldl", "-lpthread"],
                                   output: .null, error: .pipe)
        } catch { throw TestFailure("running \(compiler): \(error)") }
        let message = String(decoding: p.standardError!.readDataToEndOfFile(), as: UTF8.self)
        guard p.waitUntilExit() == .exited(0) else { throw TestFailure("compiling \(source): \(message)") }
        guard rename(staged, built) == 0 else { throw TestFailure("placing \(built): errno \(errno)") }
        return built
    }
}
