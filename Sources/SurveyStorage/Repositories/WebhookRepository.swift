import SurveyDomain

/// A webhook as stored. `secret` signs every delivery; `previousSecret` signs beside it until
/// `previousSecretUntil` after a rotation.
public struct WebhookRecord: Sendable, Equatable {
    public let webhookId: String
    public let orgId: String
    public let url: String
    public let events: [String]
    public let description: String?
    public let enabled: Bool
    public let disabledReason: String?
    public let secret: String
    public let previousSecret: String?
    public let previousSecretUntil: Int64?
    public let createdAt: Int64
    public let updatedAt: Int64

    public init(webhookId: String, orgId: String, url: String, events: [String], description: String?, enabled: Bool,
                disabledReason: String?, secret: String, previousSecret: String?, previousSecretUntil: Int64?, createdAt: Int64, updatedAt: Int64) {
        self.webhookId = webhookId; self.orgId = orgId; self.url = url; self.events = events; self.description = description
        self.enabled = enabled; self.disabledReason = disabledReason; self.secret = secret; self.previousSecret = previousSecret
        self.previousSecretUntil = previousSecretUntil; self.createdAt = createdAt; self.updatedAt = updatedAt
    }

    /// The secrets that sign a delivery at `now`: the current one, and the previous one while a
    /// rotation is in its overlap.
    public func signingSecrets(now: Int64) -> [String] {
        if let previousSecret, let until = previousSecretUntil, now < until { return [secret, previousSecret] }
        return [secret]
    }
}

/// One event for one webhook: what was sent and what came back.
public struct DeliveryRecord: Sendable, Equatable {
    public let deliveryId: String
    public let webhookId: String
    public let eventId: String
    public let type: String
    /// pending | succeeded | failed | abandoned
    public let status: String
    public let attempts: Int64
    public let nextAttemptAt: Int64?
    public let lastAttemptAt: Int64?
    public let lastStatusCode: Int64?
    public let lastError: String?
    public let createdAt: Int64
}

/// The head of a webhook's queue, due now: the delivery, where it goes and the exact bytes.
public struct DueDelivery: Sendable {
    public let delivery: DeliveryRecord
    public let webhook: WebhookRecord
    public let body: [UInt8]
}

extension ReadContext {
    static let webhookColumns = """
        w.webhook_id, w.org_id, w.url, w.events, w.description, w.enabled, w.disabled_reason, w.secret, w.previous_secret,
        w.previous_secret_until, w.created_at, w.updated_at
        """
    static func webhook(_ r: Row, at i: Int = 0) -> WebhookRecord {
        WebhookRecord(webhookId: r.string(i), orgId: r.string(i + 1), url: r.string(i + 2),
                      events: r.string(i + 3).split(separator: " ").map(String.init), description: r.optionalString(i + 4),
                      enabled: r.bool(i + 5), disabledReason: r.optionalString(i + 6), secret: r.string(i + 7),
                      previousSecret: r.optionalString(i + 8), previousSecretUntil: r.optionalInt(i + 9),
                      createdAt: r.int(i + 10), updatedAt: r.int(i + 11))
    }
    static let deliveryColumns = """
        d.delivery_id, d.webhook_id, d.event_id, e.type, d.status, d.attempts, d.next_attempt_at, d.last_attempt_at,
        d.last_status_code, d.last_error, d.created_at
        """
    static func delivery(_ r: Row) -> DeliveryRecord {
        DeliveryRecord(deliveryId: r.string(0), webhookId: r.string(1), eventId: r.string(2), type: r.string(3), status: r.string(4),
                       attempts: r.int(5), nextAttemptAt: r.optionalInt(6), lastAttemptAt: r.optionalInt(7),
                       lastStatusCode: r.optionalInt(8), lastError: r.optionalString(9), createdAt: r.int(10))
    }

    public func webhooks(orgId: String, after: String?, limit: Int) throws -> [WebhookRecord] {
        try conn.query("SELECT \(Self.webhookColumns) FROM webhooks w WHERE w.org_id = ? AND w.webhook_id > ? ORDER BY w.webhook_id LIMIT ?",
                       [.text(orgId), .text(after ?? ""), .int(Int64(limit))]).map { Self.webhook($0) }
    }

