import SurveyDomain

/// A webhook as stored. `secret` signs every delivery; `previousSecret` signs beside it until
/// `previousSecretUntil` after a rotation. `cursor`: the audit sequence up to which every event
/// is done with (sent, given up on, or refused with 410).
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
    public let cursor: Int64
    public let createdAt: Int64
    public let updatedAt: Int64

    public init(webhookId: String, orgId: String, url: String, events: [String], description: String?, enabled: Bool,
                disabledReason: String?, secret: String, previousSecret: String?, previousSecretUntil: Int64?, cursor: Int64,
                createdAt: Int64, updatedAt: Int64) {
        self.webhookId = webhookId; self.orgId = orgId; self.url = url; self.events = events; self.description = description
        self.enabled = enabled; self.disabledReason = disabledReason; self.secret = secret; self.previousSecret = previousSecret
        self.previousSecretUntil = previousSecretUntil; self.cursor = cursor; self.createdAt = createdAt; self.updatedAt = updatedAt
    }

    /// The secrets that sign a delivery at `now`: the current one, and the previous one while a
    /// rotation is in its overlap.
    public func signingSecrets(now: Int64) -> [String] {
        if let previousSecret, let until = previousSecretUntil, now < until { return [secret, previousSecret] }
        return [secret]
    }

    public static let disabledByAdmin = "disabled by an admin"
    public static let disabledByGone = "the receiver answered 410 Gone"

    /// The audit actions that are events, and the event type each is.
    public static let eventTypes: [String: String] = [
        "response.accept": "response.accepted", "response.resubmit": "response.resubmitted", "response.edit": "response.edited",
        "review.startReview": "response.review", "review.returnForCorrection": "response.review", "review.approve": "response.review",
        "review.reject": "response.review", "upload.commit": "upload.completed", "task.complete": "task.completed",
        "entity.create": "entity.created", "entity.update": "entity.updated", "entity.conflict": "entity.conflict",
    ]

    /// The audit actions this webhook listens to.
    var actions: Set<String> { Set(Self.eventTypes.filter { events.contains($0.value) }.keys) }
}

extension WebhookRecord {
    /// The webhooks table as `w`.
    static let columns = """
        w.webhook_id, w.org_id, w.url, w.events, w.description, w.enabled, w.disabled_reason, w.secret, w.previous_secret,
        w.previous_secret_until, w.cursor, w.created_at, w.updated_at
        """
    init(row: Row) throws {
        self.init(webhookId: try row["webhook_id"], orgId: try row["org_id"], url: try row["url"],
                  events: try row.string("events").split(separator: " ").map(String.init), description: try row["description"],
                  enabled: try row["enabled"], disabledReason: try row["disabled_reason"], secret: try row["secret"],
                  previousSecret: try row["previous_secret"], previousSecretUntil: try row["previous_secret_until"],
                  cursor: try row["cursor"], createdAt: try row["created_at"], updatedAt: try row["updated_at"])
    }
}

/// One event for one webhook: what was sent and what came back. A delivery that has not been
/// attempted yet is `pending` with no attempts.
public struct DeliveryRecord: Sendable, Equatable {
    public let deliveryId: String
    public let webhookId: String
    public let eventId: String
    /// The event's place in the audit log, which is commit order.
    public let eventSeq: Int64
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

/// A webhook's next delivery, due now: the delivery, where it goes and the exact bytes (nil
/// when the event's data cannot be read: the delivery is then given up on, with that reason).
public struct DueDelivery: Sendable {
    public let delivery: DeliveryRecord
    public let webhook: WebhookRecord
    public let body: [UInt8]?
}

/// An audit entry that is an event.
struct EventEntry {
    let seq: Int64
    let actor: String
    let action: String
    let targetId: String
    let revision: Int64?
    let detail: String?
    let at: Int64
    var type: String { WebhookRecord.eventTypes[action] ?? action }

