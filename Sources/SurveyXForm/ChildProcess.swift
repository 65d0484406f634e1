import Foundation

/// A program run as a child with `posix_spawn`, its standard output and standard error on one
/// pipe, its standard input `/dev/null`. Not Foundation's `Process`: on Linux (Swift 6.3.1) its
/// `run()` lists `/proc/self/fd` with a read past the end of each entry, which now and then
/// crashes the whole process (swift-corelibs-foundation pull request 5472) — here, the server.
struct ChildProcess {
    let pid: pid_t
    /// What the child writes to standard output and standard error.
    let output: FileHandle

    struct Failure: Error {
        let message: String
    }

    /// How it ended: its exit status, or the signal that stopped it.
    enum Exit: Equatable {
        case exited(Int32)
        case signalled(Int32)
    }

    init(_ path: String, arguments: [String]) throws(Failure) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw Failure(message: "no pipe: \(String(cString: strerror(errno)))") }
        // The server's ends close on exec (another child started meanwhile keeps neither); the
        // child's copies on 1 and 2 are made by dup2, which clears the flag.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        // Every other descriptor the server holds stays out of the child, where glibc can.
        if let closeFrom = Self.closeFrom { _ = closeFrom(&actions, 3) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The server ignores SIGPIPE; the child starts with every signal at its default, unblocked.
        var all = sigset_t(), none = sigset_t()
        sigfillset(&all)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var child: pid_t = 0
        let spawned = argv.withUnsafeBufferPointer { posix_spawn(&child, path, &actions, &attributes, $0.baseAddress!, environ) }
        close(fds[1])
        guard spawned == 0 else {
            close(fds[0])
            throw Failure(message: String(cString: strerror(spawned)))
        }
        pid = child
        output = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
    }

    /// Waits for the child to end; after `limit`, kills it (SIGKILL) and returns nil.
    func waitForExit(within limit: DispatchTimeInterval) -> Exit? {
        let ended = DispatchSemaphore(value: 0)
        let status = StatusBox()
        let pid = self.pid
        Thread.detachNewThread {
            var s: Int32 = 0
            while waitpid(pid, &s, 0) == -1 && errno == EINTR {}
            status.value = s
            ended.signal()
        }
        guard ended.wait(timeout: .now() + limit) == .success else {
            kill(pid, SIGKILL)
            ended.wait()
            return nil
        }
        let s = status.value
        // WIFEXITED / WTERMSIG, which Swift does not import.
        return s & 0x7f == 0 ? .exited((s >> 8) & 0xff) : .signalled(s & 0x7f)
    }

    private final class StatusBox: @unchecked Sendable {
        // @unchecked: written by the waiting thread before `ended` is signalled, read after.
        var value: Int32 = 0
    }

    /// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, which Swift's Glibc module does
    /// not declare; nil on a C library without it.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()
}
