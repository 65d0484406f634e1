import Foundation
import Synchronization
import SurveyDomain

/// The single writer. Callers hand it jobs and are answered once their group is committed — by
/// blocking (`submit`) or by a completion (`submitAsync`, for HTTP threads that must not wait):
/// each job runs inside its own SAVEPOINT (a failing job rolls back alone), the group shares one
/// COMMIT and so one fsync, then every caller is answered. This is group commit.
final class Writer: WriteExecutor, @unchecked Sendable {
    // @unchecked: `connection` is touched only by the writer thread; the queue is guarded by `cond`.
    private let connection: Connection
    private let cond = NSCondition()
    private var queue: [Job] = []
    private var stopping = false
    private var stopped = false
    private let maxGroupSize: Int
    private var thread: Thread?
    /// Group commits made and jobs they held (jobs / commits = the mean group size).
    let commitsMade = Atomic<Int>(0)
    let jobsCommitted = Atomic<Int>(0)

    final class Job: @unchecked Sendable {
        // @unchecked: `run`, `failure` and `finished` are used on the writer thread only;
        // `finished` hands the outcome over to the caller after the commit.
        let run: (any SQLConnection, UndoLog) throws -> Void
        let undo = UndoLog()
        var failure: (any Error)?
        let finished: (Job) -> Void
        init(_ run: @escaping (any SQLConnection, UndoLog) throws -> Void, finished: @escaping (Job) -> Void) {
            self.run = run
            self.finished = finished
        }
    }

    /// The background checkpointer, whose lock the writer's own checkpoints take.
    private let checkpointer: Checkpointer?

    init(connection: Connection, maxGroupSize: Int, checkpointer: Checkpointer?) {
        self.connection = connection
        self.maxGroupSize = maxGroupSize
        self.checkpointer = checkpointer
        let t = Thread { [unowned self] in
            ThreadName.set("surveyd-writer")  // from the thread itself (top -H, perf)
            self.loop()
        }
        t.stackSize = 4 << 20
        thread = t
        t.start()
    }

    /// Like `submit`, without waiting: `then` runs on the writer thread after the group's COMMIT
    /// (or at once, on this thread, when the writer is stopping). It must only hand the result on.
    func submitAsync<T>(_ body: @escaping (any SQLConnection, UndoLog) throws -> T, then: @escaping (Result<T, any Error>) -> Void) {
        let box = ResultBox<T>()
        do {
            try enqueue(Job({ conn, undo in box.value = try body(conn, undo) },
                            finished: { job in then(job.failure.map { .failure($0) } ?? box.result()) }))
        } catch {
            then(.failure(error))
        }
    }

    /// Jobs waiting for the writer (tests wait on it to order requests deterministically).
    var queuedJobs: Int {
        cond.lock()
        defer { cond.unlock() }
        return queue.count
    }

    private func enqueue(_ job: Job) throws {
        cond.lock()
        if stopping {
            cond.unlock()
            throw ApiError(.storageUnavailable, "The server is shutting down; nothing was written.")
        }
        queue.append(job)
        cond.signal()
        cond.unlock()
    }

    func stop() {
        cond.lock()
        stopping = true
        cond.broadcast()
        while !stopped { cond.wait() }
        cond.unlock()
    }

    private func loop() {
        var commits = 0
        while true {
            cond.lock()
            while queue.isEmpty && !stopping { cond.wait() }
            if queue.isEmpty && stopping {
                // A clean stop leaves the database in one file: the WAL is folded back in.
                checkpointer?.stop()
                try? connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                stopped = true
                cond.broadcast()
                cond.unlock()
                return
            }
            let first = Array(queue.prefix(maxGroupSize))
            queue.removeFirst(first.count)
            cond.unlock()

            let group = runGroup(first)
            // Counted before the callers are answered: a caller that reads the counters after
            // its answer sees its own commit.
            commits += 1
            commitsMade.add(1, ordering: .relaxed)
            jobsCommitted.add(group.count, ordering: .relaxed)
            for job in group { job.finished(job) }
            // The checkpointer copies frames as they come; a checkpoint by the writer itself, right
            // after a commit, finishes the copy so that the next transaction can restart the WAL.
            if commits % 64 == 0 {
                checkpointer?.lock.lock()
                try? connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
                checkpointer?.lock.unlock()
            }
        }
    }

    /// Up to `limit` more queued jobs.
    private func takeMore(_ limit: Int) -> [Job] {
        cond.lock()
        defer { cond.unlock() }
        let more = Array(queue.prefix(limit))
        queue.removeFirst(more.count)
        return more
    }

    /// Runs `first` and every job that arrives while they run (up to `maxGroupSize`) in one
    /// transaction, and returns them all: jobs queued during the group's work join its COMMIT
    /// instead of waiting for a commit of their own — bigger groups without any added wait.
    /// BEGIN, SAVEPOINT, RELEASE and COMMIT are prepared statements, cached like any other.
    private func runGroup(_ first: [Job]) -> [Job] {
        var group = first
        do {
            try connection.run("BEGIN IMMEDIATE")
        } catch {
            for job in group { job.failure = error }
            return group
        }
        var succeeded: [Job] = []
        var next = 0
        while true {
            while next < group.count {
                let job = group[next]
                next += 1
                do {
                    try connection.run("SAVEPOINT job")
                    do {
                        try job.run(connection, job.undo)
                        try connection.run("RELEASE job")
                        succeeded.append(job)
                    } catch {
                        job.failure = error
                        try undoJob(connection, job.undo)
                        try connection.execute("RELEASE job")
                    }
                } catch {
                    // The savepoint machinery itself failed (disk full, I/O): abandon the group.
                    try? connection.execute("ROLLBACK")
                    for j in group where j.failure == nil { j.failure = error; j.undo.run() }
                    return group
                }
            }
            guard group.count < maxGroupSize else { break }
            let more = takeMore(maxGroupSize - group.count)
            if more.isEmpty { break }
            group += more
        }
        do {
            try connection.run("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            sealWAL()
            for job in succeeded { job.failure = error; job.undo.run() }
        }
        return group
    }

    /// After a failed COMMIT. One whose WAL fsync failed has already written all its frames,
    /// commit frame included, past the end of the WAL that connections know of; SQLite forgets
    /// them, but a crash before the next commit would let the next start's WAL recovery find
    /// them and commit a write its callers were told was refused — an upload's row without the
    /// file its undo removes. A committed no-op overwrites the first of those frames (or starts
    /// the WAL afresh), which ends the chain of checksums recovery follows, before any caller is
    /// answered or undone. If even that fails, the next commit that succeeds does the same.
    private func sealWAL() {
        do {
            try connection.run("BEGIN IMMEDIATE")
            try Self.touch(connection)
            try connection.run("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
        }
    }

    /// A write that changes nothing yet reaches the disk. SQLite leaves a page alone when an
    /// UPDATE would write the bytes it holds (`SET x = x` writes no WAL frame and its COMMIT
    /// fsyncs nothing), so the value is moved and moved back in the same transaction.
    static func touch(_ conn: any SQLConnection) throws {
        let latest = "WHERE version = (SELECT MAX(version) FROM schema_migrations)"
        try conn.run("UPDATE schema_migrations SET applied_at = applied_at + 1 \(latest)")
        try conn.run("UPDATE schema_migrations SET applied_at = applied_at - 1 \(latest)")
    }
}
