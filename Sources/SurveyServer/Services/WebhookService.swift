import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The API's door onto an organization's webhooks (`Webhooks`): admins only. The deliveries
/// themselves are made by `WebhookDispatcher`, outside any request.
struct WebhookService {
    let services: Services

    func register(into router: inout Router) {
        let admins = Access.member(anyOf: [.admin])
        services.route(&router, "POST", "/v1/orgs/{orgId}/webhooks", admins, create)
        services.route(&router, "GET", "/v1/orgs/{orgId}/webhooks", admins, list)
        services.route(&router, "GET", "/v1/orgs/{orgId}/webhooks/{webhookId}", admins, get)
        services.route(&router, "PATCH", "/v1/orgs/{orgId}/webhooks/{webhookId}", admins, update)
        services.route(&router, "DELETE", "/v1/orgs/{orgId}/webhooks/{webhookId}", admins, delete)
        services.route(&router, "POST", "/v1/orgs/{orgId}/webhooks/{webhookId}/rotate-secret", admins, rotate)
        services.route(&router, "GET", "/v1/orgs/{orgId}/webhooks/{webhookId}/deliveries", admins, deliveries)
        services.route(&router, "POST", "/v1/orgs/{orgId}/webhooks/{webhookId}/deliveries/{deliveryId}/retry", admins, retry)
    }

    static func webhookJSON(_ w: WebhookRecord) -> [String: JSONValue] {
        var o: [String: JSONValue] = [
            "webhookId": .string(w.webhookId), "url": .string(w.url), "events": .array(w.events.map { .string($0) }),
            "enabled": .bool(w.enabled), "createdAt": .string(Timestamp.format(w.createdAt)), "updatedAt": .string(Timestamp.format(w.updatedAt)),
        ]
        if let d = w.description { o["description"] = .string(d) }
        if let r = w.disabledReason, !w.enabled { o["disabledReason"] = .string(r) }
        return o
    }

    static func deliveryJSON(_ d: DeliveryRecord) -> JSONValue {
        var o: [String: JSONValue] = [
            "deliveryId": .string(d.deliveryId), "eventId": .string(d.eventId), "type": .string(d.type), "status": .string(d.status),
            "attempts": .number(Double(d.attempts)), "createdAt": .string(Timestamp.format(d.createdAt)),
        ]
        if let t = d.lastAttemptAt { o["lastAttemptAt"] = .string(Timestamp.format(t)) }
        if let c = d.lastStatusCode { o["lastStatusCode"] = .number(Double(c)) }
        if let e = d.lastError { o["lastError"] = .string(e) }
        if let n = d.nextAttemptAt, d.status == "pending" { o["nextAttemptAt"] = .string(Timestamp.format(n)) }
        return .object(o)
    }

    /// The body of a create or a change: wrong types are 1031, values are checked by the operation.
    private static func settings(_ request: HTTPRequest) throws -> Webhooks.Settings {
        let body = try JSONBody(request.body)
        // Absent means "unchanged"; null is not a value any of them can take.
        for key in ["url", "events", "description", "enabled"] where body.fields[key]?.isNull == true {
            throw ApiError.malformed("`\(key)` must not be null; leave it out to keep it as it is.")
        }
        return Webhooks.Settings(url: try body.optionalString("url"), events: try body.optionalStringArray("events"),
                                 description: try body.optionalString("description"), enabled: try body.optionalBool("enabled"))
    }

    func create(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId
        let render: @Sendable (WebhookRecord) -> HTTPResponse = {
            var o = Self.webhookJSON($0)
            o["secret"] = .string($0.secret)  // shown once: a replay of the key answers without it
            return .created("/v1/orgs/\(orgId)/webhooks/\($0.webhookId)", .object(o))
        }
        let keyed = KeyedAnswer(request, render)
        return try keyed.answer(try services.operations.webhooks.create(orgId: orgId, by: try context.member(), key: keyed.key) {
            try Self.settings(request)
        })
    }

    func list(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let page = try Page(request)
        let rows = try services.operations.webhooks.list(orgId: context.orgId, by: try context.member(), after: page.after, limit: page.limit)
        return .json(200, page.render(rows, id: \.webhookId, item: { .object(Self.webhookJSON($0)) }))
    }

    func get(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        .json(200, .object(Self.webhookJSON(try services.operations.webhooks.get(orgId: context.orgId, webhookId: request.parameter("webhookId"),
                                                                                  by: try context.member()))))
    }

    func update(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request) { (w: WebhookRecord) in HTTPResponse.json(200, .object(Self.webhookJSON(w))) }
        return try keyed.answer(try services.operations.webhooks.update(orgId: context.orgId, webhookId: request.parameter("webhookId"),
                                                                        by: try context.member(), key: keyed.key) {
            try Self.settings(request)
        })
    }

    func delete(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request, UserService.noContent)
        return try keyed.answer(try services.operations.webhooks.delete(orgId: context.orgId, webhookId: request.parameter("webhookId"),
                                                                        by: try context.member(), key: keyed.key))
    }

    func rotate(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request) { (w: WebhookRecord) in
            HTTPResponse.json(200, ["webhookId": .string(w.webhookId), "secret": .string(w.secret),
                                    "previousSecretExpiresAt": .string(Timestamp.format(w.previousSecretUntil ?? w.updatedAt))])
        }
        return try keyed.answer(try services.operations.webhooks.rotateSecret(orgId: context.orgId, webhookId: request.parameter("webhookId"),
                                                                              by: try context.member(), key: keyed.key))
    }

    func deliveries(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let page = try Page(request)
        let rows = try services.operations.webhooks.deliveries(orgId: context.orgId, webhookId: request.parameter("webhookId"),
                                                               by: try context.member(), after: page.after, limit: page.limit)
        return .json(200, page.render(rows, id: \.deliveryId, item: Self.deliveryJSON))
    }

    func retry(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request) { (d: DeliveryRecord) in HTTPResponse.json(200, Self.deliveryJSON(d)) }
        return try keyed.answer(try services.operations.webhooks.retry(orgId: context.orgId, webhookId: request.parameter("webhookId"),
                                                                       deliveryId: request.parameter("deliveryId"), by: try context.member(),
                                                                       key: keyed.key))
    }
}
