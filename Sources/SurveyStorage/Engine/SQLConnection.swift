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
    /// A statement whose answer the caller does not need at once (a transaction's BEGIN, an
    /// INSERT whose only possible news is its failure). PostgreSQL holds it back and sends it with
    /// the next statement that is awaited, in one round trip, and throws its error there; SQLite
    /// runs it now.
    func enqueue(_ sql: String, _ args: [SQLValue]) throws
    /// Sends what `enqueue` held back and waits for it (where its error must be seen).
    func flush() throws
    /// The end of a write job's work: `flush`, and where the executor runs each job in a
    /// transaction of its own (PostgreSQL), its COMMIT in the same round trip — the executor then
    /// has nothing left to commit. SQLite's writer commits jobs in groups: only `flush` there.
    /// An error of a held-back statement skips the COMMIT, so the job's transaction is still open
    /// for the caller to take the job back (`undoJob`) and go on.
    func finishJob() throws
    /// A read the caller will make later in this transaction: PostgreSQL sends it with the next
    /// awaited statement and keeps the answer for the `query` of the same statement; SQLite does
    /// nothing (the `query` reads then, as usual).
    func prefetch(_ sql: String, _ args: [SQLValue])
    /// `query` with results in PostgreSQL's binary format (a `bytea` as its bytes, not hex);
    /// the same as `query` on SQLite.
    func queryBinary(_ sql: String, _ args: [SQLValue]) throws -> [Row]
    /// The end of a read transaction, whose answer changes nothing: PostgreSQL sends it without
    /// waiting (the answer is read before the connection's next statement); SQLite runs it now.
    func sendUnawaited(_ sql: String)
}

extension SQLConnection {
    func enqueue(_ sql: String, _ args: [SQLValue]) throws { try run(sql, args) }
    func flush() throws {}
    func finishJob() throws { try flush() }
    func prefetch(_ sql: String, _ args: [SQLValue]) {}
    func queryBinary(_ sql: String, _ args: [SQLValue]) throws -> [Row] { try query(sql, args) }
    func sendUnawaited(_ sql: String) { try? run(sql, []) }

    @discardableResult
    func query(_ sql: String) throws -> [Row] { try query(sql, []) }
    func run(_ sql: String) throws { try run(sql, []) }

    /// Transactions naming the same `key` run one after the other: the second waits here until
    /// the first has committed or rolled back. Only PostgreSQL needs it (several connections and
    /// processes write at once); SQLite's one writer already runs one transaction at a time.
    func takeTurn(_ key: String) throws {
        guard dialect == .postgres else { return }
        _ = try query("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [.text(key)])
    }

    /// The gate's read of an organization's subscription end, nil when there is no such
    /// organization. On PostgreSQL the row is locked `FOR SHARE`, so a renewal or expiry (an
    /// UPDATE of it) waits for every write that read it and the reverse. Row locks alone would let
    /// a steady stream of writes starve that UPDATE — a new share lock joins the ones held
    /// without queueing — so the read first takes the organization's advisory lock, shared, whose
    /// queue is fair: behind a waiting `holdOrganization` it waits its turn.
    func subscriptionEnd(orgId: String) throws -> Int64? {
        let (sql, args) = subscriptionEndStatement(orgId: orgId)
        return try query(sql, args).first?.int("expires_at")
    }

    /// `subscriptionEnd`'s read, sent with the transaction's next awaited statement (its locks
    /// are then taken there; `subscriptionEnd` later takes the answer).
    func prefetchSubscriptionEnd(orgId: String) {
        let (sql, args) = subscriptionEndStatement(orgId: orgId)
        prefetch(sql, args)
    }

    private func subscriptionEndStatement(orgId: String) -> (String, [SQLValue]) {
        dialect == .postgres
            ? ("SELECT expires_at FROM orgs WHERE org_id = ? AND pg_advisory_xact_lock_shared(\(AdvisoryLock.organization), hashtext(?)) IS NOT NULL FOR SHARE",
               [.text(orgId), .text(orgId)])
            : ("SELECT expires_at FROM orgs WHERE org_id = ?", [.text(orgId)])
    }

    /// Taken before a change of an organization's subscription: the writes that already read it
    /// finish first, the ones that come later wait until the change commits (`subscriptionEnd`).
    func holdOrganization(_ orgId: String) throws {
        guard dialect == .postgres else { return }
        _ = try query("SELECT pg_advisory_xact_lock(\(AdvisoryLock.organization), hashtext(?))", [.text(orgId)])
    }
}

/// The differences between the two engines' SQL at run time (the schema's are in `Migrations`).
/// SQLite's single writer already runs one transaction at a time, so what PostgreSQL needs to
/// order concurrent transactions (the helpers above) is nothing there.
enum SQLDialect: Sendable {
    case sqlite, postgres
}