    public func webhook(orgId: String, webhookId: String) throws -> WebhookRecord? {
        try conn.query("SELECT \(Self.webhookColumns) FROM webhooks w WHERE w.webhook_id = ? AND w.org_id = ?",
                       [.text(webhookId), .text(orgId)]).first.map { Self.webhook($0) }
    }

    /// A webhook's deliveries in the order they go out, after the delivery `after`.
    public func deliveries(webhookId: String, after: String?, limit: Int) throws -> [DeliveryRecord] {
        try conn.query("""
            SELECT \(Self.deliveryColumns) FROM webhook_deliveries d JOIN webhook_events e ON e.event_id = d.event_id
            WHERE d.webhook_id = ? AND d.seq > COALESCE((SELECT seq FROM webhook_deliveries WHERE delivery_id = ? AND webhook_id = ?), 0)
            ORDER BY d.seq LIMIT ?
            """, [.text(webhookId), .text(after ?? ""), .text(webhookId), .int(Int64(limit))]).map(Self.delivery)
    }

    /// The newest deliveries first (the console's view).
    public func latestDeliveries(webhookId: String, limit: Int) throws -> [DeliveryRecord] {
        try conn.query("""
            SELECT \(Self.deliveryColumns) FROM webhook_deliveries d JOIN webhook_events e ON e.event_id = d.event_id
            WHERE d.webhook_id = ? ORDER BY d.seq DESC LIMIT ?
            """, [.text(webhookId), .int(Int64(limit))]).map(Self.delivery)
    }

    public func delivery(webhookId: String, deliveryId: String) throws -> DeliveryRecord? {
        try conn.query("""
            SELECT \(Self.deliveryColumns) FROM webhook_deliveries d JOIN webhook_events e ON e.event_id = d.event_id
            WHERE d.delivery_id = ? AND d.webhook_id = ?
            """, [.text(deliveryId), .text(webhookId)]).first.map(Self.delivery)
    }

    /// Each enabled webhook's oldest pending delivery, when it is due by `now`: a webhook's
    /// deliveries go out one at a time, in commit order, so only its head can be sent.
    public func dueDeliveries(now: Int64, limit: Int) throws -> [DueDelivery] {
        try conn.query("""
            SELECT \(Self.deliveryColumns), e.body, \(Self.webhookColumns)
            FROM (SELECT webhook_id, MIN(seq) AS seq FROM webhook_deliveries WHERE status = 'pending' GROUP BY webhook_id) h
            JOIN webhook_deliveries d ON d.seq = h.seq
            JOIN webhook_events e ON e.event_id = d.event_id
            JOIN webhooks w ON w.webhook_id = d.webhook_id
            WHERE w.enabled = 1 AND d.next_attempt_at <= ?
            ORDER BY d.next_attempt_at LIMIT ?
            """, [.int(now), .int(Int64(limit))]).map {
            DueDelivery(delivery: Self.delivery($0), webhook: Self.webhook($0, at: 12), body: $0.blob(11))
        }
    }

    /// Deliveries waiting, for `/metrics` and tests.
    public func pendingDeliveryCount() throws -> Int64 {
        try conn.query("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'").first?.int(0) ?? 0
    }
}

extension WriteContext {
    /// The transactional outbox: when an enabled webhook of the organization subscribes to `type`,
    /// the event is recorded — its body built now, from the rows this transaction wrote, so a
    /// retry days later sends the state as of the event — with one delivery per such webhook.
    /// Nothing is built or written when no webhook listens. Rolled back with the write.
    func recordEvent(_ type: String, data: () throws -> JSONValue) throws {
        let listeners = try conn.query("SELECT webhook_id, events FROM webhooks WHERE org_id = ? AND enabled = 1", [.text(orgId)])
            .filter { $0.string(1).split(separator: " ").contains { $0 == type } }
        guard !listeners.isEmpty else { return }
        let eventId = Ids.make("evt", nowMillis: now)
        let body = CanonicalJSON.encode(["type": .string(type), "timestamp": .string(Timestamp.format(now)), "data": try data()])
        try conn.run("INSERT INTO webhook_events(event_id, org_id, type, body, created_at) VALUES (?, ?, ?, ?, ?)",
                     [.text(eventId), .text(orgId), .text(type), .blob(body), .int(now)])
        for listener in listeners {
            try conn.run("""
                INSERT INTO webhook_deliveries(delivery_id, webhook_id, event_id, status, attempts, next_attempt_at, created_at)
                VALUES (?, ?, ?, 'pending', 0, ?, ?)
                """, [.text(Ids.make("dlv", nowMillis: now)), .text(listener.string(0)), .text(eventId), .int(now), .int(now)])
        }
    }
}