    static let columns = "seq, actor, action, target_id, revision, detail, at"
    init(row: Row) throws {
        seq = try row["seq"]; actor = try row["actor"]; action = try row["action"]; targetId = try row["target_id"]
        revision = try row["revision"]; detail = try row["detail"]; at = try row["at"]
    }
}

extension ReadContext {
    public func webhooks(orgId: String, after: String?, limit: Int) throws -> [WebhookRecord] {
        try conn.query("SELECT \(WebhookRecord.columns) FROM webhooks w WHERE w.org_id = ? AND w.webhook_id > ? ORDER BY w.webhook_id LIMIT ?",
                       [.text(orgId), .text(after ?? ""), .int(Int64(limit))]).map(WebhookRecord.init)
    }

    public func webhook(orgId: String, webhookId: String) throws -> WebhookRecord? {
        try conn.query("SELECT \(WebhookRecord.columns) FROM webhooks w WHERE w.webhook_id = ? AND w.org_id = ?",
                       [.text(webhookId), .text(orgId)]).first.map(WebhookRecord.init)
    }

    public func enabledWebhooks() throws -> [WebhookRecord] {
        try conn.query("SELECT \(WebhookRecord.columns) FROM webhooks w WHERE w.enabled = 1").map(WebhookRecord.init)
    }

    // MARK: events and deliveries

    /// What makes this database's event ids its own.
    func eventIdSalt() throws -> [UInt8] {
        try conn.query("SELECT salt FROM webhook_identity WHERE id = 1").first?.blob("salt") ?? []
    }

