import Foundation
import Synchronization
import SurveyDomain

/// One server per data dir. A second `surveyd serve` on the same directory would sweep the first
/// one's upload temp files and not-yet-committed blobs at its start (they look like a crash's
/// leftovers) and lose them. The lock is an `flock` on `surveyd.lock`, held while the process
/// lives: the kernel drops it when the process exits, however it exits (`kill -9` included), so
/// it never needs cleaning up. Commands that do not sweep (`admin`, `check`, `backup`) do not
/// take it; SQLite's own locking makes them safe beside a running server.
public final class DataDirLock: Sendable {
    private let descriptor: Atomic<Int32>

    public init(dataDir: String) throws {
        let path = dataDir + "/surveyd.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw ApiError(.internalError, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno == EWOULDBLOCK ? "another surveyd is serving this data dir" : String(cString: strerror(errno))
            close(fd)
            throw ApiError(.internalError, "\(dataDir): \(reason) (\(path) is locked); refusing to start, nothing was changed.")
        }
        descriptor = Atomic(fd)
    }

    deinit { release() }

    /// Lets the next server in (a clean stop; a dying process releases it anyway).
    public func release() {
        let fd = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        guard fd >= 0 else { return }
        flock(fd, LOCK_UN)
        close(fd)
    }
}
