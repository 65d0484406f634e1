import Foundation
import SurveyDomain
import SurveyStorage

/// Invitations: how a user gets an email and a console password. An admin of the organization
/// (or an operator) invites — never gated, like all user management — and the one-time link
/// lets the user set a password within 7 days; a newer invitation voids older ones.
public struct Invitations: Sendable {
    let operations: Operations
    public static let lifetimeMillis: Int64 = 7 * 24 * 3600 * 1000

    public struct Issued: Sendable {
        public let user: UserRecord
        public let email: String
        /// The secret of the link (shown once; stored only as its SHA-256).
        public let token: String
        public let expiresAt: Int64
    }

    public func invite(orgId: String, userId: String, by caller: Caller, key: IdempotencyKey<Issued>? = nil,
                       email: () throws -> String) throws -> KeyedOutcome<Issued> {
        try operations.requireOperatorOrAdmin(caller, of: orgId)
        guard let user = try operations.database.read({ try $0.user(userId) }), user.orgId == orgId else { throw ApiError.notFound() }
        return try operations.keyedSecurityWrite(scopeOrgId: orgId, orgId: { _ in orgId }, caller: caller.actorId, target: userId, key: key,
                                                 prepare: { () throws -> String in
            guard user.active else { throw ApiError(.validationFailed, "The user is deactivated.", errors: [FieldError(path: "userId", message: "deactivated")]) }
            return try Self.checked(email: try email())
        }) { email, tx in
            guard try tx.setEmail(userId: userId, email: email) else {
                throw ApiError(.validationFailed, "Another user has this email address.", errors: [FieldError(path: "email", message: "already in use")])
            }
            let token = "inv_" + Base64.encode(Digest.randomBytes(32), url: true)
            let expiresAt = tx.now + Self.lifetimeMillis
            try tx.createInvitation(userId: userId, hash: Tokens.hash(token), expiresAt: expiresAt, email: email)
            return Issued(user: user, email: email, token: token, expiresAt: expiresAt)
        }
    }

    /// The user an open invitation is for (nil: unknown, used, voided or expired).
    public func open(token: String) throws -> (user: UserRecord, email: String)? {
        guard token.utf8.count <= 200 else { return nil }
        let now = operations.clock.nowMillis()
        return try operations.database.read { try $0.openInvitation(hash: Tokens.hash(token), now: now) }
    }

    /// Sets the password through the invitation, once. Ends every session the user had.
    public func accept(token: String, password: String) throws -> UserRecord {
        try Passwords.check(password)
        guard let (user, _) = try open(token: token) else { throw Self.gone }
        let hashed = try operations.passwordChecks.run { try Passwords.hash(password) }
        let hash = Tokens.hash(token)
        let accepted = try operations.database.securityWrite(orgId: user.orgId, actor: user.userId) { tx in
            try tx.acceptInvitation(hash: hash, userId: user.userId, passwordHash: hashed)
        }
        guard accepted else { throw Self.gone }
        return user
    }

    static let gone = ApiError(.notFound, "This invitation link has been used, replaced by a newer one, or has expired.")

    /// The address an invitation would set, checked before anything else is created (a console
    /// form that adds a user or an organization with an email): 422 when it is not an address
    /// or another user already holds it.
    public func checkAvailable(email: String) throws -> String {
        let email = try Self.checked(email: email)
        if try operations.database.read({ try $0.consoleAccount(email: email) }) != nil {
            throw ApiError(.validationFailed, "Another user has this email address.", errors: [FieldError(path: "email", message: "already in use")])
        }
        return email
    }

    /// Lowercased; a plausible address (something@something.something, no spaces), at most 254 bytes.
    static func checked(email raw: String) throws -> String {
        let email = raw.trimmingCharacters(in: .whitespaces).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."),
              !parts[1].hasSuffix("."), !email.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw ApiError(.validationFailed, "The email address is not valid.", errors: [FieldError(path: "email", message: "an email address")])
        }
        return email
    }
}
