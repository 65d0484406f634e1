import Foundation
import Synchronization
import SurveyDomain

/// The PostgreSQL write path: a pool of connections, each on a thread of its own, taking jobs
/// from one queue. Every job is its own READ COMMITTED transaction (the server commits
/// concurrent transactions together, so group commit needs nothing from us), inside a savepoint
/// `job` so that the gate can take a conflicting insert back and answer the stored row. Other
/// processes write to the same database meanwhile: what the single SQLite writer gave by being
/// alone — the gate never interleaving with a renewal, one row per client id, one answer per
/// idempotency key, the audit log read in commit order — is made here by locks (see `WriteGate`,
/// `AuditHorizon`).
final class PostgresWriters: WriteExecutor, @unchecked Sendable {
    // @unchecked: `queue` and `stopping` are guarded by `cond`; each connection belongs to its thread.
    private let url: String
    private let cond = NSCondition()
    private var queue: [Job] = []
    private var stopping = false
    private var running: Int
    /// Writers waiting for a job: while one is, a queued job is left for it rather than taken to
    /// run after the job a busy writer is finishing (`takeNextOpening`).
    private var idle = 0
    let commitsMade = Atomic<Int>(0)
    let jobsCommitted = Atomic<Int>(0)

    final class Job: @unchecked Sendable {
        // @unchecked: run on one writer thread; the outcome is handed over by `finished`.
        /// The reads the job will make first, held back to go with its BEGIN (`submitAsync(opening:…)`).
        let opening: ((any SQLConnection) -> Void)?
        let run: (any SQLConnection, UndoLog) throws -> Void
        let finished: (Result<Void, any Error>) -> Void
        init(opening: ((any SQLConnection) -> Void)? = nil, _ run: @escaping (any SQLConnection, UndoLog) throws -> Void,
             finished: @escaping (Result<Void, any Error>) -> Void) {
            self.opening = opening
            self.run = run
            self.finished = finished
        }

        /// BEGIN, the savepoint the gate takes a conflicting insert back to, and the job's reads.
        func open(_ conn: PostgresConnection) {
            conn.enqueue("BEGIN")
            conn.enqueue("SAVEPOINT job")
            opening?(conn)
        }
    }

    /// Opens `count` connections now, so a server that cannot reach its database refuses to start.
    init(url: String, count: Int) throws {
        self.url = url
        let connections = try (0..<max(1, count)).map { _ in try PostgresConnection(url: url) }
        running = connections.count
        for (i, conn) in connections.enumerated() {
            let t = Thread { [unowned self] in
                // At most 15 bytes, or Linux keeps no name at all (top -H, perf, /proc/*/task/*/comm).
                ThreadName.set("surveyd-pgw\(i)")
                self.loop(conn)
            }
            t.stackSize = 4 << 20
            t.start()
        }
    }

    func submitAsync<T>(_ body: @escaping (any SQLConnection, UndoLog) throws -> T, then: @escaping (Result<T, any Error>) -> Void) {
        submitAsync(opening: nil, body, then: then)
    }

    /// A job whose first reads (`opening`: prefetches, no writes) may be sent right after the
    /// COMMIT of the job before it on the same connection, in that job's last round trip: under
    /// load a submission then costs one round trip of its own, not two.
    func submitAsync<T>(opening: ((any SQLConnection) -> Void)?, _ body: @escaping (any SQLConnection, UndoLog) throws -> T,
                        then: @escaping (Result<T, any Error>) -> Void) {
        let box = ResultBox<T>()
        let job = Job(opening: opening, { conn, undo in box.value = try body(conn, undo) },
                      finished: { result in then(result.flatMap { box.result() }) })
        cond.lock()
        if stopping {
            cond.unlock()
            return then(.failure(ApiError(.storageUnavailable, "The server is shutting down; nothing was written.")))
        }
        queue.append(job)
        cond.signal()
        cond.unlock()
    }

    var queuedJobs: Int {
        cond.lock()
        defer { cond.unlock() }
        return queue.count
    }

