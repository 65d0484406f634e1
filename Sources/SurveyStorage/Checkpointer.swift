import Foundation
import SurveyDomain
import Synchronization

/// Copies committed WAL frames back into the database file on a connection and thread of its own,
/// so the writer — which every write queues behind — does not. With SQLite's automatic
/// checkpoint, every ~14th group commit also read frames back, wrote them into the database and
/// fsynced twice on the writer thread (20 % of its CPU); moved here, the submission rate rose
/// ~10 % (`Benchmarks/ab.sh`, `Docs/performance.md`). The price: more checkpoint work in all
/// (frames are copied sooner, so fewer repeated pages are merged) and a WAL file that under
/// sustained load reaches tens of MB instead of ~5 MB before it restarts.
///
/// The WAL only starts over from its beginning when a write transaction finds every frame
/// already copied, which a checkpointer racing the writer rarely achieves: the writer still runs
/// a PASSIVE checkpoint of its own every 64 commits (cheap: little is left to copy), right after
/// a commit, so that the next transaction can restart the WAL. `lock` keeps the two from
/// running at once (a PASSIVE checkpoint that meets another gives up instead of finishing).
final class Checkpointer: @unchecked Sendable {
    // @unchecked: `connection` is used only by the checkpointer's thread; `stopping` is guarded
    // by `cond`; `lock` is an NSLock.
    let lock = NSLock()
    private let connection: Connection
    private let cond = NSCondition()
    private var stopping = false
    private var stopped = false
    static let busyInterval: TimeInterval = 0.002
    static let idleInterval: TimeInterval = 0.1

    init(path: String, synchronous: String) throws {
        connection = try Connection(path: path, readOnly: false)
        try connection.execute("PRAGMA synchronous=\(synchronous); PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit=\(Database.walSizeLimit)")
        let t = Thread { [unowned self] in
            ThreadName.set("surveyd-ckpt")
            self.loop()
        }
        t.stackSize = 1 << 20
        t.start()
    }

    func stop() {
        cond.lock()
        stopping = true
        cond.broadcast()
        while !stopped { cond.wait() }
        cond.unlock()
    }

    private func loop() {
        var seen: Int64 = -1
        while true {
            // `data_version` changes when another connection (the writer) has committed.
            let now = (try? connection.query("PRAGMA data_version").first?.int("data_version")) ?? -1
            let interval = now == seen ? Self.idleInterval : Self.busyInterval
            cond.lock()
            if !stopping { _ = cond.wait(until: Date(timeIntervalSinceNow: interval)) }
            if stopping {
                stopped = true
                cond.broadcast()
                cond.unlock()
                return
            }
            cond.unlock()
            if now != seen {
                seen = now
                lock.lock()
                try? connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
                lock.unlock()
            }
        }
    }
}