    /// The events of `w`'s organization it listens to, after `after`, in order. `scan` bounds the
    /// audit entries looked at (other actions are skipped over): `scannedTo` is where a next
    /// look may start when nothing was found.
    func events(for w: WebhookRecord, after: Int64, limit: Int, scan: Int = 2_000) throws -> (events: [EventEntry], scannedTo: Int64) {
        let rows = try conn.query("SELECT \(EventEntry.columns) FROM audit WHERE org_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                                  [.text(w.orgId), .int(after), .int(auditHorizon ?? .max), .int(Int64(scan))])
        let actions = w.actions
        var events: [EventEntry] = []
        for row in rows {
            guard events.count < limit else { break }
            let e = try EventEntry(row: row)
            if actions.contains(e.action) { events.append(e) }
        }
        let scannedTo = if events.count == limit, let last = events.last { last.seq } else { try rows.last.map { try $0.int("seq") } ?? after }
        return (events, scannedTo)
    }

    func event(orgId: String, seq: Int64) throws -> EventEntry? {
        try conn.query("SELECT \(EventEntry.columns) FROM audit WHERE seq = ? AND org_id = ?", [.int(seq), .text(orgId)]).first.map(EventEntry.init)
            .flatMap { WebhookRecord.eventTypes[$0.action] == nil ? nil : $0 }
    }

    /// The delivery of `event` to `w`: its row once attempted, else pending with no attempt.
    func delivery(_ event: EventEntry, of w: WebhookRecord, salt: [UInt8]) throws -> DeliveryRecord {
        let id = EventIds.uuid(seq: event.seq, at: event.at, salt: salt)
        let row = try conn.query("""
            SELECT status, attempts, next_attempt_at, last_attempt_at, last_status_code, last_error
            FROM webhook_deliveries WHERE webhook_id = ? AND event_seq = ?
            """, [.text(w.webhookId), .int(event.seq)]).first
        // Not attempted yet: due from the event's time on.
        let nextAttemptAt: Int64? = if let row { try row.optionalInt("next_attempt_at") } else { event.at }
        return DeliveryRecord(deliveryId: "dlv_" + id, webhookId: w.webhookId, eventId: "evt_" + id, eventSeq: event.seq, type: event.type,
                              status: try row?.string("status") ?? "pending", attempts: try row?.int("attempts") ?? 0,
                              nextAttemptAt: nextAttemptAt,
                              lastAttemptAt: try row?.optionalInt("last_attempt_at"), lastStatusCode: try row?.optionalInt("last_status_code"),
                              lastError: try row?.optionalString("last_error"), createdAt: event.at)
    }

    /// A webhook's deliveries in the order they go out, after the delivery `after`: those made
    /// (or re-queued) so far, then the events still waiting behind the cursor.
    public func deliveries(of w: WebhookRecord, after: String?, limit: Int) throws -> [DeliveryRecord] {
        let salt = try eventIdSalt()
        let afterSeq = after.flatMap(EventIds.seq(fromDeliveryId:)) ?? 0
        let made = try conn.query("SELECT event_seq FROM webhook_deliveries WHERE webhook_id = ? AND event_seq > ? ORDER BY event_seq LIMIT ?",
                                  [.text(w.webhookId), .int(afterSeq), .int(Int64(limit))]).map { try $0.int("event_seq") }
        var seqs = Set(made)
        var from = max(afterSeq, w.cursor)
        while true {
            let (found, scannedTo) = try events(for: w, after: from, limit: limit)
            seqs.formUnion(found.map(\.seq))
            if scannedTo == from { break }
            from = scannedTo
            if found.count == limit { break }
        }
        return try seqs.sorted().prefix(limit).compactMap { seq in
            try event(orgId: w.orgId, seq: seq).map { try delivery($0, of: w, salt: salt) }
        }
    }

    /// A delivery exists once made (or re-queued), and before that for every event behind the
    /// cursor the webhook listens to.
    public func delivery(of w: WebhookRecord, deliveryId: String) throws -> DeliveryRecord? {
        guard let seq = EventIds.seq(fromDeliveryId: deliveryId), let event = try event(orgId: w.orgId, seq: seq) else { return nil }
        let made = try !conn.query("SELECT 1 FROM webhook_deliveries WHERE webhook_id = ? AND event_seq = ?", [.text(w.webhookId), .int(seq)]).isEmpty
        guard made || (seq > w.cursor && w.actions.contains(event.action)) else { return nil }
        let d = try delivery(event, of: w, salt: try eventIdSalt())
        return d.deliveryId == deliveryId ? d : nil
    }

    /// The newest deliveries made, newest first, and how many events wait behind the cursor (the
    /// console's view; the count stops at `countUpTo`).
    public func latestDeliveries(of w: WebhookRecord, limit: Int, countUpTo: Int = 1_000) throws -> (made: [DeliveryRecord], waiting: Int) {
        let salt = try eventIdSalt()
        let made = try conn.query("SELECT event_seq FROM webhook_deliveries WHERE webhook_id = ? ORDER BY event_seq DESC LIMIT ?",
                                  [.text(w.webhookId), .int(Int64(limit))]).compactMap { row in
            try event(orgId: w.orgId, seq: try row.int("event_seq")).map { try delivery($0, of: w, salt: salt) }
        }
        var waiting = 0, from = w.cursor
        while waiting < countUpTo {
            let (found, scannedTo) = try events(for: w, after: from, limit: countUpTo - waiting)
            waiting += found.filter { e in !made.contains { $0.eventSeq == e.seq } }.count
            if scannedTo == from { break }
            from = scannedTo
        }
        return (made, waiting)
    }

    /// The next delivery of `w`, when it is due by `now`: a manual retry first (it is older than
    /// anything behind the cursor), else the first event after the cursor. `scanFrom`: where the
    /// look for that event may start (a previous look found nothing up to there).
    public func nextDelivery(of w: WebhookRecord, now: Int64, scanFrom: Int64) throws -> (due: DueDelivery?, scannedTo: Int64) {
        let salt = try eventIdSalt()
        let from = max(scanFrom, w.cursor)
        var next: EventEntry?
        var scannedTo = from
        // Without statistics SQLite picks the primary key (webhook_id, event_seq) over the partial
        // index of pending deliveries, and then steps over every delivery the webhook ever made
        // before it finds a pending one: 4 ms at 27,000 deliveries (0.02 ms through the index), a
        // look made after every delivery and every 200 ms, so the dispatcher's loop took a third of
        // the server's CPU after 25 minutes of steady work, and more every minute (Harness/soak.py).
        let pending = conn.dialect == .sqlite ? " INDEXED BY webhook_deliveries_pending" : ""
        if let seq = try conn.query("SELECT event_seq FROM webhook_deliveries\(pending) WHERE webhook_id = ? AND status = 'pending' ORDER BY event_seq LIMIT 1",
                                    [.text(w.webhookId)]).first?.int("event_seq") {
            next = try event(orgId: w.orgId, seq: seq)
        }
        if next.map({ $0.seq > from }) ?? true {
            let (found, to) = try events(for: w, after: from, limit: 1)
            // Found: the next look starts just before it (it is not done until it is recorded).
            scannedTo = found.first.map { $0.seq - 1 } ?? to
            if let first = found.first, next.map({ first.seq < $0.seq }) ?? true { next = first }
        }
        guard let event = next else { return (nil, scannedTo) }
        let d = try delivery(event, of: w, salt: salt)
        guard d.status == "pending", (d.nextAttemptAt ?? 0) <= now else { return (nil, scannedTo) }
        return (DueDelivery(delivery: d, webhook: w, body: try body(of: event, orgId: w.orgId)), scannedTo)
    }

    /// The body of an event: `{type, timestamp, data}` with the data as of the event. A response
    /// is read as it is when it is still at the event's revision, else as it was kept (a
    /// snapshot) by the change that moved it on; uploads and completed tasks never change.
    func body(of e: EventEntry, orgId: String) throws -> [UInt8]? {
        var data: [UInt8]
        switch e.action {
        case "upload.commit":
            guard let u = try upload(orgId: orgId, clientUploadId: e.targetId) else { return nil }
            var document = u.documentMembers
            document["uploadedBy"] = .string(u.uploader)
            data = CanonicalJSON.encode(.object(document))
        case "task.complete":
            guard let t = try task(orgId: orgId, taskId: e.targetId) else { return nil }
            data = CanonicalJSON.encode(t.document)
        case "entity.create", "entity.update", "entity.conflict":
            // The version the change made (versions never change), with its list and id.
            let parts = e.targetId.split(separator: "/", maxSplits: 1).map(String.init)
            guard parts.count == 2, let version = e.revision,
                  let v = try entityVersion(orgId: orgId, list: parts[0], entityId: parts[1], version: version) else { return nil }
            let previous = version > 1 ? try entityVersion(orgId: orgId, list: parts[0], entityId: parts[1], version: version - 1) : nil
            guard case .object(var o) = v.document(after: previous) else { return nil }
            o["list"] = .string(parts[0])
            o["id"] = .string(parts[1])
            data = CanonicalJSON.encode(.object(o))
        default:
            guard let revision = e.revision else { return nil }
            var review: [String: JSONValue]?
            if e.action != "response.accept" {
                guard case .object(var transition)? = try? JSONParser.parse(Array((e.detail ?? "").utf8)) else { return nil }
                transition["action"] = .string(e.action.hasPrefix("response.") ? String(e.action.dropFirst("response.".count))
                                                                                  : String(e.action.dropFirst("review.".count)))
                transition["by"] = .string(e.actor)
                review = transition
            }
            if let r = try response(orgId: orgId, responseId: e.targetId), r.revision == revision {
                data = r.encodedDocument(adding: review.map { ["review": .object($0)] } ?? [:])
            } else if let kept = try conn.query("SELECT document FROM webhook_snapshots WHERE response_id = ? AND revision = ?",
                                                [.text(e.targetId), .int(revision)]).first?.blob("document") {
                data = kept
                if let review, case .object(var o)? = try? JSONParser.parse(kept) {
                    o["review"] = .object(review)
                    data = CanonicalJSON.encode(.object(o))
                }
            } else {
                return nil
            }
        }
        return CanonicalJSON.encode(["type": .string(e.type), "timestamp": .string(Timestamp.format(e.at))], adding: "data", encoded: data)
    }
}

/// Event ids: a time-ordered UUID made from the audit entry (its time and sequence) and this
/// database's salt — the same event always has the same id (retries, restarts, a restored
/// backup), two databases never share one. A delivery's id is the same UUID under `dlv_`.
enum EventIds {
    static func uuid(seq: Int64, at: Int64, salt: [UInt8]) -> String {
        var b = [UInt8](repeating: 0, count: 16)
        for i in 0..<6 { b[i] = UInt8((UInt64(at) >> (8 * (5 - i))) & 0xFF) }
        let s = salt + [UInt8](repeating: 0, count: max(0, 4 - salt.count))
        b[6] = 0x70 | (s[0] & 0x0F); b[7] = s[1]
        b[8] = 0x80 | (s[2] & 0x3F); b[9] = s[3]
        let q = UInt64(seq)
        for i in 0..<6 { b[10 + i] = UInt8((q >> (8 * (5 - i))) & 0xFF) }
        let h = Array(Hex.encode(b).utf8)
        func part(_ r: Range<Int>) -> String { String(decoding: h[r], as: UTF8.self) }
        return "\(part(0..<8))-\(part(8..<12))-\(part(12..<16))-\(part(16..<20))-\(part(20..<32))"
    }

