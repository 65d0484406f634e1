import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// An organization's entity lists in the console: the lists, a list's entities (conflicts first,
/// searched, paged by keyset), and an entity with its history and, while it is in conflict, the
/// resolve form. Every member reads them, as through the API; only admins resolve, through the
/// same operation as `PATCH …/entities/{id}` with `resolve: true` (gated, audited). The
/// downloads are registered by the server (`EntityListService`), which owns the streams.
struct EntityPages: Sendable {
    let console: Console
    var pages: Pages { console.pages }
    var operations: Operations { console.operations }

    static let pageSize = 50
    static let listsShown = 100
    static let versionsShown = 100

    static func listsURL(_ orgId: String) -> String { "/console/orgs/\(orgId)/entity-lists" }
    static func listURL(_ orgId: String, _ list: String) -> String { listsURL(orgId) + "/" + urlEncoded(list) }
    static func entityURL(_ orgId: String, _ list: String, _ id: String) -> String { listURL(orgId, list) + "/entities/" + urlEncoded(id) }

    private func frame(_ title: String, _ visit: Visit) -> Pages.Frame {
        var f = console.frame(title, visit.visitor, section: "entities")
        f.expired = console.expiredNotice(visit.orgId)
        return f
    }

    static func conflictLabel(_ c: String) -> String { c == "hard" ? "Hard conflict" : "Soft conflict" }
    static func conflictClass(_ c: String) -> String { c == "hard" ? "state-rejected" : "state-returned" }

    // MARK: the lists

    func lists(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let user = try visit.member(), orgId = visit.orgId
        let after = request.query["after"].flatMap { $0.isEmpty ? nil : $0 }
        let rows = try operations.entityLists.lists(user, orgId: orgId, after: after, limit: Self.listsShown + 1)
        let shown = rows.prefix(Self.listsShown)
        let values: [String: TemplateValue] = [
            "hasLists": .flag(!shown.isEmpty),
            "lists": .list(shown.map { l in
                ["name": .text(l.name), "label": .text(l.label), "showName": .flag(l.label != l.name), "url": .text(Self.listURL(orgId, l.name)),
                 "properties": .text(l.properties.joined(separator: ", ")), "createdAt": .text(Pages.date(l.createdAt))]
            }),
            "more": .text(rows.count > Self.listsShown ? Self.listsURL(orgId) + "?after=" + urlEncoded(shown.last?.name ?? "") : ""),
        ]
        return pages.render(.entityLists, values, frame: frame("Entity lists", visit))
    }

    // MARK: a list's entities

    func list(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let user = try visit.member(), orgId = visit.orgId, name = request.parameter("name")
        let q = (request.query["q"] ?? "").trimmingCharacters(in: .whitespaces)
        var cursor: EntityPageCursor?
        if let after = request.query["after"], !after.isEmpty {
            guard let c = EntityPageCursor(after) else { throw ApiError.malformed("This page link is not valid; go back to the first page.") }
            cursor = c
        }
        let page = try operations.entityLists.page(user, orgId: orgId, list: name, search: q.isEmpty ? nil : q, from: cursor, limit: Self.pageSize)
        let base = Self.listURL(orgId, name)
        func link(_ extra: [String: String]) -> String {
            var query = extra
            if !q.isEmpty { query["q"] = q }
            let text = query.sorted { $0.key < $1.key }.map { "\($0.key)=\(urlEncoded($0.value))" }.joined(separator: "&")
            return text.isEmpty ? base : base + "?" + text
        }
        let n = page.rows.count
        var shown = n == 0 ? "" : "\(n) entit\(n == 1 ? "y" : "ies") on this page\(q.isEmpty ? "" : " matching “\(q)”"), conflicts first\(cursor == nil ? "" : " (a later page)")."
        if page.partial {
            // A long list is searched a part at a time, so that no page reads all of it.
            shown = "\(n == 0 ? "No" : String(n)) entit\(n == 1 ? "y" : "ies") matching “\(q)” among the next \(ReadContext.entitySearchBudget) searched; “Search further” goes on from there."
        }
        let values: [String: TemplateValue] = [
            "name": .text(page.list.name), "label": .text(page.list.label), "listsUrl": .text(Self.listsURL(orgId)), "listUrl": .text(base),
            "q": .text(q), "shown": .text(shown), "hasRows": .flag(n > 0),
            "empty": .text(q.isEmpty ? "This list has no entities yet." : page.partial ? "No match yet: search further."
                           : "No entity's label or properties contain “\(q)”\(cursor == nil ? "" : " after the entities already searched")."),
            "nextLabel": .text(page.partial ? "Search further" : "Next page"),
            "table": .html(Self.table(page.rows, properties: page.list.properties, orgId: orgId, list: name)),
            "csvUrl": .text(base + "/download?format=csv"), "xlsxUrl": .text(base + "/download?format=xlsx"),
            "next": .text(page.next.map { link(["after": $0.text]) } ?? ""),
            "first": .text(cursor == nil ? "" : link([:])),
        ]
        return pages.render(.entityList, values, frame: frame(page.list.label, visit))
    }

