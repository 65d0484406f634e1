import Foundation
/// What the repositories need of a connection, on either engine: statements with `?`
/// placeholders, rows of `SQLValue`s, and how many rows the last statement changed. The SQL they
/// run is written once, in the subset both engines read alike; what differs (locking clauses,
/// advisory locks) is asked of `dialect`, and the schema steps spell out each engine's text
/// (`Migration`).
protocol SQLConnection: AnyObject {
    var dialect: SQLDialect { get }
    /// Statements without parameters, several at once.
    func execute(_ sql: String) throws
    func query(_ sql: String, _ args: [SQLValue]) throws -> [Row]
    func run(_ sql: String, _ args: [SQLValue]) throws
    /// Rows changed by the last `run`.
    var changes: Int { get }
    /// Rows changed by every statement so far (a security write that changed nothing wrote nothing).
    var totalChanges: Int64 { get }
}

extension SQLConnection {
    @discardableResult
    func query(_ sql: String) throws -> [Row] { try query(sql, []) }
    func run(_ sql: String) throws { try run(sql, []) }

    /// Transactions naming the same `key` run one after the other: the second waits here until
    /// the first has committed or rolled back. Only PostgreSQL needs it (several connections and
    /// processes write at once); SQLite's one writer already runs one transaction at a time.
    func takeTurn(_ key: String) throws {
        guard dialect == .postgres else { return }
        try query("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [.text(key)])
    }
}

/// The differences between the two engines' SQL at run time (the schema's are in `Migrations`).
enum SQLDialect: Sendable {
    case sqlite, postgres

    /// Appended to the gate's read of the organization row: on PostgreSQL a renewal or expiry
    /// (an UPDATE of that row) waits for every write that read it, and the reverse, so the two
    /// never interleave. SQLite's single writer gives the same order without a clause.
    var lockForShare: String { self == .postgres ? " FOR SHARE" : "" }
}
