import SurveyDomain
import SurveyStorage

/// An organization's webhooks, managed by its admins. Creating one, enabling it or changing
/// where it sends and what is a survey-domain write (gated: an expired organization sends no
/// new data out); disabling, deleting and rotating the secret never are — an expired
/// organization may always stop data leaving. Retrying a delivery sends data, so it is gated.
public struct Webhooks: Sendable {
    let operations: Operations

    public static let eventTypes = ["response.accepted", "response.resubmitted", "response.edited", "response.review", "upload.completed", "task.completed",
                                    "entity.created", "entity.updated", "entity.conflict"]
    /// After a rotation the old secret signs beside the new one this long.
    public static let rotationOverlapMillis: Int64 = 24 * 3_600_000

    public struct Settings: Sendable {
        public var url: String?
        public var events: [String]?
        public var description: String?
        public var enabled: Bool?
        public init(url: String? = nil, events: [String]? = nil, description: String? = nil, enabled: Bool? = nil) {
            self.url = url; self.events = events; self.description = description; self.enabled = enabled
        }
        /// Only `{"enabled": false}`: the one change that is never gated.
        var onlyDisables: Bool { enabled == false && url == nil && events == nil && description == nil }
    }

    public func create(orgId: String, by user: UserRecord, key: IdempotencyKey<WebhookRecord>? = nil,
                       _ request: () throws -> Settings) throws -> KeyedOutcome<WebhookRecord> {
        let ops = operations
        try ops.member(user, of: orgId, withAnyOf: [.admin])
        return try ops.keyedWrite(orgId: orgId, caller: user.userId, target: "", key: key, prepare: { () throws -> WebhookRecord in
            let s = try request()
            var errors = checked(s)
            if s.url == nil { errors.append(FieldError(path: "url", message: "required")) }
            if s.events == nil { errors.append(FieldError(path: "events", message: "required")) }
            guard errors.isEmpty, let url = s.url, let events = s.events else { throw ApiError(.validationFailed, "The webhook is not valid.", errors: errors) }
            let now = ops.clock.nowMillis()
            return WebhookRecord(webhookId: Ids.make("wh", nowMillis: now), orgId: orgId, url: url, events: events, description: s.description,
                                 enabled: true, disabledReason: nil, secret: Self.newSecret(), previousSecret: nil, previousSecretUntil: nil,
                                 cursor: 0, createdAt: now, updatedAt: now)
        }, write: { webhook, tx in
            try tx.createWebhook(webhook)
            guard let stored = try tx.read.webhook(orgId: orgId, webhookId: webhook.webhookId) else { throw ApiError(.internalError) }
            return stored
        })
    }

    public func list(orgId: String, by user: UserRecord, after: String?, limit: Int) throws -> [WebhookRecord] {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        return try operations.database.read { try $0.webhooks(orgId: orgId, after: after, limit: limit) }
    }

    public func get(orgId: String, webhookId: String, by user: UserRecord) throws -> WebhookRecord {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        guard let w = try operations.database.read({ try $0.webhook(orgId: orgId, webhookId: webhookId) }) else { throw ApiError.notFound() }
        return w
    }

    /// A change of settings. `{"enabled": false}` alone is a security write (never gated, and a
    /// no-op when already disabled); anything else goes through the gate.
    public func update(orgId: String, webhookId: String, by user: UserRecord, key: IdempotencyKey<WebhookRecord>? = nil,
                       _ request: () throws -> Settings) throws -> KeyedOutcome<WebhookRecord> {
        let ops = operations
        let current = try get(orgId: orgId, webhookId: webhookId, by: user)
        if (try? request())?.onlyDisables == true {
            return try ops.keyedSecurityWrite(scopeOrgId: orgId, orgId: { _ in orgId }, caller: user.userId, target: webhookId, key: key,
                                              prepare: { try request() }) { _, tx in
                guard let w = try tx.disableWebhook(orgId: orgId, webhookId: webhookId) else { throw ApiError.notFound() }
                return w
            }
        }
        return try ops.keyedWrite(orgId: orgId, caller: user.userId, target: webhookId, key: key, prepare: { () throws -> Settings in
            let s = try request()
            var errors = checked(s)
            if s.url == nil && s.events == nil && s.description == nil && s.enabled == nil {
                errors.append(FieldError(path: "", message: "name at least one of enabled, events, url, description"))
            }
            guard errors.isEmpty else { throw ApiError(.validationFailed, "The change is not valid.", errors: errors) }
            return s
        }, write: { s, tx in
            try tx.updateWebhook(webhookId: current.webhookId, url: s.url, events: s.events, description: s.description, enabled: s.enabled)
        })
    }

