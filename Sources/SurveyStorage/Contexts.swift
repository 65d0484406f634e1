import SurveyDomain

/// Reads, on a pooled reader or inside a write transaction.
public struct ReadContext {
    let conn: any SQLConnection
    /// The last audit entry this read may follow a cursor up to (`AuditHorizon`): nil when every
    /// entry it can see is in commit order already (SQLite, or a read that moves no cursor).
    let auditHorizon: Int64?
    init(_ conn: any SQLConnection, auditHorizon: Int64? = nil) {
        self.conn = conn
        self.auditHorizon = auditHorizon
    }
}

/// What every write transaction carries: the writer's connection, the organization and actor it
/// acts for, server time, and whether an audit entry has been appended.
final class WriteContext {
    let conn: any SQLConnection
    let orgId: String
    let actor: String
    let now: Int64
    let undo: UndoLog
    private(set) var audited = false

    init(_ conn: any SQLConnection, orgId: String, actor: String, now: Int64, undo: UndoLog = UndoLog()) {
        self.conn = conn
        self.undo = undo
        self.orgId = orgId
        self.actor = actor
        self.now = now
    }

    /// Appends the entry. It is sent with the transaction's next awaited statement (its only
    /// news would be a failure, thrown there); the first entry of a transaction on PostgreSQL also
    /// enters the audit horizon in the same statement (`AuditHorizon.firstEntry`).
    func audit(action: String, targetType: String, targetId: String, revision: Int64?, detail: String?) throws {
        let values: [SQLValue] = [.text(orgId), .text(actor), .text(action), .text(targetType), .text(targetId),
                                  .optional(revision), .optional(detail), .int(now)]
        if !audited, let first = AuditHorizon.firstEntry(conn.dialect) {
            try conn.enqueue(first.sql, values + first.args)
        } else {
            try conn.enqueue("""
                INSERT INTO audit(org_id, actor, action, target_type, target_id, revision, detail, at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, values)
        }
        audited = true
    }

    func requireAudit() throws {
        guard audited else { throw ApiError(.internalError, "A write without its audit entry was refused.") }
    }
}

/// The writes the contract never gates: an expired organization must still be able to lock
/// someone out, and operators must be able to renew. Audited like every write.
public struct SecurityTransaction {
    let context: WriteContext
    init(_ context: WriteContext) { self.context = context }
    public var now: Int64 { context.now }
    public var read: ReadContext { ReadContext(context.conn) }
    /// False when the action turned out to be a no-op (it changed nothing, so it wrote nothing).
    public var changedSomething: Bool { context.audited }

    public func audit(action: String, targetType: String, targetId: String, detail: String? = nil) throws {
        try context.audit(action: action, targetType: targetType, targetId: targetId, revision: nil, detail: detail)
    }
}