    /// Label (a link to the entity), the properties in the list's order, version, conflict.
    static func table(_ rows: [EntityRecord], properties: [String], orgId: String, list: String) -> String {
        let e = HTML.escape
        var html = "<table class=\"data entities\"><thead><tr><th scope=\"col\">Label</th>"
        for p in properties { html += "<th scope=\"col\" data-column=\"\(e(p))\">\(e(p))</th>" }
        html += "<th scope=\"col\">Version</th><th scope=\"col\">Conflict</th></tr></thead><tbody>"
        for r in rows {
            html += "<tr data-entity=\"\(e(r.entityId))\"><td data-column=\"label\"><a href=\"\(e(entityURL(orgId, list, r.entityId)))\">\(e(r.label))</a></td>"
            for p in properties { html += "<td data-column=\"\(e(p))\">\(e(r.properties[p] ?? ""))</td>" }
            html += "<td data-column=\"version\">\(r.version)</td><td data-column=\"conflict\">"
            if let c = r.conflict { html += "<span class=\"state \(conflictClass(c))\" data-conflict=\"\(e(c))\">\(e(conflictLabel(c)))</span>" }
            html += "</td></tr>"
        }
        return html + "</tbody></table>"
    }

    // MARK: an entity and its history

    func entity(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let user = try visit.member(), orgId = visit.orgId
        let name = request.parameter("name"), entityId = request.parameter("entityId")
        let list = try operations.entityLists.list(user, orgId: orgId, name: name)
        let e = try operations.entityLists.entity(user, orgId: orgId, list: name, entityId: entityId)
        let after = Int64(request.query["after"] ?? "") ?? 0
        let versions = try operations.entityLists.versions(user, orgId: orgId, list: name, entityId: entityId, after: max(0, after),
                                                             limit: Self.versionsShown + 1)
        let names = Dictionary(try operations.members(of: orgId, by: user).map { ($0.userId, $0.name) }, uniquingKeysWith: { a, _ in a })
        let page = Self.entityURL(orgId, name, entityId)
        let history: [[String: TemplateValue]] = versions.prefix(Self.versionsShown).map { pair in
            let v = pair.version
            let document = v.document(after: pair.previous)
            let diff: [[String: TemplateValue]] = (document["diff"]?.arrayValue ?? []).map { d in
                let path = d["path"]?.stringValue ?? ""
                // A property by its name; the label as a word.
                let name = path == "label" ? "Label" : path.hasPrefix("properties.") ? String(path.dropFirst("properties.".count)) : path
                return ["path": .text(path), "name": .text(name), "old": .text(d["old"]?.stringValue ?? ""), "new": .text(d["new"]?.stringValue ?? "")]
            }
            var item: [String: TemplateValue] = [
                "version": .text(String(v.version)), "actor": .text(names[v.actor] ?? v.actor), "at": .text(Pages.time(v.createdAt)),
                "sourceText": .text(Self.sourceText(v)), "baseVersion": .text(v.baseVersion.map(String.init) ?? ""),
                "hasDiff": .flag(!diff.isEmpty), "diff": .list(diff),
            ]
            if let r = v.responseId {
                item["responseUrl"] = .text("/console/orgs/\(orgId)/responses/\(urlEncoded(r))")
                item["instanceID"] = .text(v.instanceID ?? r)
            }
            if let c = v.conflict { item["marked"] = .text("Marked a " + Self.conflictLabel(c).lowercased()); item["markedClass"] = .text(Self.conflictClass(c)) }
            return item
        }
        var f = frame(e.label, visit)
        switch request.query["done"] {
        case "resolved"?: f.notice = "Done: the conflict is resolved."
        case "edited"?: f.notice = "Saved: version \(e.version) of the entity."
        case "unchanged"?: f.notice = "Nothing was changed, so no version was made."
        default: break
        }
        let values: [String: TemplateValue] = [
            "listsUrl": .text(Self.listsURL(orgId)), "listUrl": .text(Self.listURL(orgId, name)), "listLabel": .text(list.label),
            "label": .text(e.label), "entityId": .text(e.entityId), "version": .text(String(e.version)),
            "conflict": .text(e.conflict ?? ""), "conflictLabel": .text(e.conflict.map(Self.conflictLabel) ?? ""),
            "conflictClass": .text(e.conflict.map(Self.conflictClass) ?? ""),
            "conflictHelp": .text(e.conflict == "hard"
                ? "A phone's update was made from an older version and changed a value that had changed since. Its values were applied; check them against the history below."
                : "A phone's update was made from an older version; other values had changed since. Its values were applied; check the history below."),
            "properties": .list(list.properties.map { ["name": .text($0), "value": .text(e.properties[$0] ?? "")] }),
            "createdAt": .text(Pages.time(e.createdAt)), "createdBy": .text(names[e.createdBy] ?? e.createdBy), "updatedAt": .text(Pages.time(e.updatedAt)),
            "canResolve": .flag(user.has(.admin)), "csrf": .text(visit.visitor.csrf), "resolveUrl": .text(page + "/resolve"),
            "editUrl": .text(page + "/edit"),
            "gatedOff": .text(f.expired == nil ? "" : "The subscription has expired: changes wait until it is renewed."),
            "versions": .list(history),
            "moreVersions": .text(versions.count > Self.versionsShown ? page + "?after=\(versions[Self.versionsShown - 1].version.version)" : ""),
        ]
        return pages.render(.entity, values, frame: f)
    }

