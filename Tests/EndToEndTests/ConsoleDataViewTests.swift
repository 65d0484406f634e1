import Foundation
import SurveyDomain
import Testing
@testable import SurveyStorage

/// The console's Data, Summary and Map views against a real server, on either engine: the table
/// holds what the CSV export holds for the same filters, pages miss and repeat nothing while
/// responses arrive, the summary counts what the test sent, and a collector sees only their own.
@Suite struct ConsoleDataViewTests {
    typealias Session = ConsoleAdminTests.Session

    static func both(_ en: String, _ es: String) -> JSONValue { ["English (en)": .string(en), "Español (es)": .string(es)] }

    /// Groups, a repeat, two languages, skip logic, every kind of figure the summary draws.
    static let definition: JSONValue = [
        "title": "Water points", "defaultLanguage": "English (en)",
        "questions": [
            ["id": "source", "type": "select_one", "label": both("Water source", "Fuente"), "required": true,
             "choices": [["name": "well", "label": both("Well", "Pozo")], ["name": "borehole", "label": both("Borehole", "Perforación")],
                         ["name": "river", "label": both("River", "Río")]]],
            ["id": "depth", "type": "decimal", "label": both("Depth", "Profundidad"), "relevant": "${source} = 'well'"],
            ["id": "household", "type": "group", "label": both("Household", "Hogar"), "children": [
                ["id": "size", "type": "integer", "label": both("People", "Personas"), "required": true],
                ["id": "uses", "type": "select_multiple", "label": both("Uses", "Usos"),
                 "choices": [["name": "drink", "label": both("Drinking", "Beber")], ["name": "wash", "label": both("Washing", "Lavar")],
                             ["name": "farm", "label": both("Farming", "Cultivo")]]],
                ["id": "visited", "type": "date", "label": both("Visited on", "Visitado")],
            ]],
            ["id": "members", "type": "repeat", "label": both("Members", "Miembros"), "children": [
                ["id": "member_name", "type": "text", "label": both("Name", "Nombre")],
            ]],
            ["id": "comment", "type": "text", "label": both("Comment", "Comentario")],
            ["id": "place", "type": "geopoint", "label": both("Place", "Lugar")],
        ],
    ]

    /// The i-th response's answers: every figure varies with i, some answers are left out.
    static func answers(_ i: Int) -> [String: JSONValue] {
        let source = ["well", "borehole", "river", "well"][i % 4]
        var a: [String: JSONValue] = ["source": .string(source), "size": .number(Double(1 + i % 7))]
        if source == "well" && i % 3 != 0 { a["depth"] = .number(Double(i) * 1.25) }
        if i % 5 != 0 { a["uses"] = .array((["drink", "wash", "farm"].enumerated().filter { (i >> $0.offset) & 1 == 1 || $0.offset == 0 }).map { .string($0.element) }) }
        if i % 2 == 0 { a["visited"] = .string("2026-11-\(10 + i % 3)") }
        if i % 4 != 3 { a["members"] = .array((0..<(i % 3)).map { ["member_name": .string("P\($0)")] }) }
        if i % 3 == 1 { a["comment"] = .string(i % 2 == 0 ? "=SUM(A1)" : "dry, \"old\" pump") }
        if i % 6 != 5 { a["place"] = ["lat": .number(52 + Double(i) / 100), "lon": .number(4.5 - Double(i) / 200)] }
        return a
    }

    struct Setup {
        let f: Fixture
        let survey: (surveyId: String, versionId: String, contentHash: String)
        let secondToken: String
        let secondId: String
        /// Per response id: who sent it and its answers.
        var sent: [String: (submitter: String, answers: [String: JSONValue])] = [:]
        var base: String { "/console/orgs/\(f.orgId)/surveys/\(survey.surveyId)" }

        init() throws {
            f = try Fixture()
            survey = try f.publishSurvey(definition: ConsoleDataViewTests.definition)
            let u = try f.client.post("/v1/orgs/\(f.orgId)/users", token: f.adminToken, ["name": "Dana Second", "roles": ["collector"]])
            guard u.status == 201, let t = u.json?["token"]?.stringValue, let id = u.json?["userId"]?.stringValue else { throw TestFailure("user: \(u.status)") }
            secondToken = t
            secondId = id
        }

