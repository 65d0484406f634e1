import Foundation
import SurveyDomain

/// A read snapshot that lasts as long as its holder needs it (an export streaming for minutes),
/// on a connection of its own so the reader pool is never short of one. Everything read through
/// it is as of its first read; writers go on meanwhile (WAL), and the WAL cannot be checkpointed
/// past the snapshot's start until it is closed.
public final class Snapshot: @unchecked Sendable {
    // @unchecked: one thread at a time uses it (a request's, then the connection's callbacks in turn).
    let conn: any SQLConnection
    /// On PostgreSQL, for a snapshot that reads the audit log's sequence as a mark of change: the
    /// number up to which every entry was committed (or rolled back) before the snapshot began
    /// (`AuditHorizon`). Nil on SQLite, whose one writer commits in sequence order.
    let auditHorizon: Int64?
    private var open = true
    private var cursors = 0
    public var read: ReadContext { ReadContext(conn) }

    init(path: String) throws {
        let sqlite = try Connection(path: path, readOnly: true)
        try sqlite.execute("PRAGMA query_only=ON")
        try sqlite.execute("BEGIN")
        conn = sqlite
        auditHorizon = nil
    }

    /// PostgreSQL: one REPEATABLE READ transaction on a connection of its own. `settlingAudit`:
    /// first wait for the audit entries handed out so far to be committed (`AuditHorizon`).
    init(url: String, settlingAudit: Bool = false) throws {
        let pg = try PostgresConnection(url: url)
        auditHorizon = settlingAudit ? try AuditHorizon.settled(pg) : nil
        try pg.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        conn = pg
    }

    /// Rows of `sql` one at a time: on SQLite a statement of their own, on PostgreSQL a cursor
    /// fetched a few hundred rows at a time (never the whole result in memory).
    public func rows(_ sql: String, _ args: [SQLValue]) throws -> RowCursor {
        if let sqlite = conn as? Connection {
            let statement = try Statement(connection: sqlite, sql: sql)
            try statement.bind(args)
            return RowCursor { try statement.next() }
        }
        cursors += 1
        let name = "rows\(cursors)", conn = self.conn
        try conn.run("DECLARE \(name) NO SCROLL CURSOR FOR \(sql)", args)
        var batch: [Row] = [], index = 0, done = false
        return RowCursor {
            if index == batch.count {
                guard !done else { return nil }
                batch = try conn.query("FETCH 256 FROM \(name)")
                index = 0
                if batch.count < 256 { done = true }
                if batch.isEmpty { return nil }
            }
            index += 1
            return batch[index - 1]
        }
    }

    /// Ends the snapshot (idempotent).
    public func close() {
        guard open else { return }
        open = false
        try? conn.execute("COMMIT")
    }

    deinit { close() }
}

/// A query's rows, stepped one at a time.
public final class RowCursor {
    private let step: () throws -> Row?
    init(_ step: @escaping () throws -> Row?) { self.step = step }
    public func next() throws -> Row? { try step() }
}

extension Database {
    /// A long-lived read snapshot on its own connection (see `Snapshot`). `settlingAudit`: its
    /// `changeSequence(orgId:)` is a mark of change also on PostgreSQL, where entries may commit
    /// out of sequence order (the snapshot waits for the entries in flight when it begins).
    public func snapshot(settlingAudit: Bool = false) throws -> Snapshot {
        readsBegun.add(1, ordering: .relaxed)
        if let url = configuration.databaseURL { return try Snapshot(url: url, settlingAudit: settlingAudit) }
        return try Snapshot(path: configuration.path)
    }
}