    static func sourceText(_ v: EntityVersionRecord) -> String {
        switch v.source {
        case "submission": v.version == 1 ? "created by a submission" : "updated by a submission"
        case "console": "changed in the console"
        default: v.version == 1 ? "created through the API" : "changed through the API"
        }
    }

    /// Clears the conflict (`resolve: true`), from the version the page showed: if the entity has
    /// changed since, the refusal says so and nothing changes.
    func resolve(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let user = try visit.member(), orgId = visit.orgId
        let name = request.parameter("name"), entityId = request.parameter("entityId")
        guard let base = Int64(visit.form["baseVersion"] ?? ""), base >= 1 else { throw ApiError.malformed("The form has no version; reload the page.") }
        _ = try operations.entityWrites.update(orgId: orgId, list: name, entityId: entityId, by: user, source: "console") {
            EntityWrites.Change(baseVersion: base, label: nil, properties: [:], force: false, resolve: true)
        }
        return Pages.redirect(Self.entityURL(orgId, name, entityId) + "?done=resolved")
    }

    /// An admin's correction of the label and values, from the version the page showed: only what
    /// differs from it is sent, as one new version (`source` console), through the same update as
    /// the API's; if the entity has changed since, the refusal says so and nothing changes.
    func edit(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let user = try visit.member(), orgId = visit.orgId
        let name = request.parameter("name"), entityId = request.parameter("entityId")
        guard let base = Int64(visit.form["baseVersion"] ?? ""), base >= 1 else { throw ApiError.malformed("The form has no version; reload the page.") }
        let shown = try operations.entityLists.entity(user, orgId: orgId, list: name, entityId: entityId)
        let list = try operations.entityLists.list(user, orgId: orgId, name: name)
        let label = (visit.form["label"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        var properties: [String: String] = [:]
        for property in list.properties {
            guard let value = visit.form["p." + property], value != (shown.properties[property] ?? "") else { continue }
            properties[property] = value
        }
        let newLabel = label.isEmpty || label == shown.label ? nil : label
        guard newLabel != nil || !properties.isEmpty else {
            return Pages.redirect(Self.entityURL(orgId, name, entityId) + "?done=unchanged")
        }
        _ = try operations.entityWrites.update(orgId: orgId, list: name, entityId: entityId, by: user, source: "console") {
            EntityWrites.Change(baseVersion: base, label: newLabel, properties: properties, force: false, resolve: false)
        }
        return Pages.redirect(Self.entityURL(orgId, name, entityId) + "?done=edited")
    }

    // MARK: on a response's page

    /// The entities a response's submission created or updated, as links (empty when none).
    func links(of responseId: String, orgId: String, by user: UserRecord) -> [[String: TemplateValue]] {
        guard let versions = try? operations.entityLists.versions(user, orgId: orgId, responseId: responseId) else { return [] }
        return versions.map { v in
            ["url": .text(Self.entityURL(orgId, v.list, v.entityId)), "label": .text(v.version.label), "list": .text(v.list),
             "what": .text(v.version.version == 1 ? "Created" : "Updated to version \(v.version.version)")]
        }
    }
}
