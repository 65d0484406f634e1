import SurveyDomain
import SurveyStorage

/// The first two checks of every operation: who is calling (1007), then whether they may see the
/// organization at all (anyone not of it gets the 404 of a thing that does not exist) and hold
/// the role the operation needs (1006).
extension Operations {
    /// Step 1: a bearer token → a caller (1007 for missing, unknown or revoked).
    public func authenticate(bearerToken: String?) throws -> Caller {
        try database.read { try authenticate(bearerToken: bearerToken, in: $0) }
    }

    /// `authenticate` within a read the caller is already making.
    public func authenticate(bearerToken: String?, in db: ReadContext) throws -> Caller {
        try authenticate(tokenHash: Self.tokenHash(bearerToken), in: db)
    }

    /// The same for a token already hashed by `tokenHash` (a door that also prefetched its owner).
    func authenticate(tokenHash hash: [UInt8]?, in db: ReadContext) throws -> Caller {
        guard let hash else { throw ApiError(.unauthenticated, "A bearer token is required.") }
        guard let found = try db.tokenOwner(hash: hash), Digest.constantTimeEqual(found.storedHash, hash) else {
            // Not an API token: a session of ODK Central's API (`POST /v1/sessions`) is a bearer
            // token on every API too, its user read afresh.
            if let session = try db.apiSession(hash: hash, now: clock.nowMillis()) {
                return .user(session.user, tokenId: CentralSessions.tokenId)
            }
            throw ApiError(.unauthenticated, "The token is unknown or revoked.")
        }
        if found.owner.isOperator { return .operatorToken(tokenId: found.owner.tokenId) }
        // `tokenOwner` answers only operators and active users; a row that were neither is refused.
        guard let user = found.owner.user else { throw ApiError(.unauthenticated, "The token is unknown or revoked.") }
        return .user(user, tokenId: found.owner.tokenId)
    }

    /// The hash a token is stored under, or nil for no token worth looking up (empty, or over
    /// 512 bytes).
    static func tokenHash(_ token: String?) -> [UInt8]? {
        guard let token, !token.isEmpty, token.utf8.count <= 512 else { return nil }
        return Tokens.hash(token)
    }

    /// Step 2: a user of this organization holding one of `roles` (none listed: any role).
    public func member(_ caller: Caller, of orgId: String, withAnyOf roles: [Role] = []) throws -> UserRecord {
        guard let user = caller.user else { throw ApiError.notFound() }
        return try member(user, of: orgId, withAnyOf: roles)
    }

    /// The same for a user a door has already resolved. Every operation that takes a user runs
    /// it again: a door that forgot a check cannot open another organization's data.
    @discardableResult
    public func member(_ user: UserRecord, of orgId: String, withAnyOf roles: [Role] = []) throws -> UserRecord {
        guard user.orgId == orgId, user.active else { throw ApiError.notFound() }
        guard roles.isEmpty || roles.contains(where: { user.has($0) }) else {
            throw ApiError(.forbidden, "This needs the role \(roles.map(\.rawValue).joined(separator: " or ")).")
        }
        return user
    }

    public func requireOperator(_ caller: Caller) throws {
        guard caller.isOperator else { throw ApiError(.forbidden, "Only an operator may do this.") }
    }

    /// An operator, or an admin of this organization (who manages its users).
    func requireOperatorOrAdmin(_ caller: Caller, of orgId: String) throws {
        if caller.isOperator { return }
        _ = try member(caller, of: orgId, withAnyOf: [.admin])
    }
}
