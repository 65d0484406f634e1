import Foundation

/// A program the tests run as a child, started with `posix_spawn`. Not Foundation's `Process`: on
/// Linux (Swift 6.3.1) its `run()` lists `/proc/self/fd` reading past the end of each entry, and
/// crashes the test process once it holds about 1,350 descriptors or more
/// (swift-corelibs-foundation pull request 5472).
///
/// The child gets the descriptors asked for on 0, 1 and 2 and no other: every other one the test
/// process holds is closed in it, and the parent's pipe ends close on exec.
public final class SpawnedProcess: @unchecked Sendable {
    // @unchecked: `ended` is only read and written under `lock`.

    /// Where the child's standard output or standard error goes.
    public enum Output: Sendable {
        /// The test process's own.
        case inherit
        case null
        /// A pipe the test reads from (`standardOutput`, `standardError`).
        case pipe
        /// A file, created empty (or emptied) first.
        case file(String)
        /// For standard error: the same place as standard output.
        case standardOutput
    }

    /// How the child ended.
    public enum Termination: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        /// The exit status, or the signal's number (as Foundation's `terminationStatus`).
        public var status: Int32 {
            switch self {
            case .exited(let code), .signalled(let code): code
            }
        }

        public var description: String {
            switch self {
            case .exited(let code): "exited \(code)"
            case .signalled(let signal): "killed by signal \(signal)"
            }
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let pid: pid_t
    /// The write end of the child's standard input when asked for (`input: true`), nil otherwise.
    public let standardInput: FileHandle?
    /// The read ends of the pipes asked for (`.pipe`), nil otherwise.
    public let standardOutput: FileHandle?
    public let standardError: FileHandle?

    private let lock = NSLock()
    private var ended: Termination?

    /// Starts `executable` (a path, not looked up in PATH) with `arguments`; standard input is
    /// /dev/null, or with `input` a pipe the test writes to (`standardInput`).
    /// `environment`: the child's whole environment; nil, the test process's.
    public init(_ executable: String, _ arguments: [String], directory: String? = nil, environment: [String: String]? = nil,
                input: Bool = false, output: Output = .inherit, error: Output = .inherit) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The child's ends of the pipes: closed here once it has its copies.
        var childEnds: [Int32] = []
        defer { childEnds.forEach { close($0) } }
        if input {
            let (read, write) = try Self.pipe()
            childEnds.append(read)
            posix_spawn_file_actions_adddup2(&actions, read, 0)
            standardInput = FileHandle(fileDescriptor: write, closeOnDealloc: true)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            standardInput = nil
        }
        func route(_ output: Output, to target: Int32) throws -> FileHandle? {
            switch output {
            case .inherit:
                return nil
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
                return nil
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                return nil
            case .standardOutput:
                posix_spawn_file_actions_adddup2(&actions, 1, target)
                return nil
            case .pipe:
                let (read, write) = try Self.pipe()
                childEnds.append(write)
                posix_spawn_file_actions_adddup2(&actions, write, target)
                return FileHandle(fileDescriptor: read, closeOnDealloc: true)
            }
        }
        let out = try route(output, to: 1)
        let err = try route(error, to: 2)
        // Everything else the test process holds stays out of the child.
        guard let closeFrom = Self.closeFrom else { throw Failure(description: "no posix_spawn_file_actions_addclosefrom_np in this C library") }
        _ = closeFrom(&actions, 3)
        if let directory {
            guard let changeDirectory = Self.changeDirectory else { throw Failure(description: "no posix_spawn_file_actions_addchdir_np in this C library") }
            _ = changeDirectory(&actions, directory)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Whatever the test process ignores or blocks, the child starts with every signal at its default, unblocked.
        var all = sigset_t(), none = sigset_t()
        sigfillset(&all)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = Self.cStrings([executable] + arguments)
        let envp = environment.map { Self.cStrings($0.map { "\($0.key)=\($0.value)" }) }
        defer { (argv + (envp ?? [])).forEach { free($0) } }
        var child: pid_t = 0
        let spawned = argv.withUnsafeBufferPointer { args in
            if let envp {
                envp.withUnsafeBufferPointer { posix_spawn(&child, executable, &actions, &attributes, args.baseAddress!, $0.baseAddress!) }
            } else {
                posix_spawn(&child, executable, &actions, &attributes, args.baseAddress!, environ)
            }
        }
        guard spawned == 0 else { throw Failure(description: "\(executable) could not start: \(String(cString: strerror(spawned)))") }
        pid = child
        standardOutput = out
        standardError = err
    }

    /// Runs `executable` to its end; its standard output, read whole, and how it ended.
    /// `timeout`: SIGKILL after so many seconds, which also ends the read.
    public static func run(_ executable: String, _ arguments: [String], directory: String? = nil, environment: [String: String]? = nil,
                           error: Output = .inherit, timeout: TimeInterval? = nil) throws -> (termination: Termination, output: Data) {
        let child = try SpawnedProcess(executable, arguments, directory: directory, environment: environment, output: .pipe, error: error)
        let watchdog = timeout.map { child.killing(after: $0) }
        let data = child.standardOutput!.readDataToEndOfFile()
        let termination = child.waitUntilExit()
        watchdog?.cancel()
        return (termination, data)
    }

    /// Whether the child has not ended yet (one that has is reaped here).
    public var isRunning: Bool {
        lock.withLock { reap(blocking: false) == nil }
    }

    /// How the child ended; nil while it runs.
    public var termination: Termination? {
        lock.withLock { reap(blocking: false) }
    }

    /// Waits for the child to end.
    @discardableResult
    public func waitUntilExit() -> Termination {
        // Waited for without reaping, then reaped under the lock: a signal sent meanwhile
        // (`send` checks under the same lock) can never reach another process given its pid.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 && errno == EINTR {}
        // Nil only if something else reaped it, which nothing in the tests does.
        return lock.withLock { reap(blocking: true) ?? .exited(-1) }
    }

    /// Sends `signal` unless the child has already been reaped.
    public func send(_ signal: Int32) {
        lock.withLock {
            if ended == nil { _ = kill(pid, signal) }
        }
    }

    /// SIGKILL, and waits for it to take effect.
    @discardableResult
    public func killNow() -> Termination {
        send(SIGKILL)
        return waitUntilExit()
    }

    /// Sends SIGKILL after `seconds` unless cancelled first: a child that hangs ends the read or
    /// the wait for it instead of the test run.
    public func killing(after seconds: TimeInterval) -> DispatchWorkItem {
        let watchdog = DispatchWorkItem { [weak self] in self?.send(SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: watchdog)
        return watchdog
    }

    /// Under `lock`.
    private func reap(blocking: Bool) -> Termination? {
        if let ended { return ended }
        var status: Int32 = 0
        var reaped: pid_t
        repeat { reaped = waitpid(pid, &status, blocking ? 0 : WNOHANG) } while reaped == -1 && errno == EINTR
        guard reaped == pid else { return nil }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
        ended = status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
        return ended
    }

    /// A pipe whose two ends close on exec (another child started meanwhile keeps neither; the
    /// child's own copy, made by dup2, does not have the flag).
    private static func pipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard Glibc.pipe(&fds) == 0 else { throw Failure(description: "no pipe: \(String(cString: strerror(errno)))") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    private static func cStrings(_ strings: [String]) -> [UnsafeMutablePointer<CChar>?] {
        strings.map { strdup($0) } + [nil]
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34) and `…_addchdir_np` (2.29),
    /// which Swift's Glibc module does not declare.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
        symbol("posix_spawn_file_actions_addclosefrom_np")
    private static let changeDirectory: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32)? =
        symbol("posix_spawn_file_actions_addchdir_np")

    private static func symbol<T>(_ name: String) -> T? {
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name).map { unsafeBitCast($0, to: T.self) }
    }
}
