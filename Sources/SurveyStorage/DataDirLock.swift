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
    /// Why the lock is not held although the file opened, for a warning; nil when it is held.
    public let problem: String?

    public init(_ layout: DataDirectory) throws {
        let dataDir = layout.root, path = layout.lockFile
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw MaintenanceError("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 {
            problem = nil
        } else if errno == EWOULDBLOCK {
            close(fd)
            throw MaintenanceError("\(dataDir): another surveyd is serving this data dir (\(path) is locked); refusing to start, nothing was changed.")
        } else {
            // A filesystem without flock (ENOLCK, ENOTSUP): serving is still right, unguarded.
            problem = "\(path) cannot be locked (\(String(cString: strerror(errno)))): a second server on this data dir would not be refused"
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
