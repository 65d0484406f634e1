import SurveyDomain

/// A session of ODK Central's API as read back: its user (active) and its times.
public struct ApiSessionRecord: Sendable {
    public let user: UserRecord
    public let csrfToken: String
    public let createdAt: Int64
    public let expiresAt: Int64
}

extension ReadContext {
    /// The live session of this token hash: not expired at `now`, its user active.
    public func apiSession(hash: [UInt8], now: Int64) throws -> ApiSessionRecord? {
        let rows = try conn.query("""
            SELECT s.csrf_token, s.created_at, s.expires_at, \(UserRecord.columns)
            FROM api_sessions s JOIN users u ON u.user_id = s.user_id
            WHERE s.session_hash = ? AND s.expires_at > ? AND u.active = 1
            """, [.blob(hash), .int(now)])
        guard let r = rows.first else { return nil }
        return ApiSessionRecord(user: try UserRecord(row: r), csrfToken: try r.string("csrf_token"), createdAt: try r.int("created_at"),
                                expiresAt: try r.int("expires_at"))
    }
}

/// Sessions of ODK Central's API are bookkeeping like the console's: neither gated nor audited.
extension SessionTransaction {
    public func createApiSession(hash: [UInt8], userId: String, csrfToken: String, expiresAt: Int64) throws {
        try conn.run("INSERT INTO api_sessions(session_hash, user_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                     [.blob(hash), .text(userId), .text(csrfToken), .int(now), .int(expiresAt)])
    }

    /// False when there was no such session.
    @discardableResult
    public func deleteApiSession(hash: [UInt8]) throws -> Bool {
        try conn.run("DELETE FROM api_sessions WHERE session_hash = ?", [.blob(hash)])
        return conn.changes == 1
    }

    public func deleteExpiredApiSessions() throws {
        try conn.run("DELETE FROM api_sessions WHERE expires_at <= ?", [.int(now)])
    }
}