    /// The audit sequence in a delivery id (its last 48 bits).
    static func seq(fromDeliveryId id: String) -> Int64? {
        guard id.hasPrefix("dlv_"), id.count == 40, let n = Int64(id.suffix(12), radix: 16) else { return nil }
        return n
    }
}

extension WriteContext {
    /// Before a response changes: if a webhook of the organization may still have to send an
    /// event that describes it as it is now (its cursor is behind the audit log), the response is
    /// kept as it is, so that delivery carries the state as of its event.
    func keepForWebhooks(responseId: String) throws {
        guard try !conn.query("""
            SELECT 1 FROM webhooks WHERE org_id = ? AND events LIKE '%response.%' AND cursor < (SELECT COALESCE(MAX(seq), 0) FROM audit) LIMIT 1
            """, [.text(orgId)]).isEmpty,
              let current = try ReadContext(conn).response(orgId: orgId, responseId: responseId) else { return }
        try conn.run("INSERT INTO webhook_snapshots(response_id, revision, document) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                     [.text(responseId), .int(current.revision), .blob(current.encodedDocument())])
    }
}

extension GatedTransaction {
    /// A new webhook hears of the events committed after it: its cursor starts at the end of
    /// the audit log.
    public func createWebhook(_ w: WebhookRecord) throws {
        try context.conn.run("""
            INSERT INTO webhooks(webhook_id, org_id, url, events, description, enabled, secret, cursor, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, 1, ?, (SELECT COALESCE(MAX(seq), 0) FROM audit), ?, ?)
            """, [.text(w.webhookId), .text(orgId), .text(w.url), .text(w.events.joined(separator: " ")), .optional(w.description),
                  .text(w.secret), .int(now), .int(now)])
        try audit(action: "webhook.create", targetType: "webhook", targetId: w.webhookId,
                  detail: CanonicalJSON.string(["url": .string(w.url), "events": .array(w.events.map { .string($0) })]))
    }