    func stop() {
        cond.lock()
        stopping = true
        cond.broadcast()
        while running > 0 { cond.wait() }
        cond.unlock()
    }

    /// The next queued job that has an opening, taken off the queue for this writer to run next,
    /// when every writer is busy: an idle one would start it at once, without waiting for this
    /// writer's COMMIT. A job without an opening stays where it is, for any writer.
    private func takeNextOpening() -> Job? {
        cond.lock()
        defer { cond.unlock() }
        guard idle == 0, let next = queue.first, next.opening != nil else { return nil }
        return queue.removeFirst()
    }

    private func loop(_ first: PostgresConnection) {
        var conn: PostgresConnection? = first
        // A job taken to be run next, whose opening may already have gone after the last COMMIT.
        let following = ResultBox<Job>()
        while true {
            let job: Job
            if let next = following.value {
                job = next
                following.value = nil
            } else {
                cond.lock()
                while queue.isEmpty && !stopping {
                    idle += 1
                    cond.wait()
                    idle -= 1
                }
                if queue.isEmpty {
                    running -= 1
                    cond.broadcast()
                    cond.unlock()
                    return
                }
                job = queue.removeFirst()
                cond.unlock()
            }

            // A connection that broke (the server restarted) is opened again for the next job.
            if conn == nil || conn?.isOpen == false { conn = try? PostgresConnection(url: url) }
            guard let c = conn else {
                job.finished(.failure(ApiError(.storageUnavailable, "The database cannot be reached; nothing was written.", retryAfterSeconds: 1)))
                continue
            }
            // After this job's COMMIT, the opening of the next one goes in the same round trip.
            c.nextOpening = { [unowned self] conn in
                if following.value == nil { following.value = self.takeNextOpening() }
                following.value?.open(conn)
            }
            defer { c.nextOpening = nil }
            let before = c.answered
            var result = Self.runJob(job, on: c)
            if Self.diedIdle(c, result, answeredBefore: before) {
                // It broke while it waited here (PostgreSQL restarted, or the network path was
                // cut) and failed at BEGIN, before any of the job ran: run it once more on a new
                // connection rather than answer 1040 while the database is there.
                conn = try? PostgresConnection(url: url)
                if let fresh = conn { result = Self.runJob(job, on: fresh) }
            }
            if case .success = result {
                commitsMade.add(1, ordering: .relaxed)
                jobsCommitted.add(1, ordering: .relaxed)
            }
            job.finished(result)
        }
    }

    /// The job failed because the connection was lost before the server answered anything of it.
    static func diedIdle(_ conn: PostgresConnection, _ result: Result<Void, any Error>, answeredBefore: Int) -> Bool {
        guard case .failure(let e) = result, let pe = e as? PostgresError else { return false }
        return pe.isConnectionLost && conn.answered == answeredBefore
    }

    /// One job in one transaction. A deadlock or serialization failure (the server chose this
    /// transaction to undo) runs the job again, a few times.
    private static func runJob(_ job: Job, on conn: PostgresConnection) -> Result<Void, any Error> {
        var attempt = 0
        while true {
            attempt += 1
            let undo = UndoLog()
            do {
                // Its BEGIN and first reads went after the last job's COMMIT, or go now with the
                // job's first awaited statement, in one round trip. A job that ends with
                // `finishJob` (the gate's) has committed with its last statements, and sent the
                // next job's opening with them.
                if !conn.adoptOpening() { job.open(conn) }
                conn.jobOwnsTransaction = true
                defer {
                    conn.jobOwnsTransaction = false
                    conn.dropKept()
                }
                try job.run(conn, undo)
                if conn.inTransaction && !conn.holdsOpening { try conn.run("COMMIT") }
                return .success(())
            } catch {
                undo.run()
                // The next job's opening, if it went, began a transaction this ROLLBACK ends:
                // that job opens again on its own.
                conn.discardOpening()
                try? conn.execute("ROLLBACK")
                if let e = error as? PostgresError, e.isRetryable, attempt < 4 { continue }
                return .failure(error)
            }
        }
    }
}