extension GatedTransaction {
    public func createWebhook(_ w: WebhookRecord) throws {
        try context.conn.run("""
            INSERT INTO webhooks(webhook_id, org_id, url, events, description, enabled, secret, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)
            """, [.text(w.webhookId), .text(orgId), .text(w.url), .text(w.events.joined(separator: " ")), .optional(w.description),
                  .text(w.secret), .int(now), .int(now)])
        try audit(action: "webhook.create", targetType: "webhook", targetId: w.webhookId,
                  detail: CanonicalJSON.string(["url": .string(w.url), "events": .array(w.events.map { .string($0) })]))
    }

    /// Changes what the admin sent (nil: unchanged); enabling clears the reason it was disabled.
    public func updateWebhook(webhookId: String, url: String?, events: [String]?, description: String?, enabled: Bool?) throws -> WebhookRecord {
        try context.conn.run("""
            UPDATE webhooks SET url = COALESCE(?, url), events = COALESCE(?, events), description = COALESCE(?, description),
                enabled = COALESCE(?, enabled), disabled_reason = CASE WHEN ? = 1 THEN NULL WHEN ? = 0 THEN ? ELSE disabled_reason END,
                updated_at = ?
            WHERE webhook_id = ? AND org_id = ?
            """, [.optional(url), .optional(events?.joined(separator: " ")), .optional(description), enabled.map(SQLValue.bool) ?? .null,
                  enabled.map(SQLValue.bool) ?? .null, enabled.map(SQLValue.bool) ?? .null, .text(WebhookRecord.disabledByAdmin),
                  .int(now), .text(webhookId), .text(orgId)])
        guard context.conn.changes == 1, let updated = try read.webhook(orgId: orgId, webhookId: webhookId) else { throw ApiError.notFound() }
        var detail: [String: JSONValue] = [:]
        if let url { detail["url"] = .string(url) }
        if let events { detail["events"] = .array(events.map { .string($0) }) }
        if let enabled { detail["enabled"] = .bool(enabled) }
        if description != nil { detail["description"] = true }
        try audit(action: "webhook.update", targetType: "webhook", targetId: webhookId, detail: CanonicalJSON.string(.object(detail)))
        return updated
    }

    /// Sends a delivery again now, whatever became of it; it goes out in its place in the order.
    public func retryDelivery(webhookId: String, deliveryId: String) throws -> DeliveryRecord {
        try context.conn.run("""
            UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ? WHERE delivery_id = ? AND webhook_id = ?
            """, [.int(now), .text(deliveryId), .text(webhookId)])
        guard context.conn.changes == 1, let d = try read.delivery(webhookId: webhookId, deliveryId: deliveryId) else { throw ApiError.notFound() }
        try audit(action: "webhook.retry", targetType: "webhook", targetId: webhookId, detail: "delivery=\(deliveryId)")
        return d
    }
}

extension WebhookRecord {
    public static let disabledByAdmin = "disabled by an admin"
    public static let disabledByGone = "the receiver answered 410 Gone"
}

