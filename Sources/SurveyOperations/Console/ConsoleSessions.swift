import Foundation
import SurveyDomain
import SurveyStorage

/// Console sign-in and sessions. A session id is 256 random bits in a cookie, stored only as its
/// SHA-256; it ends after 12 hours idle or 7 days in all, at sign-out, when the user's password
/// changes or the user is deactivated, and (for a token sign-in) when the token is revoked.
/// The user is read again on every request, so a role change applies on the next page.
public struct ConsoleSessions: Sendable {
    let operations: Operations
    public static let idleMillis: Int64 = 12 * 3600 * 1000
    public static let absoluteMillis: Int64 = 7 * 24 * 3600 * 1000

    public struct Started: Sendable {
        public let sessionId: String
        public let caller: Caller
    }

    public struct Session: Sendable {
        public let caller: Caller
        public let csrfToken: String
    }

    static let wrong = ApiError(.unauthenticated, "The email address or the password is not right.")

    /// Email and password. An unknown email, a wrong password, a deactivated user and a user
    /// without a password all answer the same, after the same work.
    public func signIn(email raw: String, password: String, from address: String) throws -> Started {
        let user = try verify(email: raw, password: password, from: address)
        return try start(.user(user, tokenId: "console"), userId: user.userId, tokenId: nil)
    }

    /// The user of this email and password, counted by the sign-in throttle: every sign-in by
    /// password (the console's, ODK Central API's sessions) runs this one check.
    public func verify(email raw: String, password: String, from address: String) throws -> UserRecord {
        let email = raw.trimmingCharacters(in: .whitespaces).lowercased()
        let keys = ["account:" + email, "address:" + address]
        // Counted before the password is checked: concurrent guesses cannot all get in.
        let attempt = try operations.throttle.begin(keys, now: operations.clock.nowMillis())
        let account: ConsoleAccount?
        let verified: Bool
        do {
            account = email.isEmpty || password.utf8.count > Passwords.maximumLength ? nil
                : try operations.database.read { try $0.consoleAccount(email: email) }
            verified = try operations.passwordChecks.run { Passwords.verify(password, account?.passwordHash ?? Passwords.decoy) }
        } catch {
            operations.throttle.succeeded(attempt)  // never checked: it does not count
            throw error
        }
        guard let account, account.passwordHash != nil, verified, account.user.active else { throw Self.wrong }
        operations.throttle.succeeded(attempt)
        return account.user
    }

    /// An API token (operators, and anyone who has one).
    public func signIn(token: String, from address: String) throws -> Started {
        let attempt = try operations.throttle.begin(["address:" + address], now: operations.clock.nowMillis())
        let caller: Caller
        do {
            caller = try operations.authenticate(bearerToken: token.trimmingCharacters(in: .whitespaces))
        } catch let e as ApiError where e.code == .unauthenticated {
            throw ApiError(.unauthenticated, "The API token is unknown or revoked.")
        } catch {
            operations.throttle.succeeded(attempt)
            throw error
        }
        operations.throttle.succeeded(attempt)
        switch caller {
        case .operatorToken(let tokenId): return try start(caller, userId: nil, tokenId: tokenId)
        case .user(let user, let tokenId): return try start(caller, userId: user.userId, tokenId: tokenId)
        }
    }

    private func start(_ caller: Caller, userId: String?, tokenId: String?) throws -> Started {
        let id = "ses_" + Base64.encode(Digest.randomBytes(32), url: true)
        let csrf = Base64.encode(Digest.randomBytes(32), url: true)
        let hash = Tokens.hash(id)
        try operations.database.sessionWrite { tx in
            try tx.deleteExpiredSessions(idleBefore: tx.now - Self.idleMillis, createdBefore: tx.now - Self.absoluteMillis)
            try tx.createSession(hash: hash, userId: userId, tokenId: tokenId, csrfToken: csrf)
        }
        return Started(sessionId: id, caller: caller)
    }

    /// The live session of this id, its user read afresh; nil when there is none (any more).
    public func session(_ id: String) throws -> Session? {
        guard id.hasPrefix("ses_"), id.utf8.count < 100 else { return nil }
        let hash = Tokens.hash(id)
        guard let s = try operations.database.read({ try $0.consoleSession(hash: hash) }) else { return nil }
        let now = operations.clock.nowMillis()
        guard s.seenAt > now - Self.idleMillis, s.createdAt > now - Self.absoluteMillis else { return nil }
        if s.seenAt < now - 60_000 {  // idle time counted to the minute: not a write per page
            try operations.database.sessionWrite { try $0.touchSession(hash: hash) }
        }
        if let user = s.user { return Session(caller: .user(user, tokenId: s.tokenId ?? "console"), csrfToken: s.csrfToken) }
        guard let tokenId = s.tokenId else { return nil }
        return Session(caller: .operatorToken(tokenId: tokenId), csrfToken: s.csrfToken)
    }

    public func signOut(_ id: String) throws {
        let hash = Tokens.hash(id)
        try operations.database.sessionWrite { try $0.deleteSession(hash: hash) }
    }
}
