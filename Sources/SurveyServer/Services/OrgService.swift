import SurveyDomain
import SurveyHTTP
import SurveyOperations
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

    static func subscription(_ org: OrgRecord, now: Int64) -> JSONValue { .object(subscriptionMembers(org, now: now)) }

    static func subscriptionMembers(_ org: OrgRecord, now: Int64) -> [String: JSONValue] {
        ["status": .string(now < org.expiresAt ? "active" : "expired"), "expiresAt": .string(Timestamp.format(org.expiresAt))]
    }

    static func orgJSON(_ org: OrgRecord, now: Int64) -> JSONValue {
        ["orgId": .string(org.orgId), "projectId": .number(Double(org.projectId)), "name": .string(org.name),
         "subscription": subscription(org, now: now)]
    }

    func createOrg(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let clock = services.clock
        let render: @Sendable (OrgRecord) -> HTTPResponse = { .created("/v1/orgs/\($0.orgId)", Self.orgJSON($0, now: clock.nowMillis())) }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.organizations.create(by: context.caller, key: keyed.key) {
            let body = try JSONBody(request.body)
            return (name: try body.string("name"), expiresAt: try body.timestamp("expiresAt"))
        }
        return try keyed.answer(outcome)
    }

    func getSubscription(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        Self.subscriptionAnswer(try services.operations.organizations.organization(context.orgId), now: services.clock.nowMillis())
    }

    func putSubscription(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let clock = services.clock
        let render: @Sendable (OrgRecord) -> HTTPResponse = { Self.subscriptionAnswer($0, now: clock.nowMillis()) }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.organizations.setSubscription(orgId: context.orgId, by: context.caller,
                                                                            key: keyed.key) {
            try JSONBody(request.body).timestamp("expiresAt")
        }
        return try keyed.answer(outcome)
    }

    /// The subscription with the server's time, so a client can tell its own clock's drift.
    static func subscriptionAnswer(_ org: OrgRecord, now: Int64) -> HTTPResponse {
        var body = subscriptionMembers(org, now: now)
        body["serverTime"] = .string(Timestamp.format(now))
        return .json(200, .object(body))
    }
}
