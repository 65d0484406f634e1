import SurveyDomain

/// A console sign-in's account: the user an email belongs to, with the stored password string.
public struct ConsoleAccount: Sendable {
    public let user: UserRecord
    public let email: String
    /// The Argon2id string, nil until the user has set a password through an invitation.
    public let passwordHash: String?
}

extension ConsoleAccount {
    static let columns = "\(UserRecord.columns), u.email, u.password_hash"
    init(row: Row) throws {
        self.init(user: try UserRecord(row: row), email: try row["email"], passwordHash: try row["password_hash"])
    }
}

/// A live console session as a request finds it.
public struct ConsoleSessionRecord: Sendable {
    /// The signed-in user; nil for an operator who signed in with an operator token.
    public let user: UserRecord?
    /// The token a session signed in with, if it did: the session ends when the token is revoked.
    public let tokenId: String?
    public let csrfToken: String
    public let createdAt: Int64
    public let seenAt: Int64
}

extension ConsoleSessionRecord {
    /// The sessions table as `s`; the user is read beside it (`consoleSession(hash:)`).
    static let columns = "s.token_id, s.csrf_token, s.created_at, s.seen_at"
    init(row: Row, user: UserRecord?) throws {
        self.init(user: user, tokenId: try row["token_id"], csrfToken: try row["csrf_token"], createdAt: try row["created_at"],
                  seenAt: try row["seen_at"])
    }
}

extension ReadContext {
    /// The account of an email (lowercased by the caller), active or not.
    public func consoleAccount(email: String) throws -> ConsoleAccount? {
        try conn.query("SELECT \(ConsoleAccount.columns) FROM users u WHERE u.email = ?", [.text(email)]).first.map(ConsoleAccount.init)
    }

    public func email(userId: String) throws -> String? {
        try conn.query("SELECT email FROM users WHERE user_id = ?", [.text(userId)]).first?.optionalString("email")
    }

    /// An invitation that can still be used: not used, not voided, not expired at `now`.
    public func openInvitation(hash: [UInt8], now: Int64) throws -> (user: UserRecord, email: String)? {
        guard let r = try conn.query("""
            SELECT \(UserRecord.columns), u.email FROM invitations i JOIN users u ON u.user_id = i.user_id
            WHERE i.token_hash = ? AND i.used_at IS NULL AND i.expires_at > ?
            """, [.blob(hash), .int(now)]).first else { return nil }
        return (try UserRecord(row: r), try r.string("email"))
    }

    /// A session by its hash, with the user (or operator token) it belongs to — nil when the
    /// user is deactivated or the token it signed in with is revoked.
    public func consoleSession(hash: [UInt8]) throws -> ConsoleSessionRecord? {
        guard let r = try conn.query("""
            SELECT \(ConsoleSessionRecord.columns), t.revoked_at, s.user_id AS session_user_id, \(UserRecord.columns)
            FROM console_sessions s LEFT JOIN users u ON u.user_id = s.user_id LEFT JOIN tokens t ON t.token_id = s.token_id
            WHERE s.session_hash = ?
            """, [.blob(hash)]).first else { return nil }
        if try r.optionalString("token_id") != nil, try r.optionalInt("revoked_at") != nil { return nil }
        var user: UserRecord?
        if try r.optionalString("session_user_id") != nil {
            guard try r.optionalString("user_id") != nil else { return nil }  // the user's columns are NULL: the user is gone
            user = try UserRecord(row: r)
            guard user?.active == true else { return nil }
        }
        return try ConsoleSessionRecord(row: r, user: user)
    }
}

extension SecurityTransaction {
    /// Sets the user's email; false when another user holds it.
    public func setEmail(userId: String, email: String) throws -> Bool {
        if let holder = try context.conn.query("SELECT user_id FROM users WHERE email = ?", [.text(email)]).first?.string("user_id"), holder != userId {
            return false
        }
        try context.conn.run("UPDATE users SET email = ? WHERE user_id = ?", [.text(email), .text(userId)])
        return true
    }

