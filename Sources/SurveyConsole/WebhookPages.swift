import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// An organization's webhooks in the console (admins): the list and a form to add one (its
/// secret shown once), and each webhook's page with its latest deliveries, a retry per delivery,
/// enable/disable, a new secret and delete — each the API's own operation (`Webhooks`).
struct WebhookPages: Sendable {
    let admin: AdminPages
    var pages: Pages { admin.pages }
    var operations: Operations { admin.operations }

    static let eventLabels: [(String, String)] = [
        ("response.accepted", "A response is accepted"), ("response.resubmitted", "A returned response is resubmitted"), ("response.edited", "A response's answers are edited"),
        ("response.review", "A response is reviewed (started, returned, approved, rejected)"),
        ("upload.completed", "A file upload completes"), ("task.completed", "A field task is completed"),
        ("entity.created", "An entity is created"), ("entity.updated", "An entity is updated"),
        ("entity.conflict", "An update marks an entity's conflict"),
    ]

    func list(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId")
        return try listPage(visit, frame: admin.frame("Webhooks", v, orgId, "webhooks"))
    }

    private func listPage(_ visit: Visit, frame f: Pages.Frame, status: Int = 200,
                          form: [String: String] = [:], checked: [String] = ["response.accepted"]) throws -> HTTPResponse {
        let v = visit.visitor, orgId = visit.orgId
        let user = try visit.member()
        let hooks = try operations.webhooks.list(orgId: orgId, by: user, after: nil, limit: 500)
        let rows: [[String: TemplateValue]] = hooks.map { w in
            ["url": .text(w.url), "description": .text(w.description ?? ""), "events": .text(w.events.joined(separator: ", ")),
             "state": .text(w.enabled ? "enabled" : "disabled"), "page": .text("/console/orgs/\(orgId)/webhooks/\(w.webhookId)")]
        }
        return pages.render(.webhooks, [
            "webhooks": .list(rows), "createUrl": .text("/console/orgs/\(orgId)/webhooks"), "csrf": .text(v.csrf), "gatedOff": admin.gatedOff(f),
            "url": .text(form["url"] ?? ""), "description": .text(form["description"] ?? ""),
            "events": .list(Self.eventLabels.map { ["value": .text($0.0), "label": .text($0.1), "checked": .flag(checked.contains($0.0))] }),
        ], frame: f, status: status)
    }

