import Foundation
import Synchronization
import SurveyDomain

/// Runs write jobs, each in a transaction of its own or of its group, and answers each caller
/// once its work is committed: the SQLite `Writer` (one connection, group commit) or the
/// PostgreSQL `PostgresWriters` (a pool of connections, one transaction a job). Every job runs
/// inside a savepoint named `job`, so `undoJob` can take back its rows and go on.
protocol WriteExecutor: AnyObject, Sendable {
    /// `then` runs after the job's COMMIT (or at once when the executor is stopping); it must
    /// only hand the result on.
    func submitAsync<T>(_ body: @escaping (any SQLConnection, UndoLog) throws -> T, then: @escaping (Result<T, any Error>) -> Void)
    /// The same, for a job that begins with reads announced in `opening` (prefetches, no
    /// writes): PostgreSQL may send them after the COMMIT of the job before it on the same
    /// connection, in one round trip.
    func submitAsync<T>(opening: ((any SQLConnection) -> Void)?, _ body: @escaping (any SQLConnection, UndoLog) throws -> T,
                        then: @escaping (Result<T, any Error>) -> Void)
    /// Stops after the jobs already queued are committed.
    func stop()
    /// Jobs waiting to run (tests wait on it to order requests deterministically).
    var queuedJobs: Int { get }
    var commitsMade: Atomic<Int> { get }
    var jobsCommitted: Atomic<Int> { get }
}

extension WriteExecutor {
    /// Where nothing is sent ahead (SQLite), the opening is the job's first step.
    func submitAsync<T>(opening: ((any SQLConnection) -> Void)?, _ body: @escaping (any SQLConnection, UndoLog) throws -> T,
                        then: @escaping (Result<T, any Error>) -> Void) {
        submitAsync({ conn, undo in
            opening?(conn)
            return try body(conn, undo)
        }, then: then)
    }

    /// `body` may register file-system undo actions, run if its work does not commit.
    func submit<T>(_ body: @escaping (any SQLConnection, UndoLog) throws -> T) throws -> T {
        let outcome = ResultBox<Result<T, any Error>>()
        let done = DispatchSemaphore(value: 0)
        submitAsync(body) { outcome.value = $0; done.signal() }
        done.wait()
        return try outcome.result().get().get()
    }

    func submit<T>(_ body: @escaping (any SQLConnection) throws -> T) throws -> T {
        try submit { conn, _ in try body(conn) }
    }
}

/// Takes back everything the running job did: its rows (to its savepoint, which stays open, so
/// the job may go on: `WriteGate.ReplayCheck.onConflict`) and its file-system steps.
func undoJob(_ connection: any SQLConnection, _ undo: UndoLog) throws {
    undo.run()
    try connection.execute("ROLLBACK TO SAVEPOINT job")
}

/// Carries a value from one thread to another: written before the hand-over (the job's completion,
/// a semaphore) and read after it, which orders the accesses.
final class ResultBox<T>: @unchecked Sendable {
    var value: T?

    /// The value, once the job that sets it has run without error. Nil would be a defect of
    /// the writer; it is answered as an internal error rather than stopping the server.
    func result() -> Result<T, any Error> {
        guard let value else { return .failure(ApiError(.internalError, "A write finished without its result.")) }
        return .success(value)
    }
}

/// File-system steps to take back when a job's transaction does not commit (a blob renamed into
/// place for an upload row that was rolled back). Used only on the thread running the job.
final class UndoLog: @unchecked Sendable {
    private var actions: [() -> Void] = []
    func add(_ action: @escaping () -> Void) { actions.append(action) }
    func run() {
        for a in actions.reversed() { a() }
        actions = []
    }
}
