import CSQLite
import Foundation
import SurveyDomain
import Synchronization

/// The store: one writer connection on its own thread committing jobs in groups, and a pool of
/// read-only connections. Nothing outside this module runs SQL; services call the repository
/// methods on `ReadContext`, `GatedTransaction` and `SecurityTransaction`.
public enum StartupCheck: String, Sendable { case full, quick }

public final class Database: Sendable {
    public struct Configuration: Sendable {
        public var path: String
        /// `FULL` by default: a 2xx means the write is on disk.
        public var synchronous: String = "FULL"
        public var readers: Int = 4
        /// Jobs committed together at most (one COMMIT, one fsync per group).
        public var maxGroupSize: Int = 256
        /// How a database is checked before it is opened for writing: `full` (integrity_check:
        /// finds damaged indexes too; ~116 s for 5.5 GB / 1.1M responses here), `quick`
        /// (quick_check: ~3.6 s for the same file; index damage is then left to `surveyd check`).
        public var startupCheck: StartupCheck = .full
        /// Server time for every check and stamp of a write.
        public var clock: any ServerClock = SystemClock()
        /// A PostgreSQL connection URI: the database lives there instead of at `path` (several
        /// surveyd processes may share it). Nil: the embedded SQLite file.
        public var databaseURL: String?
        /// PostgreSQL: connections writing at once (each write is a transaction of its own).
        public var writers: Int = 8
        public init(path: String, synchronous: String = "FULL", readers: Int = 4) {
            self.path = path
            self.synchronous = synchronous
            self.readers = readers
        }
    }

    let writer: any WriteExecutor
    let readers: any ReadPool
    /// Read snapshots begun (`read`, `snapshot`): how a test sees that a request reads once.
    let readsBegun = Atomic<Int>(0)
    let dialect: SQLDialect
    public let configuration: Configuration
    public var clock: any ServerClock { configuration.clock }
    /// Several processes may write to this database (PostgreSQL).
    public var isShared: Bool { dialect == .postgres }

    /// Opens (creating if needed) and migrates the database. Refuses a newer schema.
    public init(_ configuration: Configuration) throws {
        self.configuration = configuration
        if let url = configuration.databaseURL {
            try Migrations.run(on: try PostgresConnection(url: url))
            dialect = .postgres
            writer = try PostgresWriters(url: url, count: configuration.writers)
            readers = try PostgresReaders(url: url, count: configuration.readers)
            return
        }
        dialect = .sqlite
        if FileManager.default.fileExists(atPath: configuration.path) {
            try Self.refuseIfDamaged(configuration.path, check: configuration.startupCheck)
        }
        let conn = try Connection(path: configuration.path, readOnly: false)
        let mode = try conn.pragma("journal_mode=WAL")
        guard mode?.lowercased() == "wal" else {
            throw StorageError.misconfigured("could not enable WAL (journal_mode=\(mode ?? "?"))")
        }
        let sync = configuration.synchronous.uppercased()
        guard ["FULL", "NORMAL", "EXTRA", "OFF"].contains(sync) else {
            throw StorageError.misconfigured("synchronous must be FULL, NORMAL, EXTRA or OFF")
        }
        // temp_store=MEMORY: each job's SAVEPOINT keeps a statement journal; as a temp file it cost
        // a third of the writer's throughput at group sizes 32-128 (Benchmarks/floor, savepoints mode).
        // journal_size_limit: a WAL that grew while a long read (an export) held it back is cut
        // back on its next restart instead of keeping its largest size on disk for good. The limit
        // sits well above the 45-83 MB the WAL reaches under sustained load: a WAL cut back below
        // that has to grow again, and every commit that grows it pays for a metadata sync
        // (a 16 MiB limit measured 1.01x instead of 1.10x when checkpoints moved off the writer).
        try conn.execute("PRAGMA synchronous=\(sync); PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY; PRAGMA journal_size_limit=\(Self.walSizeLimit);")
        try Migrations.run(on: conn)
        // Checkpoints run on their own thread (`Checkpointer`), not inside the writer's commits.
        try conn.execute("PRAGMA wal_autocheckpoint=0")
        writer = Writer(connection: conn, maxGroupSize: configuration.maxGroupSize,
                        checkpointer: try Checkpointer(path: configuration.path, synchronous: sync))
        readers = try ReaderPool(path: configuration.path, count: configuration.readers)
    }

    /// The WAL's size once it restarts after growing past this (see `init`).
    static let walSizeLimit = 256 << 20