    func create(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId")
        let user = try visit.member()
        let description = (form["description"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        do {
            let w = try operations.webhooks.create(orgId: orgId, by: user) {
                Webhooks.Settings(url: (form["url"] ?? "").trimmingCharacters(in: .whitespaces), events: form.all("event"),
                                  description: description.isEmpty ? nil : description)
            }.unkeyed()
            var f = admin.frame("Webhook", v, orgId, "webhooks")
            f.notice = "The webhook was added. Copy its secret now: your receiver needs it to check every delivery's signature."
            return try webhookPage(visit, w.webhookId, frame: f, secret: secret(w.secret, "Signing secret"))
        } catch let e as ApiError where [.validationFailed, .subscriptionExpired].contains(e.code) {
            var f = admin.frame("Webhooks", v, orgId, "webhooks")
            admin.refused(e, &f)
            return try listPage(visit, frame: f, status: e.code.httpStatus, form: ["url": form["url"] ?? "", "description": description],
                                checked: form.all("event"))
        }
    }

    func webhook(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId")
        var f = admin.frame("Webhook", v, orgId, "webhooks")
        switch request.query["done"] {
        case "enabled": f.notice = "The webhook is enabled: new events are queued for it and waiting deliveries go out."
        case "disabled": f.notice = "The webhook is disabled: nothing is sent and new events are not queued for it."
        case "retry": f.notice = "The delivery is queued again; it goes out in its place in the order."
        default: break
        }
        return try webhookPage(visit, request.parameter("webhookId"), frame: f)
    }

    private func webhookPage(_ visit: Visit, _ webhookId: String, frame: Pages.Frame, status: Int = 200,
                             secret: String = "") throws -> HTTPResponse {
        let v = visit.visitor, orgId = visit.orgId
        let user = try visit.member()
        let w = try operations.webhooks.get(orgId: orgId, webhookId: webhookId, by: user)
        let (deliveries, waiting) = try operations.webhooks.latestDeliveries(of: w, by: user, limit: 50)
        let base = "/console/orgs/\(orgId)/webhooks/\(webhookId)"
        var f = frame
        f.title = w.description ?? w.url
        let rows: [[String: TemplateValue]] = deliveries.map { d in
            var outcome = d.lastStatusCode.map { "answered \($0)" } ?? ""
            if let e = d.lastError, d.status != "succeeded" { outcome = e }
            var when = d.lastAttemptAt.map { "last tried " + Pages.time($0) } ?? "not tried yet"
            if d.status == "pending", let next = d.nextAttemptAt { when += " · next " + Pages.time(next) }
            return ["type": .text(d.type), "eventId": .text(d.eventId), "status": .text(d.status), "attempts": .text(String(d.attempts)),
                    "outcome": .text(outcome), "when": .text(when), "created": .text(Pages.time(d.createdAt)),
                    "retryUrl": .text(d.status == "pending" ? "" : "\(base)/deliveries/\(d.deliveryId)/retry")]
        }
        return pages.render(.webhook, [
            "url": .text(w.url), "description": .text(w.description ?? ""), "webhookId": .text(w.webhookId),
            "events": .text(w.events.joined(separator: ", ")), "state": .text(w.enabled ? "enabled" : "disabled"), "enabled": .flag(w.enabled),
            "disabledReason": .text(w.enabled ? "" : w.disabledReason ?? ""), "created": .text(Pages.time(w.createdAt)),
            "listUrl": .text("/console/orgs/\(orgId)/webhooks"), "baseUrl": .text(base), "csrf": .text(v.csrf), "gatedOff": admin.gatedOff(f),
            "deliveries": .list(rows), "secret": .html(secret),
            "waiting": .text(waiting == 0 ? "" : "\(waiting >= 1_000 ? "1,000 or more" : String(waiting)) event\(waiting == 1 ? "" : "s") waiting to be sent."),
        ], frame: f, status: status)
    }

    private func secret(_ value: String, _ heading: String) -> String {
        pages.fragment(.secret, ["heading": .text(heading), "value": .text(value), "qr": .text(""),
                                  "explain": .text("Shown only now. Put it in your receiver's configuration; it signs every delivery (webhook-signature).")])
    }

    /// Enable (gated) or disable (never gated).
    func setEnabled(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId"), webhookId = request.parameter("webhookId")
        let user = try visit.member()
        let enable = form["enabled"] == "true"
        do {
            _ = try operations.webhooks.update(orgId: orgId, webhookId: webhookId, by: user) { Webhooks.Settings(enabled: enable) }.unkeyed()
            return Pages.redirect("/console/orgs/\(orgId)/webhooks/\(webhookId)?done=\(enable ? "enabled" : "disabled")")
        } catch let e as ApiError where e.code == .subscriptionExpired {
            var f = admin.frame("Webhook", v, orgId, "webhooks")
            admin.refused(e, &f)
            return try webhookPage(visit, webhookId, frame: f, status: e.code.httpStatus)
        }
    }

    func rotate(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId"), webhookId = request.parameter("webhookId")
        let user = try visit.member()
        let w = try operations.webhooks.rotateSecret(orgId: orgId, webhookId: webhookId, by: user).unkeyed()
        var f = admin.frame("Webhook", v, orgId, "webhooks")
        f.notice = "A new secret is in use. Until \(Pages.time(w.previousSecretUntil ?? w.updatedAt)) every delivery is signed with both the new and the old secret, so your receiver can switch over."
        return try webhookPage(visit, webhookId, frame: f, secret: secret(w.secret, "New signing secret"))
    }

    func delete(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId"), webhookId = request.parameter("webhookId")
        let user = try visit.member()
        guard form["confirm"] == "yes" else {
            var f = admin.frame("Webhook", v, orgId, "webhooks")
            f.problem = "Tick “Yes, delete” to confirm."
            return try webhookPage(visit, webhookId, frame: f, status: 422)
        }
        _ = try operations.webhooks.delete(orgId: orgId, webhookId: webhookId, by: user).unkeyed()
        var f = admin.frame("Webhooks", v, orgId, "webhooks")
        f.notice = "The webhook was deleted; deliveries it had not made were dropped."
        return try listPage(visit, frame: f)
    }

    func retry(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId"), webhookId = request.parameter("webhookId")
        let user = try visit.member()
        do {
            _ = try operations.webhooks.retry(orgId: orgId, webhookId: webhookId, deliveryId: request.parameter("deliveryId"), by: user).unkeyed()
            return Pages.redirect("/console/orgs/\(orgId)/webhooks/\(webhookId)?done=retry")
        } catch let e as ApiError where e.code == .subscriptionExpired {
            var f = admin.frame("Webhook", v, orgId, "webhooks")
            admin.refused(e, &f)
            return try webhookPage(visit, webhookId, frame: f, status: e.code.httpStatus)
        }
    }
}
