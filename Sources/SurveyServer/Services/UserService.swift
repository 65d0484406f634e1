import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// Users, roles and tokens. Never gated: an expired organization must still be able to lock
/// someone out. A revoked token or removed role counts from the very next request, because every
/// request authenticates against the database.
struct UserService {
    let services: Services

    func register(into router: inout Router) {
        // The org's admins, or an operator (that is how an organization gets its first admin).
        let admins = Access.memberOrOperator(anyOf: [.admin])
        services.route(&router, "POST", "/v1/orgs/{orgId}/users", admins, createUser)
        services.route(&router, "POST", "/v1/orgs/{orgId}/users/{userId}/tokens", admins, createToken)
        services.route(&router, "DELETE", "/v1/orgs/{orgId}/users/{userId}/tokens/{tokenId}", admins, revokeToken)
        services.route(&router, "DELETE", "/v1/orgs/{orgId}/users/{userId}", admins, deactivateUser)
        services.route(&router, "PUT", "/v1/orgs/{orgId}/users/{userId}/roles", admins, setRoles)
    }

    static func userJSON(_ u: UserRecord) -> [String: JSONValue] {
        ["userId": .string(u.userId), "name": .string(u.name), "roles": .array(u.roles.map { .string($0) }), "active": .bool(u.active)]
    }

    /// A user of this organization, else 404.
    private func target(_ orgId: String, _ userId: String) throws -> UserRecord {
        guard let user = try services.database.read({ try $0.user(userId) }), user.orgId == orgId else { throw ApiError.notFound() }
        return user
    }

    private func roles(_ body: JSONBody) throws -> [String] {
        let roles = try body.stringArray("roles")
        var errors: [FieldError] = []
        if roles.isEmpty { errors.append(FieldError(path: "roles", message: "at least one role")) }
        for (i, r) in roles.enumerated() where Role(rawValue: r) == nil {
            errors.append(FieldError(path: "roles[\(i)]", message: "unknown role; use admin, collector or reviewer"))
        }
        if Set(roles).count != roles.count { errors.append(FieldError(path: "roles", message: "a role is listed twice")) }
        guard errors.isEmpty else { throw ApiError(.validationFailed, "The roles are not valid.", errors: errors) }
        return roles
    }

    /// The org-scoped keyed write every handler below makes.
    private func write<P: Sendable>(_ request: HTTPRequest, orgId: String, caller: Caller, target: String, prepare: () throws -> P,
                                    _ write: @escaping @Sendable (P, SecurityTransaction) throws -> HTTPResponse) throws -> HTTPResponse {
        try services.keyedSecurityWrite(request, scopeOrgId: orgId, orgId: { _ in orgId }, caller: caller.actorId, target: target,
                                        prepare: prepare, write: write)
    }

    func createUser(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let caller = context.caller
        return try write(request, orgId: orgId, caller: caller, target: "", prepare: { () throws -> (String, [String]) in
            let body = try JSONBody(request)
            let name = try body.string("name")
            let roles = try roles(body)
            guard !name.isEmpty, name.count <= 200 else {
                throw ApiError(.validationFailed, "`name` must be 1 to 200 characters.", errors: [FieldError(path: "name", message: "1 to 200 characters")])
            }
            return (name, roles)
        }) { (prepared, tx) in
            let (name, roles) = prepared
            let userId = Ids.make("usr", nowMillis: tx.now)
            let tokenId = Ids.make("tok", nowMillis: tx.now)
            let (token, hash) = Tokens.generate()
            let user = try tx.createUser(userId: userId, orgId: orgId, name: name, roles: roles)
            try tx.createToken(tokenId: tokenId, hash: hash, userId: userId)
            var out = Self.userJSON(user)
            out["tokenId"] = .string(tokenId)
            out["token"] = .string(token)
            return .created("/v1/orgs/\(orgId)/users/\(userId)", .object(out))
        }
    }

    func createToken(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let caller = context.caller
        let user = try target(orgId, request.parameter("userId"))
        return try write(request, orgId: orgId, caller: caller, target: user.userId, prepare: {
            guard user.active else { throw ApiError(.validationFailed, "The user is deactivated.", errors: [FieldError(path: "userId", message: "deactivated")]) }
        }) { _, tx in
            let tokenId = Ids.make("tok", nowMillis: tx.now)
            let (token, hash) = Tokens.generate()
            try tx.createToken(tokenId: tokenId, hash: hash, userId: user.userId)
            return .created("/v1/orgs/\(orgId)/users/\(user.userId)/tokens/\(tokenId)", ["tokenId": .string(tokenId), "token": .string(token)])
        }
    }

    /// Revoking a token that is already revoked is a no-op: 204, nothing written, no audit entry.
    func revokeToken(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let caller = context.caller
        let user = try target(orgId, request.parameter("userId"))
        let tokenId = request.parameter("tokenId")
        guard try services.database.read({ try $0.tokenBelongs(tokenId: tokenId, userId: user.userId) }) else { throw ApiError.notFound() }
        return try write(request, orgId: orgId, caller: caller, target: tokenId, prepare: {}) { _, tx in
            try tx.revokeToken(tokenId: tokenId, userId: user.userId)
            return HTTPResponse(status: 204)
        }
    }

    func deactivateUser(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let caller = context.caller
        let user = try target(orgId, request.parameter("userId"))
        return try write(request, orgId: orgId, caller: caller, target: user.userId, prepare: {}) { _, tx in
            try tx.deactivateUser(userId: user.userId)
            return HTTPResponse(status: 204)
        }
    }

    func setRoles(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let caller = context.caller
        let user = try target(orgId, request.parameter("userId"))
        return try write(request, orgId: orgId, caller: caller, target: user.userId, prepare: { try roles(try JSONBody(request)) }) { roles, tx in
            let updated = try tx.setRoles(userId: user.userId, roles: roles)
            return .json(200, .object(Self.userJSON(updated ?? user)))
        }
    }
}
