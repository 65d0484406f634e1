import Foundation
import SurveyDomain

/// A read snapshot that lasts as long as its holder needs it (an export streaming for minutes),
/// on a connection of its own so the reader pool is never short of one. Everything read through
/// it is as of its first read; writers go on meanwhile (WAL), and the WAL cannot be checkpointed
/// past the snapshot's start until it is closed.
public final class Snapshot: @unchecked Sendable {
    // @unchecked: one thread at a time uses it (a request's, then the connection's callbacks in turn).
    let conn: Connection
    private var open = true
    public var read: ReadContext { ReadContext(conn) }

    init(path: String) throws {
        conn = try Connection(path: path, readOnly: true)
        try conn.execute("PRAGMA query_only=ON")
        try conn.execute("BEGIN")
    }

    /// Rows of `sql` one at a time, on a statement of their own.
    public func rows(_ sql: String, _ args: [SQLValue]) throws -> RowCursor {
        let statement = try Statement(connection: conn, sql: sql)
        try statement.bind(args)
        return RowCursor(statement)
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
    private let statement: Statement
    init(_ statement: Statement) { self.statement = statement }
    public func next() throws -> Row? { try statement.next() }
}

extension Database {
    /// A long-lived read snapshot on its own connection (see `Snapshot`).
    public func snapshot() throws -> Snapshot { try Snapshot(path: configuration.path) }
}
