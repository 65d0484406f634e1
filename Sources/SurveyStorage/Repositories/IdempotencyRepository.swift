import SurveyDomain

extension ReadContext {
    /// The answer stored under a key in its scope, if any.
    public func storedAnswer(_ s: IdempotencyScope) throws -> StoredAnswer? {
        try conn.query("""
            SELECT \(StoredAnswer.columns) FROM idempotency_keys
            WHERE org_id = ? AND caller = ? AND method = ? AND route = ? AND target = ? AND idempotency_key = ?
            """, [.text(s.orgId), .text(s.caller), .text(s.method), .text(s.route), .text(s.target), .text(s.key)]).first.map(StoredAnswer.init)
    }
}

extension GatedTransaction {
    /// Stores a successful answer under its key, in the write's own transaction: a refused or
    /// failed request never reaches here, so its key stays free.
    public func storeAnswer(_ s: IdempotencyScope, _ answer: StoredAnswer) throws { try context.storeAnswer(s, answer) }
}

extension SecurityTransaction {
    /// The same for the writes that are never gated (users, tokens, roles, organizations).
    public func storeAnswer(_ s: IdempotencyScope, _ answer: StoredAnswer) throws { try context.storeAnswer(s, answer) }
}

extension WriteContext {
    func storeAnswer(_ s: IdempotencyScope, _ answer: StoredAnswer) throws {
        try conn.run("""
            INSERT INTO idempotency_keys(org_id, caller, method, route, target, idempotency_key, request_digest, status, location, body, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(s.orgId), .text(s.caller), .text(s.method), .text(s.route), .text(s.target), .text(s.key), .text(s.digest),
                  .int(Int64(answer.status)), .optional(answer.location), .blob(answer.body), .int(now)])
    }
}

extension Database {
    /// Housekeeping, not a survey-domain write: forgets keys older than the retention period.
    @discardableResult
    public func purgeIdempotencyKeys(olderThan cutoff: Int64) throws -> Int {
        try writer.submit { conn in
            try conn.run("DELETE FROM idempotency_keys WHERE created_at < ?", [.int(cutoff)])
            return conn.changes
        }
    }
}
