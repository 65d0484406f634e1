import SurveyDomain
import SurveyStorage

/// Sessions of ODK Central's API (`POST /v1/sessions`): a console user's email and password,
/// checked by the console's own sign-in (same throttle, same one refusal for every wrong
/// credential), give a bearer token of that user on every API for 24 hours. Stored only as its
/// SHA-256. Never gated: signing in writes nothing of the organization's data.
public struct CentralSessions: Sendable {
    let operations: Operations
    public static let lifetimeMillis: Int64 = 24 * 3600 * 1000
    /// The `tokenId` a caller authenticated by such a session carries (audit and logs).
    public static let tokenId = "central-session"

    public struct Started: Sendable {
        public let token: String
        public let csrf: String
        public let createdAt: Int64
        public let expiresAt: Int64
    }

    public func signIn(email: String, password: String, from address: String) throws -> Started {
        let user = try operations.consoleSessions.verify(email: email, password: password, from: address)
        let token = "sds_" + Base64.encode(Digest.randomBytes(32), url: true)
        let csrf = Base64.encode(Digest.randomBytes(32), url: true)
        let hash = Tokens.hash(token)
        return try operations.database.sessionWrite { tx in
            try tx.deleteExpiredApiSessions()
            let expiresAt = tx.now + Self.lifetimeMillis
            try tx.createApiSession(hash: hash, userId: user.userId, csrfToken: csrf, expiresAt: expiresAt)
            return Started(token: token, csrf: csrf, createdAt: tx.now, expiresAt: expiresAt)
        }
    }

    /// Ends the session `token` of `caller` (a session's token names only its own user's
    /// sessions; any other is the 404 of one that does not exist).
    public func signOut(token: String, by caller: Caller) throws {
        guard let user = caller.user, token.utf8.count <= 512 else { throw ApiError.notFound() }
        let hash = Tokens.hash(token)
        let now = operations.clock.nowMillis()
        guard let session = try operations.database.read({ try $0.apiSession(hash: hash, now: now) }), session.user.userId == user.userId else {
            throw ApiError.notFound()
        }
        _ = try operations.database.sessionWrite { try $0.deleteApiSession(hash: hash) }
    }
}
