import SurveyDomain

extension ReadContext {
    /// Every user of the organization (their names head an export's rows).
    public func users(orgId: String) throws -> [UserRecord] {
        try conn.query("SELECT \(UserRecord.columns) FROM users u WHERE u.org_id = ? ORDER BY u.user_id", [.text(orgId)]).map(UserRecord.init)
    }

    /// When the user was created (ODK Central's actor shows it).
    public func userCreatedAt(_ userId: String) throws -> Int64? {
        try conn.query("SELECT created_at FROM users WHERE user_id = ?", [.text(userId)]).first?.int("created_at")
    }

    public func user(_ userId: String) throws -> UserRecord? {
        try conn.query("SELECT \(UserRecord.columns) FROM users u WHERE u.user_id = ?", [.text(userId)]).first.map(UserRecord.init)
    }

    /// The live owner of a token hash: not revoked, and (for user tokens) an active user.
    /// The lookup is by the hash's index; the caller compares the hash again in constant time.
    public func tokenOwner(hash: [UInt8]) throws -> (owner: TokenOwner, storedHash: [UInt8])? {
        let rows = try conn.query(Self.tokenOwnerByHash, [.blob(hash)])
        guard let r = rows.first else { return nil }
        let isOperator = try r.bool("is_operator")
        // An operator token has no user: the joined user's columns are NULL.
        let user = try r.optionalString("user_id") == nil ? nil : try UserRecord(row: r)
        if !isOperator && user?.active != true { return nil }
        return (TokenOwner(tokenId: try r.string("token_id"), isOperator: isOperator, user: user), try r.blob("token_hash"))
    }

    /// `tokenOwner(hash:)` will be read later in this read: on PostgreSQL it goes with the read's
    /// next statement, in the same round trip (`SQLConnection.prefetch`).
    public func prefetchTokenOwner(hash: [UInt8]) {
        conn.prefetch(Self.tokenOwnerByHash, [.blob(hash)])
    }

    private static let tokenOwnerByHash = """
        SELECT t.token_id, t.is_operator, t.token_hash, \(UserRecord.columns)
        FROM tokens t LEFT JOIN users u ON u.user_id = t.user_id
        WHERE t.token_hash = ? AND t.revoked_at IS NULL
        """

    public func tokenBelongs(tokenId: String, userId: String) throws -> Bool {
        !(try conn.query("SELECT 1 FROM tokens WHERE token_id = ? AND user_id = ?", [.text(tokenId), .text(userId)]).isEmpty)
    }
}

extension SecurityTransaction {
    public func createUser(userId: String, orgId: String, name: String, roles: [String]) throws -> UserRecord {
        let actorId = try nextIntegerId("actor")
        try context.conn.run("INSERT INTO users(user_id, org_id, name, roles, active, created_at, actor_id) VALUES (?, ?, ?, ?, 1, ?, ?)",
                             [.text(userId), .text(orgId), .text(name), .text(roles.joined(separator: ",")), .int(now), .int(actorId)])
        try audit(action: "user.create", targetType: "user", targetId: userId, detail: "roles=\(roles.joined(separator: ","))")
        return UserRecord(userId: userId, orgId: orgId, name: name, roles: roles, active: true, actorId: actorId)
    }

    public func createToken(tokenId: String, hash: [UInt8], userId: String?) throws {
        try context.conn.run("INSERT INTO tokens(token_id, token_hash, user_id, is_operator, created_at) VALUES (?, ?, ?, ?, ?)",
                             [.text(tokenId), .blob(hash), .optional(userId), .bool(userId == nil), .int(now)])
        try audit(action: userId == nil ? "operator.token.create" : "token.create", targetType: "token", targetId: tokenId,
                  detail: userId.map { "user=\($0)" })
    }

    /// Revokes one token of a user; false (and nothing written, no audit entry) if it is not live.
    @discardableResult
    public func revokeToken(tokenId: String, userId: String) throws -> Bool {
        try context.conn.run("UPDATE tokens SET revoked_at = ? WHERE token_id = ? AND user_id = ? AND revoked_at IS NULL",
                             [.int(now), .text(tokenId), .text(userId)])
        guard context.conn.changes == 1 else { return false }
        try audit(action: "token.revoke", targetType: "token", targetId: tokenId, detail: "user=\(userId)")
        return true
    }

    /// Deactivates a user, revokes every token of theirs and ends their console sessions.
    public func deactivateUser(userId: String) throws {
        try context.conn.run("UPDATE users SET active = 0 WHERE user_id = ?", [.text(userId)])
        try context.conn.run("UPDATE tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL", [.int(now), .text(userId)])
        try context.conn.run("DELETE FROM console_sessions WHERE user_id = ?", [.text(userId)])
        try context.conn.run("DELETE FROM api_sessions WHERE user_id = ?", [.text(userId)])
        try audit(action: "user.deactivate", targetType: "user", targetId: userId)
    }

    public func setRoles(userId: String, roles: [String]) throws -> UserRecord? {
        try context.conn.run("UPDATE users SET roles = ? WHERE user_id = ?", [.text(roles.joined(separator: ",")), .text(userId)])
        try audit(action: "user.roles", targetType: "user", targetId: userId, detail: "roles=\(roles.joined(separator: ","))")
        return try read.user(userId)
    }
}
