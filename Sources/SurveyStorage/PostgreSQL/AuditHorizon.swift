import Foundation
import SurveyDomain

/// The audit log read in commit order on PostgreSQL.
///
/// The log's sequence numbers are handed out when a transaction appends, not when it commits:
/// a reader could see entry 7 committed while entry 6 is still in flight, move its cursor past 6
/// and never see it (the changes feed and webhook cursors would lose events). On SQLite one
/// writer commits in sequence order, so this never happens there.
///
/// So every transaction that appends holds `AdvisoryLock.auditAppend` (shared) from before its
/// first entry until it ends. A reader that wants a cursor-safe view first reads the last number
/// handed out, then waits until every transaction it sees holding that lock has ended, and only
/// then takes its snapshot: every entry up to that number is by then committed (or rolled back
/// for good), because its transaction took the lock before taking the number, and PostgreSQL
/// makes a commit visible before it releases the transaction's locks. Entries past the horizon
/// are left for the next read.
enum AuditHorizon {
    /// The INSERT of a transaction's first audit entry (`WriteContext.audit`), which takes the
    /// lock in the same statement: the function in its FROM runs before the row is formed, so
    /// before the row's default `seq` takes its number. Its parameters: the entry's eight values,
    /// then `args`. Nil on SQLite, whose entries need no lock.
    static func firstEntry(_ dialect: SQLDialect) -> (sql: String, args: [SQLValue])? {
        guard dialect == .postgres else { return nil }
        // The casts: a NULL revision is sent without a type, and a SELECT list does not take
        // its type from the column it fills.
        return ("""
            INSERT INTO audit(org_id, actor, action, target_type, target_id, revision, detail, at)
            SELECT ?, ?, ?, ?, ?, CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS BIGINT) FROM pg_advisory_xact_lock_shared(?)
            """, [.int(AdvisoryLock.auditAppend)])
    }

    /// The highest sequence number a reader may go up to; outside any transaction, before the
    /// read's snapshot. Waits at most `timeout` for writers in flight (they are milliseconds long).
    static func settled(_ conn: any SQLConnection, timeout: TimeInterval = 10) throws -> Int64 {
        let last = try conn.query("SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS last FROM audit_seq_seq").first?.int("last") ?? 0
        let holders = """
            SELECT virtualtransaction FROM pg_locks
            WHERE locktype = 'advisory' AND classid::bigint = ? AND objid::bigint = ? AND objsubid = 1 AND granted
            """
        let key: [SQLValue] = [.int(AdvisoryLock.auditAppend >> 32), .int(AdvisoryLock.auditAppend & 0xFFFF_FFFF)]
        var waitingFor = Set(try conn.query(holders, key).map { try $0.string("virtualtransaction") })
        let deadline = Date().addingTimeInterval(timeout)
        while !waitingFor.isEmpty {
            guard Date() < deadline else {
                throw ApiError(.storageUnavailable, "A write to the audit log has been in flight for \(Int(timeout)) s; retry shortly.", retryAfterSeconds: 1)
            }
            usleep(500)
            waitingFor.formIntersection(try conn.query(holders, key).map { try $0.string("virtualtransaction") })
        }
        return last
    }
}
