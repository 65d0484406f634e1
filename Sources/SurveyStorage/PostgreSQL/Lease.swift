import Foundation
import Synchronization

/// A role only one process plays at a time (the webhook dispatcher: two processes sending the
/// same webhook's deliveries would break their order and send events twice). On PostgreSQL the
/// process that holds a session advisory lock on a connection of its own plays it; if that
/// process dies, its connection closes, the lock goes with it, and another process's next
/// `isHeld` takes it over. On SQLite there is one process, which always holds it.
public final class Lease: Sendable {
    private let url: String?
    private let key: Int64
    private let state = Mutex<(conn: PostgresConnection?, checkedAt: Date)>((nil, .distantPast))

    init(url: String?, key: Int64) {
        self.url = url
        self.key = key
    }

    /// True while this process holds it; tries to take it when nobody does. Checks its own
    /// connection at most once a second.
    public var isHeld: Bool {
        guard let url else { return true }
        return state.withLock { s in
            if let conn = s.conn {
                if Date().timeIntervalSince(s.checkedAt) < 1 { return true }
                if (try? conn.query("SELECT 1")) != nil, conn.isOpen {
                    s.checkedAt = Date()
                    return true
                }
                s.conn = nil
            }
            guard let conn = try? PostgresConnection(url: url),
                  (try? conn.query("SELECT pg_try_advisory_lock(?) AS taken", [.int(key)]).first?.bool("taken")) == true else { return false }
            s.conn = conn
            s.checkedAt = Date()
            return true
        }
    }

    /// Lets another process take it (at shutdown).
    public func release() { state.withLock { $0.conn = nil } }
}

extension Database {
    /// The lease of the one process that delivers webhooks.
    public func webhookDispatchLease() -> Lease { Lease(url: configuration.databaseURL, key: AdvisoryLock.webhookDispatch) }
}
