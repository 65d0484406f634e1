import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// Organizations and their one subscription. Never gated: operators must be able to renew.
struct OrgService {
    let services: Services

    func register(into router: inout Router) {
        services.route(&router, "POST", "/v1/orgs", .operatorOnly, createOrg)
        services.route(&router, "GET", "/v1/orgs/{orgId}/subscription", .memberOrOperator(anyOf: []), getSubscription)
        // Members too: a member learns that only operators may do this; anyone else learns nothing.
        services.route(&router, "PUT", "/v1/orgs/{orgId}/subscription", .memberOrOperator(anyOf: []), putSubscription)
    }

    struct NewOrg: Sendable {
        let orgId: String
        let name: String
        let expiresAt: Int64
    }

    static func subscription(_ org: OrgRecord, now: Int64) -> JSONValue {
        ["status": .string(now < org.expiresAt ? "active" : "expired"), "expiresAt": .string(Timestamp.format(org.expiresAt))]
    }

    static func orgJSON(_ org: OrgRecord, now: Int64) -> JSONValue {
        ["orgId": .string(org.orgId), "name": .string(org.name), "subscription": subscription(org, now: now)]
    }

    func createOrg(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let caller = context.caller
        // The key belongs to no organization yet (scope ""): its retry finds the one it made.
        return try services.keyedSecurityWrite(request, scopeOrgId: "", orgId: { $0.orgId }, caller: caller.actorId, target: "", prepare: {
            let body = try JSONBody(request)
            let name = try body.string("name")
            let expiresAt = try body.timestamp("expiresAt")
            guard !name.isEmpty, name.count <= 200 else {
                throw ApiError(.validationFailed, "`name` must be 1 to 200 characters.", errors: [FieldError(path: "name", message: "1 to 200 characters")])
            }
            return NewOrg(orgId: Ids.make("org", nowMillis: services.clock.nowMillis()), name: name, expiresAt: expiresAt)
        }) { new, tx in
            let org = try tx.createOrg(orgId: new.orgId, name: new.name, expiresAt: new.expiresAt)
            return .created("/v1/orgs/\(new.orgId)", Self.orgJSON(org, now: tx.now))
        }
    }

    func getSubscription(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId
        guard let org = try services.database.read({ try $0.org(orgId) }) else { throw ApiError.notFound() }
        let now = services.clock.nowMillis()
        var body = Self.subscription(org, now: now).objectValue!
        body["serverTime"] = .string(Timestamp.format(now))
        return .json(200, .object(body))
    }

    func putSubscription(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let caller = context.caller, orgId = context.orgId
        guard caller.isOperator else { throw ApiError(.forbidden, "Only an operator may change a subscription.") }
        return try services.keyedSecurityWrite(request, scopeOrgId: orgId, orgId: { _ in orgId }, caller: caller.actorId, target: orgId,
                                               prepare: { try JSONBody(request).timestamp("expiresAt") }) { expiresAt, tx in
            guard let org = try tx.setSubscription(orgId: orgId, expiresAt: expiresAt) else { throw ApiError.notFound() }
            var body = Self.subscription(org, now: tx.now).objectValue!
            body["serverTime"] = .string(Timestamp.format(tx.now))
            return .json(200, .object(body))
        }
    }
}
