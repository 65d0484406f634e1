import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The operators' pages: every organization with its subscription's state and end, creating an
/// organization with its first admin (and their invitation link), renewing or ending a
/// subscription — each after a confirmation step, each the API's own operation and audit entry.
struct OperatorPages: Sendable {
    let console: Console
    var pages: Pages { console.pages }
    var operations: Operations { console.operations }

    /// A date field as the end of that day (UTC): "until 31 December" includes the 31st.
    static func endOfDay(_ date: String?) -> Int64? {
        guard let date, date.count == 10 else { return nil }
        return Timestamp.parse(date + "T23:59:59.999Z")
    }

    func orgs(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        var f = console.frame("Organizations", v, section: "orgs")
        switch request.query["done"] {
        case "renewed"?: f.notice = "The subscription was renewed. Writes the organization queued are accepted again."
        case "ended"?: f.notice = "The subscription was ended. Reads, exports and user management keep working for the organization."
        default: break
        }
        return orgsPage(v, frame: f)
    }

    private func orgsPage(_ v: Console.Visitor, frame: Pages.Frame, status: Int = 200, secrets: [[String: TemplateValue]] = []) -> HTTPResponse {
        let orgs = (try? operations.allOrganizations(by: v.caller)) ?? []
        let rows: [[String: TemplateValue]] = orgs.map { o in
            ["name": .text(o.name), "orgId": .text(o.orgId), "projectId": .text(String(o.projectId)), "state": .text(operations.gate.isExpired(o) ? "expired" : "active"),
             "expiresAt": .text(Pages.time(o.expiresAt)), "renewUrl": .text("/console/operator/orgs/\(o.orgId)/renew"),
             "endUrl": .text(operations.gate.isExpired(o) ? "" : "/console/operator/orgs/\(o.orgId)/end")]
        }
        return pages.render(.orgs, ["orgs": .list(rows), "csrf": .text(v.csrf), "secrets": .html(secrets.map { pages.fragment(.secret, $0) }.joined())], frame: frame, status: status)
    }

    func create(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        var f = console.frame("Organizations", v, section: "orgs")
        do {
            guard let expiresAt = Self.endOfDay(form["expiresAt"]) else {
                throw ApiError(.validationFailed, "Choose the date the subscription ends.", errors: [FieldError(path: "expiresAt", message: "a date")])
            }
            let adminName = form["adminName"] ?? "", name = form["name"] ?? ""
            // Everything the three steps check, checked before the first one writes: a refusal
            // leaves no organization behind.
            var errors: [FieldError] = []
            let rule = "1 to \(DisplayName.maxCharacters) characters, not only spaces"
            if !DisplayName.isValid(name) { errors.append(FieldError(path: "Name", message: rule)) }
            if !DisplayName.isValid(adminName) { errors.append(FieldError(path: "First admin's name", message: rule)) }
            if !errors.isEmpty { throw ApiError(.validationFailed, "The organization was not created.", errors: errors) }
            let email = try operations.invitations.checkAvailable(email: form["adminEmail"] ?? "")
            let org = try operations.organizations.create(by: v.caller) { (name, expiresAt) }.unkeyed()
            let admin = try operations.users.create(orgId: org.orgId, by: v.caller) { (adminName, ["admin"]) }.unkeyed()
            let invitation = try operations.invitations.invite(orgId: org.orgId, userId: admin.user.userId, by: v.caller) { email }.unkeyed()
            let url = request.origin + "/console/invitations/" + invitation.token
            f.notice = "\(org.name) was created, with \(admin.user.name) as its first admin."
            return orgsPage(v, frame: f, secrets: [[
                "heading": .text("Invitation link for \(invitation.email)"),
                "explain": .text("Send it to \(admin.user.name): it works once, until \(Pages.date(invitation.expiresAt)), and lets them set a password and sign in as the organization's admin."),
                "value": .text(url), "qr": .html(QRCode.svg(url, label: "QR code of the invitation link") ?? ""),
            ]])
        } catch let e as ApiError where e.code == .validationFailed {
            f.problem = e.detail
            f.problemDetails = e.errors.map { "\($0.path): \($0.message)" }
            return orgsPage(v, frame: f, status: 422)
        }
    }

    /// Renewing: the date, a confirmation, then the operation.
    func renew(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId")
        let org = try operations.organizations.organization(orgId)
        guard let expiresAt = Self.endOfDay(form["expiresAt"]) else {
            var f = console.frame("Organizations", v, section: "orgs")
            f.problem = "Choose the new end date of \(org.name)'s subscription, then press Renew."
            return orgsPage(v, frame: f, status: 422)
        }
        guard expiresAt > operations.clock.nowMillis() else {
            var f = console.frame("Organizations", v, section: "orgs")
            f.problem = "A renewal must end in the future; to end the subscription now, use End subscription."
            return orgsPage(v, frame: f, status: 422)
        }
        guard form["confirmed"] == "yes" else {
            return confirm(v, heading: "Renew \(org.name)?", question: "The subscription of \(org.name) will end on \(Pages.time(expiresAt)) instead of \(Pages.time(org.expiresAt)).",
                           action: "/console/operator/orgs/\(orgId)/renew", fields: ["expiresAt": form["expiresAt"] ?? ""], label: "Renew", style: "good")
        }
        _ = try operations.organizations.setSubscription(orgId: orgId, by: v.caller) { expiresAt }
        return Pages.redirect("/console/operator/orgs?done=renewed")
    }

    /// Ending: a confirmation, then the subscription ends now (audited like the API's).
    func end(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId")
        let org = try operations.organizations.organization(orgId)
        guard !operations.gate.isExpired(org) else { return Pages.redirect("/console/operator/orgs?done=ended") }
        guard form["confirmed"] == "yes" else {
            return confirm(v, heading: "End \(org.name)'s subscription?",
                           question: "From now on \(org.name) cannot sync, review or publish until it is renewed. Reads, exports and user management keep working, and apps keep collected work until then.",
                           action: "/console/operator/orgs/\(orgId)/end", fields: [:], label: "End subscription", style: "danger")
        }
        let now = operations.clock.nowMillis()
        _ = try operations.organizations.setSubscription(orgId: orgId, by: v.caller) { now }
        return Pages.redirect("/console/operator/orgs?done=ended")
    }

    private func confirm(_ v: Console.Visitor, heading: String, question: String, action: String, fields: [String: String], label: String, style: String) -> HTTPResponse {
        pages.render(.confirm, ["heading": .text(heading), "question": .text(question), "action": .text(action), "csrf": .text(v.csrf),
                                 "fields": .list(fields.map { ["name": .text($0.key), "value": .text($0.value)] }),
                                 "confirmLabel": .text(label), "style": .text(style), "cancelUrl": .text("/console/operator/orgs")],
                     frame: console.frame(heading, v, section: "orgs"))
    }
}