    /// A new invitation for the user; every older one of theirs is voided.
    public func createInvitation(userId: String, hash: [UInt8], expiresAt: Int64, email: String) throws {
        try context.conn.run("UPDATE invitations SET used_at = ? WHERE user_id = ? AND used_at IS NULL", [.int(now), .text(userId)])
        try context.conn.run("INSERT INTO invitations(token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                             [.blob(hash), .text(userId), .int(now), .int(expiresAt)])
        try audit(action: "user.invite", targetType: "user", targetId: userId, detail: "email=\(email)")
    }

    /// Uses the invitation (once) and sets the password; every session of the user ends.
    /// False when the invitation is no longer open.
    public func acceptInvitation(hash: [UInt8], userId: String, passwordHash: String) throws -> Bool {
        try context.conn.run("UPDATE invitations SET used_at = ? WHERE token_hash = ? AND user_id = ? AND used_at IS NULL AND expires_at > ?",
                             [.int(now), .blob(hash), .text(userId), .int(now)])
        guard context.conn.changes == 1 else { return false }
        try context.conn.run("UPDATE users SET password_hash = ? WHERE user_id = ?", [.text(passwordHash), .text(userId)])
        try context.conn.run("DELETE FROM console_sessions WHERE user_id = ?", [.text(userId)])
        try context.conn.run("DELETE FROM api_sessions WHERE user_id = ?", [.text(userId)])
        try audit(action: "user.password", targetType: "user", targetId: userId)
        return true
    }
}

/// Console session bookkeeping: not data of the organization, so neither gated nor audited
/// (a sign-in is logged; the actions taken in a session are audited as the signed-in user's).
public struct SessionTransaction {
    let conn: any SQLConnection
    public let now: Int64

    public func createSession(hash: [UInt8], userId: String?, tokenId: String?, csrfToken: String) throws {
        try conn.run("INSERT INTO console_sessions(session_hash, user_id, token_id, csrf_token, created_at, seen_at) VALUES (?, ?, ?, ?, ?, ?)",
                     [.blob(hash), .optional(userId), .optional(tokenId), .text(csrfToken), .int(now), .int(now)])
    }

    public func touchSession(hash: [UInt8]) throws {
        try conn.run("UPDATE console_sessions SET seen_at = ? WHERE session_hash = ?", [.int(now), .blob(hash)])
    }

    public func deleteSession(hash: [UInt8]) throws {
        try conn.run("DELETE FROM console_sessions WHERE session_hash = ?", [.blob(hash)])
    }

    /// Sessions past their idle or absolute limit.
    public func deleteExpiredSessions(idleBefore: Int64, createdBefore: Int64) throws {
        try conn.run("DELETE FROM console_sessions WHERE seen_at < ? OR created_at < ?", [.int(idleBefore), .int(createdBefore)])
    }
}

extension Database {
    /// A console session write (see `SessionTransaction`).
    public func sessionWrite<T: Sendable>(_ body: @escaping @Sendable (SessionTransaction) throws -> T) throws -> T {
        let clock = self.clock
        return try writer.submit { conn in try body(SessionTransaction(conn: conn, now: clock.nowMillis())) }
    }
}

/// A token as the console's user page lists it (never its secret).
public struct TokenSummary: Sendable {
    public let tokenId: String
    public let createdAt: Int64
    public let revokedAt: Int64?
}

extension TokenSummary {
    static let columns = "token_id, created_at, revoked_at"
    init(row: Row) throws {
        self.init(tokenId: try row["token_id"], createdAt: try row["created_at"], revokedAt: try row["revoked_at"])
    }
}

extension ReadContext {
    public func tokens(userId: String) throws -> [TokenSummary] {
        try conn.query("SELECT \(TokenSummary.columns) FROM tokens WHERE user_id = ? ORDER BY created_at", [.text(userId)])
            .map(TokenSummary.init)
    }

    /// The organization's users with their console email, by name.
    public func usersWithEmail(orgId: String) throws -> [(user: UserRecord, email: String?)] {
        try conn.query("SELECT \(UserRecord.columns), u.email FROM users u WHERE u.org_id = ? ORDER BY u.name", [.text(orgId)]).map {
            (try UserRecord(row: $0), try $0.optionalString("email"))
        }
    }
}