    /// Without a look-up first: a retry of a delete that went through answers its kept 204.
    public func delete(orgId: String, webhookId: String, by user: UserRecord, key: IdempotencyKey<Done>? = nil) throws -> KeyedOutcome<Done> {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        return try operations.keyedSecurityWrite(scopeOrgId: orgId, orgId: { _ in orgId }, caller: user.userId, target: webhookId, key: key,
                                                 prepare: {}) { _, tx in
            guard try tx.deleteWebhook(orgId: orgId, webhookId: webhookId) else { throw ApiError.notFound() }
            return Done()
        }
    }

    public func rotateSecret(orgId: String, webhookId: String, by user: UserRecord,
                             key: IdempotencyKey<WebhookRecord>? = nil) throws -> KeyedOutcome<WebhookRecord> {
        _ = try get(orgId: orgId, webhookId: webhookId, by: user)
        let ops = operations
        return try ops.keyedSecurityWrite(scopeOrgId: orgId, orgId: { _ in orgId }, caller: user.userId, target: webhookId, key: key,
                                          prepare: { Self.newSecret() }) { secret, tx in
            guard let w = try tx.rotateWebhookSecret(orgId: orgId, webhookId: webhookId, secret: secret,
                                                     previousUntil: tx.now + Self.rotationOverlapMillis) else { throw ApiError.notFound() }
            return w
        }
    }

    /// In the order they go out: those made so far, then the events still waiting.
    public func deliveries(orgId: String, webhookId: String, by user: UserRecord, after: String?, limit: Int) throws -> [DeliveryRecord] {
        let w = try get(orgId: orgId, webhookId: webhookId, by: user)
        return try operations.database.read { try $0.deliveries(of: w, after: after, limit: limit) }
    }

    /// The newest deliveries of a webhook, and how many events wait (for the console's page).
    public func latestDeliveries(of w: WebhookRecord, by user: UserRecord, limit: Int) throws -> (made: [DeliveryRecord], waiting: Int) {
        let w = try get(orgId: w.orgId, webhookId: w.webhookId, by: user)
        return try operations.database.read { try $0.latestDeliveries(of: w, limit: limit) }
    }

    public func retry(orgId: String, webhookId: String, deliveryId: String, by user: UserRecord,
                      key: IdempotencyKey<DeliveryRecord>? = nil) throws -> KeyedOutcome<DeliveryRecord> {
        let w = try get(orgId: orgId, webhookId: webhookId, by: user)
        guard let d = try operations.database.read({ try $0.delivery(of: w, deliveryId: deliveryId) }) else { throw ApiError.notFound() }
        return try operations.keyedWrite(orgId: orgId, caller: user.userId, target: deliveryId, key: key, prepare: {}) { _, tx in
            try tx.retryDelivery(d)
        }
    }

    /// `whsec_` and the base64 of 32 random bytes: the Standard Webhooks form.
    static func newSecret() -> String { "whsec_" + Base64.encode(Digest.randomBytes(32)) }

    /// Every value that breaks a rule, each at its field.
    private func checked(_ s: Settings) -> [FieldError] {
        var errors: [FieldError] = []
        if let url = s.url {
            switch WebhookTarget.parse(url) {
            case .refused(let e): errors.append(e)
            case .target(let target):
                if case .refused(let why) = target.check(allowPrivate: operations.limits.webhooksAllowPrivate) {
                    errors.append(FieldError(path: "url", message: why))
                }
            }
        }
        if let events = s.events {
            if events.isEmpty { errors.append(FieldError(path: "events", message: "at least one event")) }
            for (i, e) in events.enumerated() where !Self.eventTypes.contains(e) {
                errors.append(FieldError(path: "events[\(i)]", message: "unknown event; one of \(Self.eventTypes.joined(separator: ", "))"))
            }
            if Set(events).count != events.count { errors.append(FieldError(path: "events", message: "an event is listed twice")) }
        }
        if let d = s.description, d.unicodeScalars.count > 500 { errors.append(FieldError(path: "description", message: "at most 500 characters")) }
        return errors
    }
}