        mutating func send(_ range: Range<Int>, second: (Int) -> Bool = { $0 % 3 == 2 }) throws {
            for i in range {
                let token = second(i) ? secondToken : f.collectorToken
                let a = ConsoleDataViewTests.answers(i)
                let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: token,
                                          ResponseTests.submission("data-view-\(10_000 + i)", survey, answers: .object(a)))
                guard r.status == 201, let id = r.json?["responseId"]?.stringValue else { throw TestFailure("submit \(i): \(r.status) \(r.text)") }
                sent[id] = (second(i) ? secondId : f.collectorId, a)
            }
        }
    }

    // MARK: reading pages

    /// Text of markup: tags dropped, entities read.
    static func text(_ html: Substring) -> String {
        var out = "", inTag = false
        for c in html {
            if c == "<" { inTag = true } else if c == ">" { inTag = false } else if !inTag { out.append(c) }
        }
        return out.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&quot;", with: "\"")
            .replacingOccurrences(of: "&#39;", with: "'").replacingOccurrences(of: "&amp;", with: "&").trimmingCharacters(in: .whitespaces)
    }

    /// The data table's rows in page order: responseId and each question column's text.
    static func tableRows(_ html: String) -> [(id: String, cells: [String: String])] {
        html.components(separatedBy: "<tr data-response=\"").dropFirst().map { chunk in
            let id = String(chunk.prefix { $0 != "\"" })
            let row = chunk.components(separatedBy: "</tr>")[0]
            var cells: [String: String] = [:]
            for piece in row.components(separatedBy: "<td data-column=\"").dropFirst() {
                let column = String(piece.prefix { $0 != "\"" })
                let inside = piece.drop { $0 != ">" }.dropFirst()
                cells[column] = text(inside.prefix(upTo: inside.range(of: "</td>")!.lowerBound))
            }
            return (id, cells)
        }
    }

    static func nextLink(_ html: String) -> String? {
        guard let r = html.range(of: "<a rel=\"next\" href=\"") else { return nil }
        return String(html[r.upperBound...].prefix { $0 != "\"" }).replacingOccurrences(of: "&amp;", with: "&")
    }

    /// RFC 4180 records.
    static func csv(_ s: String) -> [[String]] {
        var rows: [[String]] = [], row: [String] = [], field = "", quoted = false, i = s.startIndex
        while i < s.endIndex {
            let c = s[i]
            if quoted {
                if c == "\"" {
                    let n = s.index(after: i)
                    if n < s.endIndex && s[n] == "\"" { field.append("\""); i = n } else { quoted = false }
                } else { field.append(c) }
            } else if c == "\"" { quoted = true }
            else if c == "," { row.append(field); field = "" }
            else if c == "\r\n" || c == "\n" { row.append(field); rows.append(row); row = []; field = "" }
            else { field.append(c) }
            i = s.index(after: i)
        }
        if !field.isEmpty || !row.isEmpty { row.append(field); rows.append(row) }
        return rows
    }

    // MARK: the table

    /// Every cell of the table is the CSV export's value for the same filters, shown as the
    /// contract says (a choice by its label, a select_multiple's labels joined by commas, a
    /// geopoint as "lat, lon", a repeat as its count), in both languages; the export button
    /// carries the same filters and downloads the same CSV.
    @Test func theTableHoldsWhatTheCSVExportHolds() throws {
        var s = try Setup()
        try s.send(0..<24)
        let f = s.f
        let reviewer = try Session(f, token: f.reviewerToken)
        let labels: [String: [String: String]] = [
            "source": ["well": "Well", "borehole": "Borehole", "river": "River"], "uses": ["drink": "Drinking", "wash": "Washing", "farm": "Farming"]]
        let spanish: [String: String] = ["well": "Pozo", "borehole": "Perforación", "river": "Río"]
        for query in ["", "submittedBy=\(s.secondId)", "submittedBy=\(f.collectorId)&receivedFrom=2020-01-01T00:00"] {
            let page = try reviewer.get(s.base + "/data?size=250" + (query.isEmpty ? "" : "&" + query))
            #expect(page.status == 200)
            let rows = Self.tableRows(page.text)
            // The same filters through the API's export (RFC 3339 times).
            let apiQuery = query.replacingOccurrences(of: "2020-01-01T00:00", with: "2020-01-01T00:00:00Z")
            let csv = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(s.survey.surveyId)/responses.csv" + (apiQuery.isEmpty ? "" : "?" + apiQuery), token: f.reviewerToken)
            #expect(csv.status == 200)
            let records = Self.csv(csv.text)
            let header = records[0]
            let byId = Dictionary(records.dropFirst().map { ($0[0], $0) }, uniquingKeysWith: { a, _ in a })
            func col(_ r: [String], _ name: String) -> String { r[header.firstIndex(of: name)!] }
            #expect(rows.count == byId.count && !rows.isEmpty)
            #expect(Set(rows.map(\.id)) == Set(byId.keys))
            #expect(rows.map(\.id) == rows.map(\.id).sorted(by: >), "newest first")
            for row in rows {
                let r = try #require(byId[row.id])
                #expect(row.cells["source"] == labels["source"]![col(r, "source")])
                #expect(row.cells["depth"] == col(r, "depth"))
                #expect(row.cells["size"] == col(r, "size"))
                #expect(row.cells["uses"] == col(r, "uses").split(separator: " ").map { labels["uses"]![String($0)]! }.joined(separator: ", "))
                #expect(row.cells["visited"] == col(r, "visited"))
                #expect(row.cells["members"] == col(r, "members"))
                let comment = col(r, "comment")
                #expect(row.cells["comment"] == (comment.hasPrefix("'=") ? String(comment.dropFirst()) : comment))  // the CSV's formula guard
                let lat = col(r, "place.lat"), lon = col(r, "place.lon")
                #expect(row.cells["place"] == (lat.isEmpty ? "" : "\(lat), \(lon)"))
            }
            // The export button: exactly this selection, the same bytes as the API's CSV.
            let href = try #require(page.text.range(of: "href=\"" + s.base + "/download?format=csv").map { String(page.text[page.text.index($0.lowerBound, offsetBy: 6)...].prefix { $0 != "\"" }) })
            let download = try reviewer.get(href.replacingOccurrences(of: "&amp;", with: "&"))
            #expect(download.status == 200)
            #expect(Self.csv(download.text) == records)
        }
        // The group's label heads its questions; the other language's labels, chosen in the URL.
        let en = try reviewer.get(s.base + "/data")
        #expect(en.text.contains("scope=\"colgroup\" colspan=\"3\" class=\"group\">Household</th>"))
        #expect(en.text.contains(">Water source</th>") && en.text.contains(">People</th>"))
        let es = try reviewer.get(s.base + "/data?lang=" + "Español (es)".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        #expect(es.text.contains(">Fuente</th>") && es.text.contains(">Hogar</th>"))
        for row in Self.tableRows(es.text) {
            let source = try #require(s.sent[row.id]?.answers["source"]?.stringValue)
            #expect(row.cells["source"] == spanish[source])
        }
        // Columns picked in the URL: only those.
        let picked = try reviewer.get(s.base + "/data?picked=1&show.size=1&show.place=1")
        let firstRow = try #require(Self.tableRows(picked.text).first)
        #expect(Set(firstRow.cells.keys) == ["size", "place"])
        // The survey page links the three views.
        let admin = try Session(f, token: f.adminToken)
        let surveyPage = try admin.get(s.base)
        for v in ["data", "map", "summary"] { #expect(surveyPage.text.contains("href=\"\(s.base)/\(v)\"")) }
    }

    /// Pages of 50 by keyset: following "Next" while responses keep arriving lists every response
    /// that existed at the start exactly once; the new ones appear on the first page.
    @Test func pagesMissAndRepeatNothingWhileResponsesArrive() throws {
        var s = try Setup()
        try s.send(0..<120, second: { _ in false })
        let before = Set(s.sent.keys)
        let reviewer = try Session(s.f, token: s.f.reviewerToken)
        var page = try reviewer.get(s.base + "/data?size=50")
        var seen: [String] = [], pages = 0
        while true {
            pages += 1
            let rows = Self.tableRows(page.text).map(\.id)
            #expect(rows.count <= 50)
            seen += rows
            try s.send((1000 + pages * 10)..<(1000 + pages * 10 + 7), second: { _ in false })  // arriving meanwhile
            guard let next = Self.nextLink(page.text) else { break }
            #expect(next.contains("before=") && next.contains("size=50"))
            page = try reviewer.get(next)
        }
        #expect(pages == 3)
        #expect(seen.count == Set(seen).count, "no response twice")
        #expect(Set(seen) == before, "every response once, and none that arrived after the first page")
        let again = Self.tableRows(try reviewer.get(s.base + "/data?size=250").text).map(\.id)
        #expect(Set(again.prefix(s.sent.count - before.count)) == Set(s.sent.keys).subtracting(before), "new ones on top")
    }

    // MARK: the summary

    /// Blocks of the summary page by their heading: each row's label and count.
    static func summaryBlocks(_ html: String) -> [String: (body: String, rows: [(String, Int)])] {
        var out: [String: (String, [(String, Int)])] = [:]
        for chunk in html.components(separatedBy: "<section class=\"card summary-block\"").dropFirst() {
            let body = chunk.components(separatedBy: "</section>")[0]
            guard let h = body.range(of: "<h2"), let close = body.range(of: "</h2>") else { continue }
            let heading = text(body[h.lowerBound..<close.lowerBound])
            let rows = body.components(separatedBy: "<th scope=\"row\">").dropFirst().map { r -> (String, Int) in
                (text(r.prefix(upTo: r.range(of: "</th>")!.lowerBound)),
                 Int(text(r.components(separatedBy: "<td class=\"num\">")[1].prefix { $0 != "<" })) ?? -1)
            }
            out[heading] = (body, rows)
        }
        return out
    }

    /// The summary's counts are what the test computes from the answers it sent: choices with
    /// their counts, "not answered" only where the question was relevant, number figures, days,
    /// responses per day and per collector — under a filter too.
    @Test func theSummaryCountsWhatWasSent() throws {
        var s = try Setup()
        try s.send(0..<40)
        let f = s.f
        let reviewer = try Session(f, token: f.reviewerToken)
        for (query, keep) in [("", { (_: String) in true }), ("submittedBy=\(s.secondId)", { $0 == s.secondId })] {
            let responses = s.sent.values.filter { keep($0.submitter) }.map(\.answers)
            let page = try reviewer.get(s.base + "/summary" + (query.isEmpty ? "" : "?" + query))
            #expect(page.status == 200)
            #expect(page.text.contains("\(responses.count) responses under these filters."))
            let blocks = Self.summaryBlocks(page.text)
            func rows(_ heading: String) -> [String: Int] {
                Dictionary((blocks[heading]?.rows ?? []).map { ($0.0, $0.1) }, uniquingKeysWith: +)
            }
            func notAnswered(_ heading: String) -> Int? {
                guard let b = blocks[heading]?.body, let r = b.range(of: "not answered <strong>") else { return nil }
                return Int(b[r.upperBound...].prefix { $0.isNumber })
            }
            let sources = ["well": "Well", "borehole": "Borehole", "river": "River"]
            #expect(rows("Water source") == Dictionary(uniqueKeysWithValues: sources.map { name, label in
                (label, responses.filter { $0["source"]?.stringValue == name }.count) }))
            #expect(notAnswered("Water source") == 0)
            // Depth: relevant only for a well; the others are in neither count.
            let wells = responses.filter { $0["source"]?.stringValue == "well" }
            let depths = wells.compactMap { $0["depth"]?.doubleValue }.sorted()
            #expect(notAnswered("Depth") == wells.count - depths.count)
            let depthBlock = try #require(blocks["Depth"]?.body)
            #expect(depthBlock.contains("<dt>Count</dt><dd>\(depths.count)</dd>"))
            let median = depths.count % 2 == 1 ? depths[depths.count / 2] : (depths[depths.count / 2 - 1] + depths[depths.count / 2]) / 2
            func figure(_ body: String, _ name: String) -> Double? {
                guard let r = body.range(of: "<dt>\(name)</dt><dd>") else { return nil }
                return Double(body[r.upperBound...].prefix { $0 != "<" })
            }
            #expect(figure(depthBlock, "Min") == depths.first && figure(depthBlock, "Max") == depths.last && figure(depthBlock, "Median") == median)
            #expect(abs((figure(depthBlock, "Mean") ?? 0) - depths.reduce(0, +) / Double(depths.count)) < 1e-9)
            // People (an integer in a group): one range per value here.
            let sizes = responses.compactMap { $0["size"]?.doubleValue }
            let sizeRows = rows("People")
            for v in Set(sizes) { #expect(sizeRows[String(Int(v))] == sizes.filter { $0 == v }.count) }
            #expect(sizeRows.values.reduce(0, +) == responses.count)
            // Uses: each choice's responses; "not answered" those without it.
            let uses = responses.compactMap { $0["uses"]?.arrayValue?.compactMap(\.stringValue) }
            #expect(rows("Uses") == ["Drinking": uses.filter { $0.contains("drink") }.count, "Washing": uses.filter { $0.contains("wash") }.count,
                                     "Farming": uses.filter { $0.contains("farm") }.count])
            #expect(notAnswered("Uses") == responses.count - uses.count)
            // Visited: per day as written.
            var days: [String: Int] = [:]
            for r in responses { if let d = r["visited"]?.stringValue { days[d, default: 0] += 1 } }
            #expect(rows("Visited on") == days)
            #expect(notAnswered("Comment") == responses.filter { $0["comment"] == nil }.count)
            // Name, inside the repeat Members: every member of every response counted.
            let members = responses.flatMap { $0["members"]?.arrayValue ?? [] }
            let nameBlock = try #require(blocks["Name"]?.body)
            #expect(nameBlock.contains("Counted in each “Members” of every response."), "\(nameBlock)")
            #expect(nameBlock.contains("Answered <strong>\(members.count)</strong> · not answered <strong>0</strong>"), "\(nameBlock)")
            // Above the questions: per day (all sent today) and per collector, by name.
            #expect(rows("Responses per day") == [String(Timestamp.format(Timestamp.nowMillis()).prefix(10)): responses.count])
            var collectors: [String: Int] = [:]
            for r in s.sent.values where keep(r.submitter) { collectors[r.submitter == s.secondId ? "Dana Second" : "Cole Collector", default: 0] += 1 }
            let names = rows("Responses per collector")
            #expect(names.values.reduce(0, +) == responses.count && names["Dana Second"] == collectors["Dana Second"])
        }
    }

    /// The summary follows a change of a response's answers and of its review state as it is
    /// committed: an edit moves a count from one choice to another and adds its number, and the
    /// review-state filter finds the edited response.
    @Test func theSummaryFollowsAnEditAndItsReviewState() throws {
        var s = try Setup()
        try s.send(0..<8)
        let f = s.f
        let reviewer = try Session(f, token: f.reviewerToken)
        func counts(_ query: String = "") throws -> (page: String, sources: [String: Int], depth: String) {
            let page = try reviewer.get(s.base + "/summary" + query)
            #expect(page.status == 200)
            let blocks = Self.summaryBlocks(page.text)
            return (page.text, Dictionary((blocks["Water source"]?.rows ?? []).map { ($0.0, $0.1) }, uniquingKeysWith: +), blocks["Depth"]?.body ?? "")
        }
        let before = try counts()
        // A river response (i = 2) edited into a well with a depth.
        let river = try #require(s.sent.first { $0.value.answers["source"]?.stringValue == "river" }?.key)
        var answers = try #require(s.sent[river]?.answers)
        answers["source"] = "well"
        answers["depth"] = 3.5
        let edit = try f.client.request("PUT", "/v1/orgs/\(f.orgId)/responses/\(river)/answers", token: f.reviewerToken,
                                        json: ["expectedRevision": 1, "answers": .object(answers)])
        #expect(edit.status == 200, "\(edit.text)")
        let after = try counts()
        #expect(after.sources["Well"] == (before.sources["Well"] ?? 0) + 1 && after.sources["River"] == (before.sources["River"] ?? 0) - 1)
        let wells = s.sent.values.map(\.answers).filter { $0["source"]?.stringValue == "well" }
        #expect(after.depth.contains("<dt>Count</dt><dd>\(wells.compactMap { $0["depth"] }.count + 1)</dd>"), "\(after.depth)")
        #expect(after.depth.contains("<dt>Min</dt><dd>3.5</dd>"), "\(after.depth)")
        let edited = try counts("?reviewState=edited")
        #expect(edited.page.contains("1 responses under these filters.") || edited.page.contains("1 response under these filters."))
        #expect(edited.sources["Well"] == 1 && edited.sources["River"] == 0 && edited.sources["Borehole"] == 0)
    }

    /// Responses stored without summary facts (by a surveyd from before they were kept, or by
    /// another program) get them when the server next starts, and the summary counts them as it
    /// counted them before.
    @Test(.enabled(if: !TestEngine.isPostgres, "removes rows from the SQLite file")) func responsesStoredWithoutFactsGetThemAtTheNextStart() throws {
        var s = try Setup()
        try s.send(0..<30)
        let reviewer = try Session(s.f, token: s.f.reviewerToken)
        let before = try reviewer.get(s.base + "/summary")
        #expect(before.status == 200 && before.text.contains("30 responses under these filters."))
        s.f.server.stop()
        let conn = try Connection(path: s.f.server.dataDir + "/surveyd.sqlite", readOnly: false)
        try conn.run("DELETE FROM response_facts WHERE response_id IN (SELECT response_id FROM response_facts ORDER BY response_id LIMIT 20)")
        #expect(try conn.query("SELECT COUNT(*) AS n FROM response_facts").first?.int("n") == 10)
        let (missing, report) = try MaintenanceTests.surveyd(["check", "--data-dir", s.f.server.dataDir])
        #expect(missing == 1 && report.components(separatedBy: "no summary facts (the server makes them at its next start)").count == 21, "\(report)")
        let again = try TestServer(dataDir: s.f.server.dataDir)
        #expect(try again.count("SELECT COUNT(*) AS n FROM response_facts") == 30)
        let after = try Session(Fixture(server: again, from: s.f), token: s.f.reviewerToken).get(s.base + "/summary")
        #expect(after.status == 200)
        let blocks = { (html: String) in Self.summaryBlocks(html).mapValues { $0.rows.map { "\($0.0)=\($0.1)" } } }
        #expect(blocks(after.text) == blocks(before.text) && !blocks(after.text).isEmpty)
        let (ok, clean) = try MaintenanceTests.surveyd(["check", "--data-dir", s.f.server.dataDir])
        #expect(ok == 0, "\(clean)")
    }

    // MARK: who sees what

    /// A collector's views hold only their own responses, whatever the URL asks; every view keeps
    /// working while the subscription is expired.
    @Test func aCollectorSeesOnlyTheirOwnAndNothingIsGated() throws {
        var s = try Setup()
        try s.send(0..<18)
        let f = s.f
        let own = Set(s.sent.filter { $0.value.submitter == f.collectorId }.map(\.key))
        let collector = try Session(f, token: f.collectorToken)
        for query in ["", "?submittedBy=\(s.secondId)"] {
            let data = try collector.get(s.base + "/data" + query)
            #expect(data.status == 200)
            let ids = Set(Self.tableRows(data.text).map(\.id))
            #expect(query.isEmpty ? ids == own : ids.isEmpty)
            #expect(!data.text.contains("Dana Second"))
            #expect(!data.text.contains("/download?"), "no export button: exports are for reviewers and admins")
        }
        let summary = try collector.get(s.base + "/summary")
        #expect(summary.text.contains("\(own.count) responses under these filters."))
        let map = try collector.get(s.base + "/map")
        #expect(map.status == 200)
        let listed = Set(map.text.components(separatedBy: "/responses/").dropFirst().map { String($0.prefix { $0 != "\"" }) }).filter { $0.hasPrefix("rsp_") }
        let located = own.filter { s.sent[$0]?.answers["place"] != nil }
        #expect(listed == located)
        let points = try collector.get(s.base + "/points.geojson?geoField=place&submittedBy=\(s.secondId)")
        #expect(points.status == 200 && (points.json?["features"]?.arrayValue ?? [.null]).isEmpty)
        let mine = try collector.get(s.base + "/points.geojson")
        #expect(Set((mine.json?["features"]?.arrayValue ?? []).compactMap { $0["properties"]?["responseId"]?.stringValue }) == located)
        // The map's compact points: the same responses, each as [lat, lon, responseId, …].
        let compactIds = { (v: JSONValue?) in Set((v?["points"]?.arrayValue ?? []).compactMap { $0.arrayValue.flatMap { $0.count > 2 ? $0[2].stringValue : nil } }) }
        let compact = try collector.get(s.base + "/points.json")
        #expect(compact.status == 200 && compactIds(compact.json) == located)
        #expect(map.text.contains("/points.json?geoField=place"))
        let others = try collector.get(s.base + "/points.json?geoField=place&submittedBy=\(s.secondId)")
        #expect(others.status == 200 && compactIds(others.json).isEmpty && others.json?["points"]?.arrayValue?.isEmpty == true)
        // Expired: reads are never gated.
        try f.expire()
        let reviewer = try Session(f, token: f.reviewerToken)
        for v in ["data", "summary", "map"] {
            let page = try reviewer.get(s.base + "/" + v)
            #expect(page.status == 200)
            #expect(page.text.contains("expired"))
        }
        #expect(Self.tableRows(try reviewer.get(s.base + "/data").text).count == s.sent.count)
        #expect(try collector.get(s.base + "/data").status == 200)
    }

    // MARK: the map's clusters

    /// `…/clusters.json` of a view: its clusters' counts and single points.
    struct Clusters {
        let total: Int
        let inView: Int
        /// The counts of the clusters and single points (each point 1).
        let counted: Int
        let clusterCount: Int
        /// The single points' response ids.
        let singles: Set<String>
        let kept: Bool

        init(_ r: Reply) throws {
            guard r.status == 200, let doc = r.json else { throw TestFailure("clusters: \(r.status) \(r.text.prefix(300))") }
            total = Int(doc["total"]?.doubleValue ?? -1)
            inView = Int(doc["inView"]?.doubleValue ?? -1)
            let clusters = doc["clusters"]?.arrayValue ?? []
            let points = doc["points"]?.arrayValue ?? []
            clusterCount = clusters.count
            counted = clusters.reduce(points.count) { $0 + Int($1.arrayValue.flatMap { $0.count > 2 ? $0[2].doubleValue : nil } ?? 0) }
            singles = Set(points.compactMap { $0.arrayValue.flatMap { $0.count > 2 ? $0[2].stringValue : nil } })
            kept = r.header("Surveyd-Map-Points") == "kept"
        }
    }

    static func clusters(_ signedIn: Session, _ s: Setup, _ query: String, zoom: Int = 0, bbox: String = "-180,-90,180,90") throws -> Clusters {
        try Clusters(try signedIn.get(s.base + "/clusters.json?zoom=\(zoom)&bbox=\(bbox)" + (query.isEmpty ? "" : "&" + query)))
    }

    /// The located responses of `s.sent` inside a box, by `keep`.
    static func located(_ s: Setup, south: Double = -90, west: Double = -180, north: Double = 90, east: Double = 180,
                        _ keep: (String, String) -> Bool = { _, _ in true }) -> Set<String> {
        Set(s.sent.compactMap { id, r -> String? in
            guard keep(id, r.submitter), let lat = r.answers["place"]?["lat"]?.doubleValue, let lon = r.answers["place"]?["lon"]?.doubleValue,
                  lat >= south, lat <= north, lon >= west, lon <= east else { return nil }
            return id
        })
    }

    /// The clusters of a view count every located response under the filter inside its box, at
    /// every zoom, for whoever asks: a reviewer sees all, a collector their own only, whatever the
    /// URL asks; from zoom 18 the points come singly, the very responses located there.
    @Test func theMapsClustersCountTheLocatedResponsesUnderTheFilterInTheBox() throws {
        var s = try Setup()
        try s.send(0..<30)
        let f = s.f
        let reviewer = try Session(f, token: f.reviewerToken)
        let all = Self.located(s)
        #expect(all.count == 25)
        for zoom in [0, 4, 9, 12, 15, 17] {
            let c = try Self.clusters(reviewer, s, "geoField=place", zoom: zoom)
            #expect(c.total == all.count && c.inView == all.count && c.counted == all.count, "zoom \(zoom)")
        }
        let low = try Self.clusters(reviewer, s, "", zoom: 3)
        #expect(low.clusterCount >= 1 && low.counted == all.count, "points 0.3° apart share a cluster at zoom 3")
        let singly = try Self.clusters(reviewer, s, "", zoom: 18)
        #expect(singly.clusterCount == 0 && singly.singles == all)
        // A filter: one collector's responses, and a review state.
        let second = Self.located(s) { _, submitter in submitter == s.secondId }
        let bySecond = try Self.clusters(reviewer, s, "submittedBy=\(s.secondId)", zoom: 18)
        #expect(bySecond.total == second.count && bySecond.singles == second && !second.isEmpty)
        let approved = try Self.clusters(reviewer, s, "reviewState=approved", zoom: 7)
        #expect(approved.total == 0 && approved.counted == 0)
        // A box: only what lies in it (the points run from 52.00°N 4.5°E north-west by 0.01° and 0.005°).
        let box = (south: 52.045, west: 4.0, north: 52.155, east: 5.0)
        let inBox = Self.located(s, south: box.south, west: box.west, north: box.north, east: box.east)
        #expect(!inBox.isEmpty && inBox.count < all.count)
        for zoom in [5, 11, 18] {
            let c = try Self.clusters(reviewer, s, "", zoom: zoom, bbox: "\(box.west),\(box.south),\(box.east),\(box.north)")
            #expect(c.total == all.count && c.inView == inBox.count && c.counted == inBox.count, "zoom \(zoom)")
            if zoom == 18 { #expect(c.singles == inBox) }
        }
        let elsewhere = try Self.clusters(reviewer, s, "", zoom: 8, bbox: "-80,-40,-60,-20")
        #expect(elsewhere.inView == 0 && elsewhere.counted == 0 && elsewhere.total == all.count)
        // Across the antimeridian: a box from 170°E to 370°E (10°E) holds them all.
        let across = try Self.clusters(reviewer, s, "", zoom: 2, bbox: "170,-80,370,80")
        #expect(across.counted == all.count)
        // A collector: their own only, whatever they ask.
        let collector = try Session(f, token: f.collectorToken)
        let own = Self.located(s) { _, submitter in submitter == f.collectorId }
        let mine = try Self.clusters(collector, s, "", zoom: 18)
        #expect(mine.total == own.count && mine.singles == own)
        let others = try Self.clusters(collector, s, "submittedBy=\(s.secondId)", zoom: 4)
        #expect(others.total == 0 && others.counted == 0)
        #expect(try Self.clusters(collector, s, "", zoom: 6).counted == own.count)
        // The reviewer's list is not the collector's: after the collector's requests, still all.
        #expect(try Self.clusters(reviewer, s, "", zoom: 18).singles == all)
        // Expired: still read.
        try f.expire()
        #expect(try Self.clusters(collector, s, "", zoom: 6).counted == own.count)
    }

    /// A view that cannot be read is refused with the field at fault (422), never guessed at.
    @Test func aMapViewThatCannotBeReadIsRefused() throws {
        var s = try Setup()
        try s.send(0..<3)
        let reviewer = try Session(s.f, token: s.f.reviewerToken)
        let bad = ["", "zoom=3", "bbox=-180,-90,180,90", "zoom=x&bbox=-180,-90,180,90", "zoom=23&bbox=-180,-90,180,90",
                   "zoom=-1&bbox=-180,-90,180,90", "zoom=3.5&bbox=-180,-90,180,90", "zoom=99999999999999999999&bbox=-180,-90,180,90",
                   "zoom=3&bbox=-180,-90,180", "zoom=3&bbox=-180,-90,180,90,1", "zoom=3&bbox=nan,-90,180,90",
                   "zoom=3&bbox=-180,-90,inf,90", "zoom=3&bbox=10,-90,5,90", "zoom=3&bbox=-180,10,180,5", "zoom=3&bbox=-190,-90,180,90",
                   "zoom=3&bbox=-180,-91,180,90", "zoom=3&bbox=0,-90,361,90", "zoom=3&bbox=1e999,-90,180,90", "zoom=3&bbox=%201,-90,180,90",
                   "zoom=3&bbox=-180,-90,180,90&lines=yes"]
        for query in bad {
            let r = try reviewer.get(s.base + "/clusters.json?" + query)
            #expect(r.status == 422 || r.status == 400, "\(query): \(r.status)")
        }
        #expect(try reviewer.get(s.base + "/clusters.json?zoom=3&bbox=-180,-90,180,90&geoField=source").status == 422)
        #expect(try reviewer.get(s.base + "/clusters.json?zoom=22&bbox=-180,-90,180,90").status == 200)
    }

    /// The points kept in memory between requests: a new response, an edit that moves one and
    /// a review are each seen by the next request; without a change the list is kept.
    @Test func theMapSeesANewResponseAndAnEditOnTheNextRequest() throws {
        var s = try Setup()
        try s.send(0..<5)
        let f = s.f
        let reviewer = try Session(f, token: f.reviewerToken)
        let first = try Self.clusters(reviewer, s, "", zoom: 18)
        #expect(first.total == 5 && !first.kept)
        let again = try Self.clusters(reviewer, s, "", zoom: 12, bbox: "4,51,5,53")
        #expect(again.kept && again.counted == 5)
        // A new response.
        try s.send(6..<7)
        let added = try Self.clusters(reviewer, s, "", zoom: 18)
        #expect(added.total == 6 && !added.kept && added.singles == Self.located(s))
        #expect(try Self.clusters(reviewer, s, "", zoom: 18).kept)
        // An edit moving a point far away: the next request finds it there, not here.
        let moved = try #require(s.sent.first { $0.value.answers["place"] != nil }?.key)
        var answers = try #require(s.sent[moved]?.answers)
        answers["place"] = ["lat": -33.9, "lon": 18.4]
        let edit = try f.client.request("PUT", "/v1/orgs/\(f.orgId)/responses/\(moved)/answers", token: f.reviewerToken,
                                        json: ["expectedRevision": 1, "answers": .object(answers)])
        #expect(edit.status == 200, "\(edit.text)")
        let here = try Self.clusters(reviewer, s, "", zoom: 18, bbox: "4,51,5,53")
        #expect(!here.kept && here.total == 6 && here.singles.count == 5 && !here.singles.contains(moved))
        let there = try Self.clusters(reviewer, s, "", zoom: 18, bbox: "18,-34,19,-33")
        #expect(there.kept && there.singles == [moved])
        // A filter of its state follows it: edited.
        #expect(try Self.clusters(reviewer, s, "reviewState=edited", zoom: 18).singles == [moved])
    }
}