    /// Changes what the admin sent (nil: unchanged); enabling clears the reason it was disabled.
    public func updateWebhook(webhookId: String, url: String?, events: [String]?, description: String?, enabled: Bool?) throws -> WebhookRecord {
        let flag = enabled.map(SQLValue.bool) ?? .null
        try context.conn.run("""
            UPDATE webhooks SET url = COALESCE(?, url), events = COALESCE(?, events), description = COALESCE(?, description),
                enabled = COALESCE(?, enabled), disabled_reason = CASE WHEN ? = 1 THEN NULL WHEN ? = 0 THEN ? ELSE disabled_reason END,
                updated_at = ?
            WHERE webhook_id = ? AND org_id = ?
            """, [.optional(url), .optional(events?.joined(separator: " ")), .optional(description), flag, flag, flag,
                  .text(WebhookRecord.disabledByAdmin), .int(now), .text(webhookId), .text(orgId)])
        guard context.conn.changes == 1, let updated = try read.webhook(orgId: orgId, webhookId: webhookId) else { throw ApiError.notFound() }
        var detail: [String: JSONValue] = [:]
        if let url { detail["url"] = .string(url) }
        if let events { detail["events"] = .array(events.map { .string($0) }) }
        if let enabled { detail["enabled"] = .bool(enabled) }
        if description != nil { detail["description"] = true }
        try audit(action: "webhook.update", targetType: "webhook", targetId: webhookId, detail: CanonicalJSON.string(.object(detail)))
        return updated
    }

    /// Sends a delivery again now, whatever became of it; it goes out before the events behind
    /// the cursor (it is older). A delivery not attempted yet is already waiting: unchanged.
    public func retryDelivery(_ d: DeliveryRecord) throws -> DeliveryRecord {
        try context.conn.run("""
            INSERT INTO webhook_deliveries(webhook_id, event_seq, status, attempts, next_attempt_at, created_at) VALUES (?, ?, 'pending', 0, ?, ?)
            ON CONFLICT(webhook_id, event_seq) DO UPDATE SET status = 'pending', next_attempt_at = excluded.next_attempt_at
            """, [.text(d.webhookId), .int(d.eventSeq), .int(now), .int(now)])
        try audit(action: "webhook.retry", targetType: "webhook", targetId: d.webhookId, detail: "delivery=\(d.deliveryId)")
        guard let w = try read.webhook(orgId: orgId, webhookId: d.webhookId), let again = try read.delivery(of: w, deliveryId: d.deliveryId) else {
            throw ApiError.notFound()
        }
        return again
    }
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

