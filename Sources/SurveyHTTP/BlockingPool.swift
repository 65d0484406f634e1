import Foundation

/// Threads for handlers that may block — on the writer's commit, an fsync, another request holding
/// the same idempotency key — so libmicrohttpd's few polling threads never wait. A thread starts
/// whenever more work is queued than threads are idle, and ends after `idleSeconds` without work:
/// the pool is as large as the blocking work of the moment (bounded by the connection limit) and
/// shrinks back to nothing when the server is quiet. `limit` caps the threads (work beyond it
/// waits its turn); `threadStarts` runs first on each new thread (its name, its priority).
public final class BlockingPool: @unchecked Sendable {
    // @unchecked: every field is guarded by `cond`.
    private let cond = NSCondition()
    private var work: [() -> Void] = []
    private var threads = 0
    private var idle = 0
    private let stackBytes: Int
    private let idleSeconds: Double
    private let limit: Int
    private let threadStarts: @Sendable () -> Void

    public init(stackBytes: Int, idleSeconds: Double = 10, limit: Int = .max, threadStarts: @escaping @Sendable () -> Void = {}) {
        self.stackBytes = stackBytes
        self.idleSeconds = idleSeconds
        self.limit = max(1, limit)
        self.threadStarts = threadStarts
    }

    public func run(_ job: @escaping () -> Void) {
        cond.lock()
        work.append(job)
        let start = work.count > idle && threads < limit
        if start { threads += 1 } else { cond.signal() }
        cond.unlock()
        if start {
            let t = Thread { self.loop() }  // strong: an idle thread keeps the pool until it ends
            t.stackSize = stackBytes
            t.start()
        }
    }

    private func loop() {
        threadStarts()
        cond.lock()
        while true {
            if !work.isEmpty {
                let job = work.removeFirst()
                cond.unlock()
                job()
                cond.lock()
                continue
            }
            idle += 1
            let woken = cond.wait(until: Date(timeIntervalSinceNow: idleSeconds))
            idle -= 1
            if !woken && work.isEmpty { break }
        }
        threads -= 1
        cond.unlock()
    }
}
