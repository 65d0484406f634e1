import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The API's door onto users, roles and tokens (`Users`).
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
        services.route(&router, "POST", "/v1/orgs/{orgId}/users/{userId}/invitations", admins, invite)
    }

    /// A one-time console link for the user, who sets a password on the page it opens. The
    /// link's host is the one this request came to (`X-Forwarded-Proto: https` from a trusted TLS proxy
    /// makes it https).
    func invite(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let base = request.origin
        let render: @Sendable (Invitations.Issued) -> HTTPResponse = {
            .json(201, ["invitationUrl": .string(base + "/console/invitations/" + $0.token), "expiresAt": .string(Timestamp.format($0.expiresAt)),
                        "email": .string($0.email), "userId": .string($0.user.userId)])
        }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.invitations.invite(orgId: context.orgId, userId: request.parameter("userId"), by: context.caller,
                                                                 key: keyed.key) {
            try JSONBody(request.body).string("email")
        }
        return try keyed.answer(outcome)
    }

    static func userJSON(_ u: UserRecord) -> [String: JSONValue] {
        ["userId": .string(u.userId), "actorId": .number(Double(u.actorId)), "name": .string(u.name), "roles": .array(u.roles.map { .string($0) }), "active": .bool(u.active)]
    }

    func createUser(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId
        let render: @Sendable (Users.Issued) -> HTTPResponse = { issued in
            var out = Self.userJSON(issued.user)
            out["tokenId"] = .string(issued.tokenId)
            out["token"] = .string(issued.token)
            return .created("/v1/orgs/\(orgId)/users/\(issued.user.userId)", .object(out))
        }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.users.create(orgId: orgId, by: context.caller, key: keyed.key) {
            let body = try JSONBody(request.body)
            return (name: try body.string("name"), roles: try body.stringArray("roles"))
        }
        return try keyed.answer(outcome)
    }

    func createToken(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId
        let render: @Sendable (Users.Issued) -> HTTPResponse = {
            .created("/v1/orgs/\(orgId)/users/\($0.user.userId)/tokens/\($0.tokenId)", ["tokenId": .string($0.tokenId), "token": .string($0.token)])
        }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.users.createToken(orgId: orgId, userId: request.parameter("userId"), by: context.caller,
                                                                key: keyed.key)
        return try keyed.answer(outcome)
    }

    /// Revoking a token that is already revoked is a no-op: 204, nothing written, no audit entry.
    func revokeToken(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request, Self.noContent)
        let outcome = try services.operations.users.revokeToken(orgId: context.orgId, userId: request.parameter("userId"),
                                                                tokenId: request.parameter("tokenId"), by: context.caller,
                                                                key: keyed.key)
        return try keyed.answer(outcome)
    }

    func deactivateUser(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request, Self.noContent)
        let outcome = try services.operations.users.deactivate(orgId: context.orgId, userId: request.parameter("userId"), by: context.caller,
                                                               key: keyed.key)
        return try keyed.answer(outcome)
    }

    func setRoles(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let render: @Sendable (UserRecord) -> HTTPResponse = { .json(200, .object(Self.userJSON($0))) }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.users.setRoles(orgId: context.orgId, userId: request.parameter("userId"), by: context.caller,
                                                             key: keyed.key) {
            try JSONBody(request.body).stringArray("roles")
        }
        return try keyed.answer(outcome)
    }

    @Sendable static func noContent(_: Done) -> HTTPResponse { HTTPResponse(status: 204) }
}