    /// Removes the webhook and what it recorded of its deliveries (never gated).
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
/// change applies only to the attempt it reports on (`attempts` as it was sent) and only while
/// the webhook exists: a manual retry or a delete that came meanwhile wins. An event that is done
/// with (sent, given up on, 410) moves the webhook's cursor past it.
public struct DeliveryTransaction {
    let conn: any SQLConnection
    public let now: Int64

    public func succeeded(_ d: DeliveryRecord, statusCode: Int) throws {
        try record(d, status: "succeeded", statusCode: statusCode, error: nil, nextAttemptAt: nil)
    }

    /// A failed attempt: retried at `nextAttemptAt`, or abandoned when there is none.
    public func failed(_ d: DeliveryRecord, statusCode: Int?, error: String, nextAttemptAt: Int64?) throws {
        try record(d, status: nextAttemptAt == nil ? "abandoned" : "pending", statusCode: statusCode, error: error, nextAttemptAt: nextAttemptAt)
    }

    /// 410 Gone: the delivery fails and the webhook is disabled (audited, as the server's act).
    public func gone(_ d: DeliveryRecord, orgId: String) throws {
        guard try record(d, status: "failed", statusCode: 410, error: WebhookRecord.disabledByGone, nextAttemptAt: nil) else { return }
        try conn.run("UPDATE webhooks SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE webhook_id = ? AND enabled = 1",
                     [.text(WebhookRecord.disabledByGone), .int(now), .text(d.webhookId)])
        if conn.changes == 1 {
            try WriteContext(conn, orgId: orgId, actor: "surveyd", now: now)
                .audit(action: "webhook.update", targetType: "webhook", targetId: d.webhookId, revision: nil,
                       detail: #"{"enabled":false,"reason":"410 Gone"}"#)
        }
    }

    @discardableResult
    private func record(_ d: DeliveryRecord, status: String, statusCode: Int?, error: String?, nextAttemptAt: Int64?) throws -> Bool {
        try conn.run("""
            INSERT INTO webhook_deliveries(webhook_id, event_seq, status, attempts, next_attempt_at, last_attempt_at, last_status_code, last_error, created_at)
            SELECT ?, ?, ?, 1, ?, ?, ?, ?, ? WHERE ? = 0 AND EXISTS (SELECT 1 FROM webhooks WHERE webhook_id = ?)
            ON CONFLICT(webhook_id, event_seq) DO NOTHING
            """, [.text(d.webhookId), .int(d.eventSeq), .text(status), .optional(nextAttemptAt), .int(now), .optional(statusCode.map(Int64.init)),
                  .optional(error), .int(d.createdAt), .int(d.attempts), .text(d.webhookId)])
        if conn.changes == 0 {
            try conn.run("""
                UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, next_attempt_at = ?, last_attempt_at = ?, last_status_code = ?,
                    last_error = ?
                WHERE webhook_id = ? AND event_seq = ? AND status = 'pending' AND attempts = ?
                """, [.text(status), .optional(nextAttemptAt), .int(now), .optional(statusCode.map(Int64.init)), .optional(error),
                      .text(d.webhookId), .int(d.eventSeq), .int(d.attempts)])
            guard conn.changes == 1 else { return false }
        }
        if status != "pending" {
            try conn.run("UPDATE webhooks SET cursor = CASE WHEN cursor < ? THEN ? ELSE cursor END WHERE webhook_id = ?",
                         [.int(d.eventSeq), .int(d.eventSeq), .text(d.webhookId)])
        }
        return true
    }
}

extension Database {
    public func deliveryWrite<T: Sendable>(_ body: @escaping @Sendable (DeliveryTransaction) throws -> T) throws -> T {
        let clock = self.clock
        return try writer.submit { conn in try body(DeliveryTransaction(conn: conn, now: clock.nowMillis())) }
    }
}
