import Foundation
import SurveyDomain
import SurveyStorage

/// Users, roles and tokens. Never gated: an expired organization must still be able to lock
/// someone out. A revoked token or removed role counts from the very next request, because every
/// request authenticates against the database. The door admits the organization's admins and
/// operators.
public struct Users: Sendable {
    let operations: Operations

    /// A new user or token: the token is shown once, here, and stored only as its hash.
    public struct Issued: Sendable {
        public let user: UserRecord
        public let tokenId: String
        public let token: String
    }

    public func create(orgId: String, by caller: Caller, key: IdempotencyKey<Issued>? = nil,
                       _ request: () throws -> (name: String, roles: [String])) throws -> KeyedOutcome<Issued> {
        try operations.requireOperatorOrAdmin(caller, of: orgId)
        return try write(orgId: orgId, caller: caller, target: "", key: key, prepare: { () throws -> (String, [String]) in
            let r = try request()
            let roles = try Self.checked(roles: r.roles)
            return (try DisplayName.checked(r.name), roles)
        }) { prepared, tx in
            let (name, roles) = prepared
            let userId = Ids.make("usr", nowMillis: tx.now)
            let tokenId = Ids.make("tok", nowMillis: tx.now)
            let (token, hash) = Tokens.generate()
            let user = try tx.createUser(userId: userId, orgId: orgId, name: name, roles: roles)
            try tx.createToken(tokenId: tokenId, hash: hash, userId: userId)
            return Issued(user: user, tokenId: tokenId, token: token)
        }
    }

    public func createToken(orgId: String, userId: String, by caller: Caller, key: IdempotencyKey<Issued>? = nil) throws -> KeyedOutcome<Issued> {
        let user = try target(orgId, userId, by: caller)
        return try write(orgId: orgId, caller: caller, target: user.userId, key: key, prepare: {
            guard user.active else { throw ApiError(.validationFailed, "The user is deactivated.", errors: [FieldError(path: "userId", message: "deactivated")]) }
        }) { _, tx in
            let tokenId = Ids.make("tok", nowMillis: tx.now)
            let (token, hash) = Tokens.generate()
            try tx.createToken(tokenId: tokenId, hash: hash, userId: user.userId)
            return Issued(user: user, tokenId: tokenId, token: token)
        }
    }

    /// Revoking a token that is already revoked is a no-op: nothing written, no audit entry.
    public func revokeToken(orgId: String, userId: String, tokenId: String, by caller: Caller, key: IdempotencyKey<Done>? = nil) throws -> KeyedOutcome<Done> {
        let user = try target(orgId, userId, by: caller)
        guard try operations.database.read({ try $0.tokenBelongs(tokenId: tokenId, userId: user.userId) }) else { throw ApiError.notFound() }
        return try write(orgId: orgId, caller: caller, target: tokenId, key: key, prepare: {}) { _, tx in
            try tx.revokeToken(tokenId: tokenId, userId: user.userId)
            return Done()
        }
    }

    /// Ends every token of the user at once.
    public func deactivate(orgId: String, userId: String, by caller: Caller, key: IdempotencyKey<Done>? = nil) throws -> KeyedOutcome<Done> {
        let user = try target(orgId, userId, by: caller)
        return try write(orgId: orgId, caller: caller, target: user.userId, key: key, prepare: {}) { _, tx in
            try tx.deactivateUser(userId: user.userId)
            return Done()
        }
    }

    public func setRoles(orgId: String, userId: String, by caller: Caller, key: IdempotencyKey<UserRecord>? = nil,
                         _ roles: () throws -> [String]) throws -> KeyedOutcome<UserRecord> {
        let user = try target(orgId, userId, by: caller)
        return try write(orgId: orgId, caller: caller, target: user.userId, key: key, prepare: { try Self.checked(roles: try roles()) }) { roles, tx in
            try tx.setRoles(userId: user.userId, roles: roles) ?? user
        }
    }

    /// A user of this organization, else 404.
    private func target(_ orgId: String, _ userId: String, by caller: Caller) throws -> UserRecord {
        try operations.requireOperatorOrAdmin(caller, of: orgId)
        guard let user = try operations.database.read({ try $0.user(userId) }), user.orgId == orgId else { throw ApiError.notFound() }
        return user
    }

    private static func checked(roles: [String]) throws -> [String] {
        var errors: [FieldError] = []
        if roles.isEmpty { errors.append(FieldError(path: "roles", message: "at least one role")) }
        for (i, r) in roles.enumerated() where Role(rawValue: r) == nil {
            errors.append(FieldError(path: "roles[\(i)]", message: "unknown role; use admin, collector or reviewer"))
        }
        if Set(roles).count != roles.count { errors.append(FieldError(path: "roles", message: "a role is listed twice")) }
        guard errors.isEmpty else { throw ApiError(.validationFailed, "The roles are not valid.", errors: errors) }
        return roles
    }

    /// The org-scoped keyed security write every operation above makes.
    private func write<P: Sendable, V: Sendable>(orgId: String, caller: Caller, target: String, key: IdempotencyKey<V>?, prepare: () throws -> P,
                                                 _ write: @escaping @Sendable (P, SecurityTransaction) throws -> V) throws -> KeyedOutcome<V> {
        try operations.keyedSecurityWrite(scopeOrgId: orgId, orgId: { _ in orgId }, caller: caller.actorId, target: target, key: key,
                                          prepare: prepare, write: write)
    }
}
