import Foundation
import SurveyDomain
import SurveyExports
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// Seeing a survey's data: the Data table, the Map and the Summary, sharing one filter form whose
/// values stay in the URL (a view can be bookmarked and sent). Every member opens them; a
/// collector sees only their own responses. Reads, so they keep working while the subscription
/// is expired. The table's values are the CSV export's cells (`ExportColumns`), shown with the
/// form's labels.
struct DataPages: Sendable {
    let console: Console
    /// The map's tile URL template and its attribution (`--map-tiles`); nil: no tiles.
    let tiles: Console.MapTiles?
    var pages: Pages { console.pages }
    var operations: Operations { console.operations }

    enum View: String, CaseIterable {
        case data, map, summary
        var label: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }
    }

    // MARK: the shared filters

    /// The filters as a view's URL carries them (`submittedBy`, `reviewState`, `receivedFrom`,
    /// `receivedTo`, `surveyVersionId`, `fieldTaskId`: the exports' names), read into the
    /// operation's filter. A received time is UTC: `2026-12-01T10:00` (a `datetime-local`
    /// field), `2026-12-01` (that day's 00:00) or RFC 3339.
    struct ViewQuery {
        static let filterKeys = ["submittedBy", "reviewState", "receivedFrom", "receivedTo", "surveyVersionId", "fieldTaskId"]
        var filter = DataViews.Filter()
        /// The filters given (non-empty), as given.
        var given: [String: String] = [:]
        let all: [String: String]

        init(_ query: [String: String]) throws {
            all = query
            for key in Self.filterKeys { if let v = query[key]?.trimmingCharacters(in: .whitespaces), !v.isEmpty { given[key] = v } }
            if let states = given["reviewState"] {
                filter.reviewStates = try states.split(separator: ",").map {
                    guard let s = ReviewState(rawValue: String($0)) else {
                        throw ApiError.malformed("“\($0)” is not a review state.")
                    }
                    return s
                }
            }
            filter.submittedBy = given["submittedBy"]
            filter.surveyVersionId = given["surveyVersionId"]
            filter.fieldTaskId = given["fieldTaskId"]
            filter.receivedFrom = try given["receivedFrom"].map { try Self.time($0, "Received from") }
            filter.receivedTo = try given["receivedTo"].map { try Self.time($0, "Received to") }
        }

        static func time(_ s: String, _ name: String) throws -> Int64 {
            let iso: String
            switch s.count {
            case 10: iso = s + "T00:00:00Z"
            case 16: iso = s + ":00Z"
            case 19: iso = s + "Z"
            default: iso = s
            }
            guard let t = Timestamp.parse(iso) else {
                throw ApiError.malformed("\(name) must be a date and time such as 2026-12-01T08:00 (UTC).")
            }
            return t
        }

        /// A received time as a `datetime-local` field shows it (UTC).
        static func field(_ millis: Int64?) -> String {
            guard let millis else { return "" }
            let s = String(Timestamp.format(millis).prefix(19))
            return s.hasSuffix(":00") ? String(s.prefix(16)) : s
        }

        /// The query of a link: the filters (and `lang`) plus `extra`; keys in order.
        func query(keeping keys: [String] = filterKeys + ["lang"], _ extra: [String: String] = [:]) -> String {
            var q = all.filter { keys.contains($0.key) && !$0.value.isEmpty }
            for (k, v) in extra { q[k] = v }
            return q.sorted { $0.key < $1.key }.map { "\($0.key)=\(urlEncoded($0.value))" }.joined(separator: "&")
        }

        /// The same selection as an export's query (`receivedFrom`/`receivedTo` in RFC 3339).
        var exportQuery: String {
            var q = given
            if let t = filter.receivedFrom { q["receivedFrom"] = Timestamp.format(t) }
            if let t = filter.receivedTo { q["receivedTo"] = Timestamp.format(t) }
            return q.sorted { $0.key < $1.key }.map { "\($0.key)=\(urlEncoded($0.value))" }.joined(separator: "&")
        }
    }

    private static func link(_ base: String, _ query: String) -> String { query.isEmpty ? base : base + "?" + query }

    /// The heading, the tabs and the filter form every view starts with.
    private func filters(_ view: View, _ q: ViewQuery, _ context: DataViews.Context, user: UserRecord, orgId: String, surveyId: String,
                         language: LanguageChoice, extra: [String: TemplateValue] = [:]) -> String {
        let base = "/console/orgs/\(orgId)/surveys/\(surveyId)"
        var values: [String: TemplateValue] = [
            "homeUrl": .text(user.has(.admin) ? base : "/console/"), "surveyTitle": .text(context.survey.title), "viewName": .text(view.label),
            "viewUrl": .text(base + "/" + view.rawValue), "onlyOwn": .flag(!operations.seesAll(user)),
            "views": .list(View.allCases.map { v in
                ["label": .text(v.label), "url": .text(Self.link(base + "/" + v.rawValue, q.query())), "current": .flag(v == view)]
            }),
            "submitters": .list(context.submitters.map { ["id": .text($0.userId), "label": .text($0.name), "selected": .flag($0.userId == q.filter.submittedBy)] }),
            "states": .list(ReviewDesk.stateLabels.map { s, label in
                ["value": .text(s.rawValue), "label": .text(label), "selected": .flag(q.filter.reviewStates == [s])]
            }),
            "receivedFrom": .text(ViewQuery.field(q.filter.receivedFrom)), "receivedTo": .text(ViewQuery.field(q.filter.receivedTo)),
            "versions": .list(context.versions.map { v in
                ["id": .text(v.record.surveyVersionId), "label": .text("Version \(v.record.number)"), "selected": .flag(v.record.surveyVersionId == q.filter.surveyVersionId)]
            }),
            "fieldTaskId": .text(q.filter.fieldTaskId ?? ""),
            "hasLanguages": .flag(!language.languages.isEmpty && view != .map),
            "languages": .list(language.languages.map { ["name": .text($0), "selected": .flag($0 == language.chosen)] }),
        ]
        for (k, v) in extra { values[k] = v }
        return pages.fragment(.viewFilters, values)
    }

    private func frame(_ title: String, _ visit: Visit) -> Pages.Frame {
        var f = console.frame(title, visit.visitor, section: visit.visitor.caller.user.map { $0.has(.admin) ? "surveys" : "review" } ?? "")
        f.expired = console.expiredNotice(visit.orgId)
        return f
    }

    // MARK: Data

    /// A column of the table after the system columns: a question, or a repeat's count.
    struct Column {
        let id: String
        let label: String
        /// The labels of the groups around it, outermost first.
        let groups: [String]
        let question: Question?
    }

    /// The latest version's questions outside repeats, and its outermost repeats, in form order.
    static func columns(_ nodes: [FormNode], _ language: LanguageChoice, groups: [String] = []) -> [Column] {
        var out: [Column] = []
        for n in nodes {
            let label = language.text(n.label).flatMap { $0.isEmpty ? nil : $0 } ?? n.id
            switch n.kind {
            case .question(let q): out.append(Column(id: q.id, label: language.text(q.labels) ?? q.label, groups: groups, question: q))
            case .group: out += columns(n.children, language, groups: groups + [label])
            case .repeat: out.append(Column(id: n.id, label: label, groups: groups, question: nil))
            case .note: break
            }
        }
        return out
    }

    func data(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = visit.orgId, surveyId = request.parameter("surveyId")
        let user = try visit.member()
        let q = try ViewQuery(request.query)
        let size = Int(request.query["size"] ?? "").flatMap { DataViews.pageSizes.contains($0) ? $0 : nil } ?? DataViews.pageSizes[0]
        let before = request.query["before"].flatMap { $0.isEmpty ? nil : $0 }
        let page = try operations.dataViews.page(orgId: orgId, surveyId: surveyId, by: user, q.filter, before: before, limit: size)
        let context = page.context
        let language = LanguageChoice(context.latest, requested: request.query["lang"])
        let all = context.latest.map { Self.columns($0.nodes, language) } ?? []
        let picked = request.query["picked"] != nil
        let shown = picked ? all.filter { request.query["show.\($0.id)"] != nil } : all
        let base = "/console/orgs/\(orgId)/surveys/\(surveyId)"
        let columnsKept = ["size", "picked"] + all.map { "show.\($0.id)" }
        let filters = filters(.data, q, context, user: user, orgId: orgId, surveyId: surveyId, language: language, extra: [
            "hasSizes": .flag(true), "sizes": .list(DataViews.pageSizes.map { ["n": .text(String($0)), "selected": .flag($0 == size)] }),
            "hasColumns": .flag(!all.isEmpty),
            "columns": .list(all.map { c in
                ["id": .text(c.id), "label": .text((c.groups + [c.label]).joined(separator: " › ")), "shown": .flag(!picked || request.query["show.\(c.id)"] != nil)]
            }),
        ])
        let exportColumns = ExportColumns(definitions: context.versions.map(\.definition), splitSelectMultiples: false)
        let numbers = Dictionary(context.versions.map { ($0.record.surveyVersionId, $0.record.number) }, uniquingKeysWith: { a, _ in a })
        let table = Self.table(page.rows, shown, exportColumns, language: language, names: context.names, versionNumbers: numbers, orgId: orgId)
        let keep = ViewQuery.filterKeys + ["lang"] + columnsKept
        var values: [String: TemplateValue] = [
            "filters": .html(filters), "table": .html(table), "hasRows": .flag(!page.rows.isEmpty),
            "shown": .text(page.rows.isEmpty ? "No responses match." : "\(page.rows.count) response\(page.rows.count == 1 ? "" : "s") on this page, newest first\(before == nil ? "" : " (a later page)")."),
            "next": .text(page.next.map { Self.link(base + "/data", q.query(keeping: keep, ["before": $0])) } ?? ""),
            "first": .text(before == nil ? "" : Self.link(base + "/data", q.query(keeping: keep))),
        ]
        if operations.seesAll(user) {
            let e = q.exportQuery
            values["exportCsv"] = .text(base + "/download?format=csv" + (e.isEmpty ? "" : "&" + e))
            values["exportXlsx"] = .text(base + "/download?format=xlsx" + (e.isEmpty ? "" : "&" + e))
        }
        return pages.render(.data, values, frame: frame("Data: \(context.survey.title)", visit))
    }

    /// The table: the system columns, then `columns` (a header row of group labels above the
    /// questions' when the form has groups). Every text through `HTML.escape`.
    static func table(_ rows: [ExportedResponse], _ columns: [Column], _ exportColumns: ExportColumns, language: LanguageChoice,
                      names: [String: String], versionNumbers: [String: Int64], orgId: String) -> String {
        let e = HTML.escape
        let grouped = columns.contains { !$0.groups.isEmpty }
        let span = grouped ? " rowspan=\"2\"" : ""
        var top = "<tr>" + ["Received", "Submitted by", "Review state", "Version"].map { "<th scope=\"col\"\(span)>\($0)</th>" }.joined()
        var second = ""
        var i = 0
        while i < columns.count {
            let c = columns[i]
            if c.groups.isEmpty {
                top += "<th scope=\"col\"\(span) data-column=\"\(e(c.id))\">\(e(c.label))</th>"
                i += 1
                continue
            }
            var j = i
            while j < columns.count && columns[j].groups == c.groups { j += 1 }
            top += "<th scope=\"colgroup\" colspan=\"\(j - i)\" class=\"group\">\(e(c.groups.joined(separator: " › ")))</th>"
            for k in i..<j { second += "<th scope=\"col\" data-column=\"\(e(columns[k].id))\">\(e(columns[k].label))</th>" }
            i = j
        }
        var html = "<table class=\"data\"><thead>" + top + "</tr>" + (grouped ? "<tr>" + second + "</tr>" : "") + "</thead><tbody>"
        for r in rows {
            let url = "/console/orgs/\(orgId)/responses/\(r.responseId)"
            let row = ExportRow(r, versionNumber: versionNumbers[r.surveyVersionId], submitterName: names[r.submitter])
            html += "<tr data-response=\"\(e(r.responseId))\">"
            html += "<td><a href=\"\(e(url))\">\(e(Pages.time(r.receivedAt)))</a></td>"
            html += "<td>\(e(names[r.submitter] ?? r.submitter))</td>"
            html += "<td><span class=\"state state-\(e(r.reviewState.rawValue))\">\(e(ReviewDesk.label(r.reviewState)))</span></td>"
            html += "<td>\(row.versionNumber.map { "Version \($0)" } ?? "")</td>"
            for c in columns {
                html += "<td data-column=\"\(e(c.id))\">"
                if let q = c.question {
                    html += cell(q, exportColumns.cells(of: q, in: row), row.answers[q.id], language: language, orgId: orgId, label: c.label)
                } else {
                    let n = row.answers[c.id]?.arrayValue?.count ?? 0
                    html += "<a href=\"\(e(url))\" aria-label=\"\(e(c.label)): \(n) — open the response\">\(n)</a>"
                }
                html += "</td>"
            }
            html += "</tr>"
        }
        return html + "</tbody></table>"
    }

    /// One question's cell: the export's value (a choice by its label, a select_multiple's
    /// labels separated by commas, a geopoint as `lat, lon`, a file as a thumbnail or a link).
    static func cell(_ q: Question, _ cells: [Cell], _ value: JSONValue?, language: LanguageChoice, orgId: String, label: String) -> String {
        let e = HTML.escape
        let text = cells.first?.csvText ?? ""
        switch q.type {
        case .selectOne:
            return text.isEmpty ? "" : e(choiceLabel(q, text, language))
        case .selectMultiple:
            return e(text.split(separator: " ").map { choiceLabel(q, String($0), language) }.joined(separator: ", "))
        case .geopoint:
            guard cells.count >= 2, !cells[0].csvText.isEmpty, !cells[1].csvText.isEmpty else { return "" }
            return e(cells[0].csvText + ", " + cells[1].csvText)
        case .file:
            guard !text.isEmpty else { return "" }
            let url = "/console/orgs/\(orgId)/uploads/\(urlEncoded(text))"
            if !q.accept.isEmpty && q.accept.allSatisfy({ $0.hasPrefix("image/") }) {
                return "<a href=\"\(e(url))\"><img class=\"thumb\" src=\"\(e(url))\" alt=\"\(e(label)): \(e(text))\" loading=\"lazy\"></a>"
            }
            return "<a href=\"\(e(url))\">\(e(text))</a>"
        case .geotrace, .geoshape:
            guard let n = value?.arrayValue?.count else { return e(text) }
            return e("\(q.type == .geoshape ? "Shape" : "Line") of \(n) points")
        default:
            return e(text)
        }
    }

    static func choiceLabel(_ q: Question, _ name: String, _ language: LanguageChoice) -> String {
        guard let option = q.options.first(where: { $0.name == name }), let label = language.text(option.label), !label.isEmpty else { return name }
        return label
    }

    // MARK: Map

    /// The most points the page lists (the map itself shows every one, in clusters the server
    /// makes for each view: `…/clusters.json`).
    static let pointsListed = 500

    func map(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = visit.orgId, surveyId = request.parameter("surveyId")
        let user = try visit.member()
        let q = try ViewQuery(request.query)
        let context = try operations.dataViews.context(orgId: orgId, surveyId: surveyId, by: user)
        let language = LanguageChoice(context.latest, requested: request.query["lang"])
        let exportColumns = ExportColumns(definitions: context.versions.map(\.definition), splitSelectMultiples: false)
        let geo = exportColumns.questions.filter { $0.type == .geopoint }
        let field = request.query["geoField"].flatMap { f in geo.contains { $0.id == f } ? f : nil } ?? geo.first?.id
        let base = "/console/orgs/\(orgId)/surveys/\(surveyId)"
        let filters = filters(.map, q, context, user: user, orgId: orgId, surveyId: surveyId, language: language, extra: [
            "hasGeoFields": .flag(geo.count > 1),
            "geoFields": .list(geo.map { g in ["id": .text(g.id), "label": .text(language.text(g.labels) ?? g.label), "selected": .flag(g.id == field)] }),
        ])
        var values: [String: TemplateValue] = ["filters": .html(filters), "hasPoints": .flag(field != nil),
                                               "noPoints": .text("This survey has no location (geopoint) question, so there is nothing to map.")]
        var headers: [(String, String)] = []
        if let field {
            var er = ExportRequest(format: "geojson")
            er.reviewStates = q.filter.reviewStates
            er.surveyVersionId = q.filter.surveyVersionId
            er.submittedBy = q.filter.submittedBy
            er.fieldTaskId = q.filter.fieldTaskId
            er.receivedFrom = q.filter.receivedFrom
            er.receivedTo = q.filter.receivedTo
            let export = try operations.exports.openForView(orgId: orgId, surveyId: surveyId, by: user, er)
            defer { export.close() }
            let numbers = Dictionary(context.versions.map { ($0.record.surveyVersionId, $0.record.number) }, uniquingKeysWith: { a, _ in a })
            var listed: [[String: TemplateValue]] = [], more = false
            while let r = try export.next() {
                let row = ExportRow(r, versionNumber: numbers[r.surveyVersionId], submitterName: context.names[r.submitter])
                guard let point = row.answers[field]?.objectValue, let lat = point["lat"]?.doubleValue, let lon = point["lon"]?.doubleValue else { continue }
                if listed.count == Self.pointsListed { more = true; break }
                listed.append(["url": .text("/console/orgs/\(orgId)/responses/\(r.responseId)"),
                               "label": .text("\(r.clientSubmissionId) · \(context.names[r.submitter] ?? r.submitter) · \(Pages.time(r.receivedAt))"),
                               "lat": .text(Cell.number(lat).csvText), "lon": .text(Cell.number(lon).csvText)])
            }
            let e = q.exportQuery
            let selection = "?geoField=" + urlEncoded(field) + (e.isEmpty ? "" : "&" + e)
            values["pointsUrl"] = .text(base + "/points.json" + selection)
            values["geojsonUrl"] = .text(base + "/points.geojson" + selection)
            values["clustersUrl"] = .text(base + "/clusters.json" + selection)
            values["listed"] = .list(listed)
            values["hasListed"] = .flag(!listed.isEmpty)
            values["morePoints"] = .text(more ? "The first \(Self.pointsListed) points are listed here; the map shows every one." : "")
            values["shown"] = .text(listed.isEmpty ? "No located responses under these filters."
                                    : more ? "More than \(Self.pointsListed) located responses under these filters." : "\(listed.count) located response\(listed.count == 1 ? "" : "s") under these filters.")
            values["tiles"] = .text(tiles?.url ?? "")
            values["attribution"] = .text(tiles?.attribution ?? "")
            values["noTiles"] = .text(tiles == nil ? "This server shows no map tiles: the points are drawn on a plain background." : "")
            values["traces"] = .text(exportColumns.questions.filter { $0.type == .geotrace }.map(\.id).joined(separator: " "))
            values["shapes"] = .text(exportColumns.questions.filter { $0.type == .geoshape }.map(\.id).joined(separator: " "))
            values["responseBase"] = .text("/console/orgs/\(orgId)/responses/")
            if !console.mapAssets.complete {
                values["noTiles"] = .text("The map's scripts are not installed on this server (Debian packages libjs-leaflet and libjs-leaflet.markercluster, for its styles); the points are listed below.")
            }
            headers.append(("Content-Security-Policy", Self.mapPolicy(tiles: tiles?.url)))
        }
        return pages.render(.map, values, frame: frame("Map: \(context.survey.title)", visit), headers: headers)
    }

    /// The map page's policy: the console's, plus its own scripts, its points (same origin)
    /// and images from the tile server.
    static func mapPolicy(tiles: String?) -> String {
        var images = "'self'"
        if let tiles, let scheme = tiles.range(of: "://") {
            let rest = tiles[scheme.upperBound...]
            let host = rest.prefix { $0 != "/" }
            let origin = String(tiles[..<scheme.upperBound]) + host.replacingOccurrences(of: "{s}", with: "*")
            // A host with another placeholder cannot be named: the scheme stands for it.
            images += " " + (origin.contains("{") ? String(tiles[..<scheme.lowerBound]) + ":" : origin)
        }
        return "default-src 'none'; script-src 'self'; style-src 'self'; img-src \(images); connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    }

    // MARK: Summary

    func summary(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = visit.orgId, surveyId = request.parameter("surveyId")
        let user = try visit.member()
        let q = try ViewQuery(request.query)
        let s = try operations.dataViews.summary(orgId: orgId, surveyId: surveyId, by: user, q.filter)
        let language = LanguageChoice(s.context.latest, requested: request.query["lang"])
        let filters = filters(.summary, q, s.context, user: user, orgId: orgId, surveyId: surveyId, language: language)
        var blocks = ""
        // Above the questions: responses per day, and per collector.
        var perDay: [Int64: Int] = [:], perCollector: [String: Int] = [:]
        for (submitter, day, count) in s.perSubmitterDay {
            perDay[day, default: 0] += count
            perCollector[submitter, default: 0] += count
        }
        let dayRows = perDay.keys.sorted().map { (label: Pages.date($0 * 86_400_000), count: perDay[$0] ?? 0, share: nil as String?) }
        blocks += Self.block("responses-per-day", "Responses per day", body: Self.bars(dayRows, caption: "Responses per day", firstColumn: "Day"))
        let collectorRows = perCollector.map { (label: s.context.names[$0.key] ?? $0.key, count: $0.value, share: nil as String?) }
            .sorted { $0.count != $1.count ? $0.count > $1.count : $0.label < $1.label }
        var byCollector = Self.bars(collectorRows, caption: "Responses per collector", firstColumn: "Collector")
        if perDay.count > 1 && perCollector.count > 1 {
            byCollector += Self.dayByCollector(s.perSubmitterDay, names: s.context.names)
        }
        blocks += Self.block("responses-per-collector", "Responses per collector", body: byCollector)
        for b in s.questions {
            let label = language.text(b.question.labels) ?? b.question.label
            var body = "<p class=\"answered\">Answered <strong>\(b.answered)</strong> · not answered <strong>\(b.notAnswered)</strong></p>"
            if let inRepeat = b.repeatLabel {
                // Inside a repeat: every instance is counted (a household's members, each one).
                let name = language.text(inRepeat) ?? inRepeat.text(in: nil)
                body = "<p class=\"hint\">Counted in each “\(HTML.escape(name))” of every response.</p>" + body
            }
            switch b.figures {
            case .choices(let choices):
                let rows = choices.map { c in
                    (label: Self.choiceLabel(b.question, c.name, language), count: c.count, share: b.answered > 0 ? Self.percent(c.count, of: b.answered) : nil)
                }
                body += Self.bars(rows, caption: label, firstColumn: "Choice")
            case .numbers(let figures?):
                let n = { (d: Double) in Cell.number(d).csvText }
                body += "<dl class=\"figures\"><dt>Count</dt><dd>\(figures.count)</dd><dt>Min</dt><dd>\(n(figures.min))</dd>"
                    + "<dt>Median</dt><dd>\(n(figures.median))</dd><dt>Mean</dt><dd>\(n(figures.mean))</dd><dt>Max</dt><dd>\(n(figures.max))</dd></dl>"
                let rows = figures.histogram.enumerated().map { i, count -> (label: String, count: Int, share: String?) in
                    let lo = figures.min + Double(i) * figures.binWidth
                    let label: String
                    if figures.binWidth == 0 { label = n(figures.min) }
                    else if b.question.type == .integer && figures.binWidth == 1 { label = n(lo) }
                    else { label = Self.short(lo) + " – " + Self.short(i == figures.histogram.count - 1 ? figures.max : lo + figures.binWidth) }
                    return (label, count, nil)
                }
                body += Self.bars(rows, caption: "\(label): how many answers in each range", firstColumn: "Range")
            case .numbers(nil):
                body += "<p class=\"hint\">No numbers yet.</p>"
            case .days(let days):
                body += Self.bars(days.map { (label: $0.day, count: $0.count, share: nil as String?) }, caption: "\(label): answers per day", firstColumn: "Day")
            case .answered:
                break
            }
            blocks += Self.block("q-" + b.question.id, label, body: body, kind: b.question.type.rawValue)
        }
        let values: [String: TemplateValue] = [
            "filters": .html(filters), "blocks": .html(blocks),
            "shown": .text("\(s.total) response\(s.total == 1 ? "" : "s") under these filters."),
        ]
        return pages.render(.summary, values, frame: frame("Summary: \(s.context.survey.title)", visit))
    }

    static func block(_ id: String, _ heading: String, body: String, kind: String? = nil) -> String {
        let e = HTML.escape
        let hid = "h-" + String(id.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) && $0.isASCII ? Character($0) : "-" })
        return "<section class=\"card summary-block\" aria-labelledby=\"\(e(hid))\"\(kind.map { " data-type=\"\(e($0))\"" } ?? "")>"
            + "<h2 id=\"\(e(hid))\">\(e(heading))</h2>" + body + "</section>"
    }

    /// Rows of a label, a count, an optional share and a bar: a table (what a screen reader and a
    /// reader without styles get) whose last cell draws the bar in SVG.
    static func bars(_ rows: [(label: String, count: Int, share: String?)], caption: String, firstColumn: String) -> String {
        let e = HTML.escape
        guard !rows.isEmpty else { return "<p class=\"hint\">Nothing yet.</p>" }
        let top = max(1, rows.map(\.count).max() ?? 1)
        let shares = rows.contains { $0.share != nil }
        var html = "<table class=\"bars\"><caption class=\"visually-hidden\">\(e(caption))</caption><thead><tr><th scope=\"col\">\(e(firstColumn))</th>"
            + "<th scope=\"col\" class=\"num\">Count</th>" + (shares ? "<th scope=\"col\" class=\"num\">Share</th>" : "")
            + "<th scope=\"col\"><span class=\"visually-hidden\">Bar</span></th></tr></thead><tbody>"
        for r in rows {
            let width = Double(r.count) / Double(top) * 100
            html += "<tr><th scope=\"row\">\(e(r.label))</th><td class=\"num\">\(r.count)</td>"
                + (shares ? "<td class=\"num\">\(e(r.share ?? ""))</td>" : "")
                + "<td class=\"bar\"><svg viewBox=\"0 0 100 10\" preserveAspectRatio=\"none\" aria-hidden=\"true\" focusable=\"false\">"
                + "<rect x=\"0\" y=\"0\" height=\"10\" width=\"\(String(format: "%.2f", width))\"></rect></svg></td></tr>"
        }
        return html + "</tbody></table>"
    }

    /// Responses per day for each collector: a table of days by collectors.
    static func dayByCollector(_ rows: [(submitter: String, day: Int64, count: Int)], names: [String: String]) -> String {
        let e = HTML.escape
        let collectors = Array(Set(rows.map(\.submitter))).sorted { (names[$0] ?? $0) < (names[$1] ?? $1) }
        let days = Array(Set(rows.map(\.day))).sorted()
        var counts: [String: Int] = [:]
        for r in rows { counts["\(r.submitter) \(r.day)"] = r.count }
        var html = "<details class=\"by-day\"><summary>Each collector per day</summary><div class=\"table-scroll\"><table class=\"list\"><thead><tr><th scope=\"col\">Day</th>"
        html += collectors.map { "<th scope=\"col\" class=\"num\">\(e(names[$0] ?? $0))</th>" }.joined() + "</tr></thead><tbody>"
        for d in days {
            html += "<tr><th scope=\"row\">\(Pages.date(d * 86_400_000))</th>"
            html += collectors.map { "<td class=\"num\">\(counts["\($0) \(d)"] ?? 0)</td>" }.joined() + "</tr>"
        }
        return html + "</tbody></table></div></details>"
    }

    static func percent(_ n: Int, of total: Int) -> String {
        let p = Double(n) / Double(total) * 100
        return (p == p.rounded() ? String(Int(p)) : String(format: "%.1f", p)) + " %"
    }

    /// A range's end for a label: at most 4 significant digits.
    static func short(_ d: Double) -> String { String(format: "%.4g", d) }
}