extension SecurityTransaction {
    /// Stops deliveries (never gated). Disabling a disabled webhook changes nothing.
    public func disableWebhook(orgId: String, webhookId: String) throws -> WebhookRecord? {
        try context.conn.run("""
            UPDATE webhooks SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE webhook_id = ? AND org_id = ? AND enabled = 1
            """, [.text(WebhookRecord.disabledByAdmin), .int(now), .text(webhookId), .text(orgId)])
        if context.conn.changes == 1 {
            try audit(action: "webhook.update", targetType: "webhook", targetId: webhookId, detail: #"{"enabled":false}"#)
        }
        return try read.webhook(orgId: orgId, webhookId: webhookId)
    }

    /// Removes the webhook and every delivery it had not made (never gated).
    public func deleteWebhook(orgId: String, webhookId: String) throws -> Bool {
        guard try read.webhook(orgId: orgId, webhookId: webhookId) != nil else { return false }
        try context.conn.run("DELETE FROM webhook_deliveries WHERE webhook_id = ?", [.text(webhookId)])
        try context.conn.run("DELETE FROM webhooks WHERE webhook_id = ? AND org_id = ?", [.text(webhookId), .text(orgId)])
        try audit(action: "webhook.delete", targetType: "webhook", targetId: webhookId)
        return true
    }

    /// A new secret; the one it replaces keeps signing beside it until `previousUntil`.
    public func rotateWebhookSecret(orgId: String, webhookId: String, secret: String, previousUntil: Int64) throws -> WebhookRecord? {
        try context.conn.run("""
            UPDATE webhooks SET previous_secret = secret, previous_secret_until = ?, secret = ?, updated_at = ?
            WHERE webhook_id = ? AND org_id = ?
            """, [.int(previousUntil), .text(secret), .int(now), .text(webhookId), .text(orgId)])
        guard context.conn.changes == 1 else { return nil }
        try audit(action: "webhook.rotate", targetType: "webhook", targetId: webhookId)
        return try read.webhook(orgId: orgId, webhookId: webhookId)
    }
}

/// What the dispatcher records of an attempt. Not a survey-domain write and not an action of a
/// person: it records what became of an event already committed, so it is never gated. Each
/// change applies only to the attempt it reports on (`attempts` as it was sent): a manual retry
/// or a delete that came meanwhile wins.
public struct DeliveryTransaction {
    let conn: Connection
    public let now: Int64

    public func succeeded(_ d: DeliveryRecord, statusCode: Int) throws {
        try conn.run("""
            UPDATE webhook_deliveries SET status = 'succeeded', attempts = attempts + 1, last_attempt_at = ?, last_status_code = ?,
                last_error = NULL, next_attempt_at = NULL
            WHERE delivery_id = ? AND status = 'pending' AND attempts = ?
            """, [.int(now), .int(Int64(statusCode)), .text(d.deliveryId), .int(d.attempts)])
    }

    /// A failed attempt: retried at `nextAttemptAt`, or abandoned when there is none.
    public func failed(_ d: DeliveryRecord, statusCode: Int?, error: String, nextAttemptAt: Int64?) throws {
        try conn.run("""
            UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, last_attempt_at = ?, last_status_code = ?,
                last_error = ?, next_attempt_at = ?
            WHERE delivery_id = ? AND status = 'pending' AND attempts = ?
            """, [.text(nextAttemptAt == nil ? "abandoned" : "pending"), .int(now), .optional(statusCode.map(Int64.init)), .text(error),
                  .optional(nextAttemptAt), .text(d.deliveryId), .int(d.attempts)])
    }

    /// 410 Gone: the delivery fails and the webhook is disabled (audited, as the server's act).
    public func gone(_ d: DeliveryRecord, orgId: String) throws {
        try conn.run("""
            UPDATE webhook_deliveries SET status = 'failed', attempts = attempts + 1, last_attempt_at = ?, last_status_code = 410,
                last_error = ?, next_attempt_at = NULL
            WHERE delivery_id = ? AND status = 'pending' AND attempts = ?
            """, [.int(now), .text(WebhookRecord.disabledByGone), .text(d.deliveryId), .int(d.attempts)])
        guard conn.changes == 1 else { return }
        try conn.run("UPDATE webhooks SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE webhook_id = ? AND enabled = 1",
                     [.text(WebhookRecord.disabledByGone), .int(now), .text(d.webhookId)])
        if conn.changes == 1 {
            try WriteContext(conn, orgId: orgId, actor: "surveyd", now: now)
                .audit(action: "webhook.update", targetType: "webhook", targetId: d.webhookId, revision: nil,
                       detail: #"{"enabled":false,"reason":"410 Gone"}"#)
        }
    }
}

extension Database {
    public func deliveryWrite<T: Sendable>(_ body: @escaping @Sendable (DeliveryTransaction) throws -> T) throws -> T {
        let clock = self.clock
        return try writer.submit { conn in try body(DeliveryTransaction(conn: conn, now: clock.nowMillis())) }
    }
}