    /// A damaged file is refused before anything opens it for writing, so nothing is changed.
    /// By default the full `integrity_check` runs (`quick_check` misses damaged indexes); with no
    /// WAL beside the file it is opened immutable, so not even a `-shm` file is created.
    static func refuseIfDamaged(_ path: String, check: StartupCheck) throws {
        var problem = ""
        do {
            let hasWAL = FileManager.default.fileExists(atPath: path + "-wal")
            let ro = try Connection(path: hasWAL ? path : "file:\(path)?immutable=1", readOnly: true)
            let pragma = check == .full ? "integrity_check" : "quick_check"
            let result = try ro.query("PRAGMA \(pragma)").map { try $0.string(pragma) }
            if result == ["ok"] { return }
            problem = result.prefix(5).joined(separator: "; ")
        } catch {
            problem = String(describing: error)
        }
        throw SQLiteError(code: SQLITE_CORRUPT, message: "the database \(path) is damaged (\(problem)). Refusing to start; nothing was changed. "
                          + "Restore the latest backup (surveyd backup) or inspect it with `surveyd check`.", sql: nil)
    }

    /// Group commits so far and the jobs they held.
    public var writerStats: (commits: Int, jobs: Int) {
        (writer.commitsMade.load(ordering: .relaxed), writer.jobsCommitted.load(ordering: .relaxed))
    }

    /// Read snapshots begun so far.
    public var readCount: Int { readsBegun.load(ordering: .relaxed) }

    /// Stops the writer after the jobs already queued are committed.
    public func close() {
        writer.stop()
    }

    /// Runs `body` in one read snapshot on a pooled read-only connection. `followingAudit`: the
    /// read moves a cursor along the audit log (the changes feed, webhook deliveries), so on
    /// PostgreSQL it sees the log only up to where every entry is committed (`AuditHorizon`).
    public func read<T>(followingAudit: Bool = false, _ body: (ReadContext) throws -> T) throws -> T {
        readsBegun.add(1, ordering: .relaxed)
        return try readers.withConnection { conn in
            let horizon = followingAudit && dialect == .postgres ? try AuditHorizon.settled(conn) : nil
            // Prepared once per connection (sqlite3_exec would parse it each time). On PostgreSQL
            // the BEGIN goes with the read's first statement and the COMMIT is not waited for:
            // a read costs one round trip fewer at each end.
            try conn.enqueue(readers.beginRead, [])
            defer { conn.sendUnawaited("COMMIT") }
            return try body(ReadContext(conn, auditHorizon: horizon))
        }
    }

    /// Security actions that the contract never gates (users, tokens, roles, subscriptions).
    /// Each change must append its audit entry; the transaction is refused otherwise. One that
    /// turns out to change nothing (revoking a revoked token) writes nothing, audit included.
    public func securityWrite<T: Sendable>(orgId: String, actor: String, turn: String? = nil,
                                           _ body: @escaping @Sendable (SecurityTransaction) throws -> T) throws -> T {
        let clock = self.clock
        return try writer.submit { conn in
            if let turn { try conn.takeTurn(turn) }
            let tx = SecurityTransaction(WriteContext(conn, orgId: orgId, actor: actor, now: clock.nowMillis()))
            let before = conn.totalChanges
            let result = try body(tx)
            try conn.flush()
            if conn.totalChanges != before { try tx.context.requireAudit() }
            return result
        }
    }

    /// True when a real write reaches the disk: a committed (and fsynced) no-op update, plus at
    /// least `minimumFreeBytes` free beside the database.
    public func isWritable(minimumFreeBytes: UInt64 = 1 << 20) -> Bool {
        if dialect == .postgres {
            return (try? writer.submit { conn in
                try conn.run("UPDATE schema_migrations SET applied_at = applied_at WHERE version = (SELECT MAX(version) FROM schema_migrations)")
            }) != nil
        }
        var fs = statvfs()
        let dir = (configuration.path as NSString).deletingLastPathComponent
        guard statvfs(dir.isEmpty ? "." : dir, &fs) == 0, UInt64(fs.f_bavail) * UInt64(fs.f_frsize) >= minimumFreeBytes else { return false }
        return (try? writer.submit { conn in try Writer.touch(conn) }) != nil
    }
}

/// Translates a thrown error into the contract's terms.
public func storageApiError(_ error: any Error) -> ApiError {
    if let e = error as? ApiError { return e }
    if let e = error as? SQLiteError { return e.apiError }
    if let e = error as? PostgresError { return e.apiError }
    return ApiError(.internalError)
}
