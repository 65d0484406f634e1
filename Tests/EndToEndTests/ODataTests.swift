import Foundation
import Synchronization
import Testing
import SurveyDomain
import SurveyStorage

/// The OData feed on a real server: `$metadata`, rows equal to the CSV export's cells, paging
/// while responses arrive, filters, 501s, and who may read (bearer, Basic with a password or a
/// token, a collector's own rows). Clients no one here wrote read it in `Tests/OData/test_odata.py`.
@Suite struct ODataTests {
    static let definition: JSONValue = ["title": "Wells", "questions": [
        ["id": "size", "type": "integer", "label": "People"],
        ["id": "when", "type": "date", "label": "Visited"],
        ["id": "loc", "type": "geopoint", "label": "Where"],
        ["id": "tags", "type": "select_multiple", "label": "Uses", "choices": ["drink", "wash", "farm"]],
        ["id": "note", "type": "text", "label": "Note"],
        ["id": "site", "type": "group", "label": "Site", "children": [
            ["id": "district", "type": "text", "label": "District"],
            ["id": "depth", "type": "decimal", "label": "Depth"],
        ]],
        ["id": "members", "type": "repeat", "label": "Member", "children": [
            ["id": "name", "type": "text", "label": "Name"],
            ["id": "age", "type": "integer", "label": "Age"],
            ["id": "visits", "type": "repeat", "label": "Visit", "children": [
                ["id": "day", "type": "date", "label": "Day"],
            ]],
        ]],
    ]]

    struct World {
        let f: Fixture
        let survey: (surveyId: String, versionId: String, contentHash: String)
        var root: String { "/v1/orgs/\(f.orgId)/surveys/\(survey.surveyId).svc" }

        init(server: TestServer? = nil) throws {
            f = try Fixture(server: try server ?? TestServer())
            survey = try f.publishSurvey(reviewRequired: true, definition: ODataTests.definition)
        }

        @discardableResult
        func submit(_ id: String, _ answers: JSONValue, token: String? = nil) throws -> String {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: token ?? f.collectorToken, ResponseTests.submission(id, survey, answers: answers))
            guard r.status == 201, let rid = r.json?["responseId"]?.stringValue else { throw TestFailure("submit: \(r.status) \(r.text)") }
            return rid
        }

        func get(_ path: String, token: String? = nil, headers: [String: String] = [:]) throws -> Reply {
            try f.client.request("GET", path, token: token ?? (headers["Authorization"] == nil ? f.reviewerToken : nil), headers: headers)
        }

        /// `Submissions?<options>`, each value percent-encoded.
        func table(_ name: String = "Submissions", _ options: [(String, String)] = [], token: String? = nil, headers: [String: String] = [:]) throws -> Reply {
            let q = options.map { "\($0.0)=\(ODataTests.encode($0.1))" }.joined(separator: "&")
            return try get(root + "/" + name + (q.isEmpty ? "" : "?" + q), token: token, headers: headers)
        }

        /// Every row of a table, following `@odata.nextLink` (relative to the server).
        func all(_ name: String = "Submissions", _ options: [(String, String)] = [], pageSize: Int? = nil, between: () throws -> Void = {}) throws -> [JSONValue] {
            var rows: [JSONValue] = []
            let prefer = pageSize.map { ["Prefer": "odata.maxpagesize=\($0)"] } ?? [:]
            var r = try table(name, options, headers: prefer.merging(["Authorization": "Bearer \(f.reviewerToken)"]) { a, _ in a })
            var pages = 0
            while true {
                // A link that never ends (a page that repeats) fails rather than hangs.
                pages += 1
                guard pages <= 200 else { throw TestFailure("more than 200 pages: the links do not end") }
                guard r.status == 200, let doc = r.json else { throw TestFailure("page: \(r.status) \(r.text)") }
                rows += doc["value"]?.arrayValue ?? []
                guard let next = doc["@odata.nextLink"]?.stringValue else { break }
                try between()
                let path = String(next[next.range(of: "/v1/")!.lowerBound...])
                r = try get(path, headers: prefer.merging(["Authorization": "Bearer \(f.reviewerToken)"]) { a, _ in a })
            }
            return rows
        }
    }

    static func encode(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }

    static func basic(_ user: String, _ password: String) -> [String: String] {
        ["Authorization": "Basic " + Base64.encode(Array("\(user):\(password)".utf8))]
    }

    static let first: JSONValue = ["size": 4, "when": "2026-11-02", "loc": ["lat": -1.25, "lon": 36.5, "accuracy": 5, "altitude": 1650],
                                   "tags": ["drink", "farm"], "note": "=SUM(A1)", "district": "Kibera", "depth": 12.5,
                                   "members": [["name": "Ana", "age": 41, "visits": [["day": "2026-10-01"], ["day": "2026-10-20"]]],
                                               ["name": "Leo", "age": 6]]]
    static let second: JSONValue = ["size": 2, "note": "plain, \"quoted\"", "members": [["name": "Mo", "age": 30]]]

    @Test func metadataDescribesEveryTableGroupAndKey() throws {
        let w = try World()
        let m = try w.get(w.root + "/$metadata")
        #expect(m.status == 200 && m.header("content-type") == "application/xml" && m.header("odata-version") == "4.0")
        let xml = m.text
        #expect(xml.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"))
        for piece in [
            #"<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">"#,
            #"<Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="surveyd.survey">"#,
            #"<Property Name="submissionDate" Type="Edm.DateTimeOffset"/>"#,
            #"<ComplexType Name="site">"#, #"<Property Name="depth" Type="Edm.Decimal" Scale="variable"/>"#,
            #"<EntityType Name="Submissions">"#, #"<PropertyRef Name="__id"/>"#,
            #"<Property Name="__system" Type="surveyd.survey.SubmissionSystem" Nullable="false"/>"#,
            #"<Property Name="size" Type="Edm.Int64"/>"#, #"<Property Name="when" Type="Edm.Date"/>"#,
            #"<Property Name="loc" Type="Edm.GeographyPoint" SRID="4326"/>"#, #"<Property Name="site" Type="surveyd.survey.site"/>"#,
            #"<NavigationProperty Name="members" Type="Collection(surveyd.survey.members)"/>"#,
            #"<Property Name="__Submissions-id" Type="Edm.String" Nullable="false"/>"#,
            #"<Property Name="__members-id" Type="Edm.String" Nullable="false"/>"#,
            #"<EntitySet Name="Submissions" EntityType="surveyd.survey.Submissions">"#,
            #"<NavigationPropertyBinding Path="members" Target="Submissions.members"/>"#,
            #"<NavigationPropertyBinding Path="visits" Target="Submissions.members.visits"/>"#,
            #"<EntitySet Name="Submissions.members.visits" EntityType="surveyd.survey.visits"/>"#,
        ] {
            #expect(xml.contains(piece), "missing \(piece)")
        }
        let doc = try w.get(w.root)
        #expect(doc.status == 200 && doc.header("content-type") == "application/json;odata.metadata=minimal")
        #expect(doc.json?["value"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["Submissions", "Submissions.members", "Submissions.members.visits"])
        #expect(doc.json?["@odata.context"]?.stringValue == "http://127.0.0.1" + w.root + "/$metadata")
    }

    @Test func rowsEqualTheCSVExportCellByCell() throws {
        let w = try World()
        let a = try w.submit("odata-row-0001", Self.first)
        let b = try w.submit("odata-row-0002", Self.second)
        let csv = try w.f.client.get("/v1/orgs/\(w.f.orgId)/surveys/\(w.survey.surveyId)/responses.csv", token: w.f.reviewerToken)
        let rows = ExportTests.parseCSV(csv.text)
        let page = try w.table()
        #expect(page.status == 200 && page.header("content-type") == "application/json;odata.metadata=minimal")
        let value = page.json?["value"]?.arrayValue ?? []
        #expect(value.count == 2)
        // The CSV quotes a formula with a leading ' (its only change to a text).
        func cell(_ name: String, _ rid: String) -> String {
            let c = ExportTests.column(rows, name, of: rid) ?? "?"
            return c.hasPrefix("'") ? String(c.dropFirst()) : c
        }
        func text(_ v: JSONValue?) -> String {
            switch v {
            case .string(let s)?: return s
            case .number(let d)?: return CanonicalJSON.number(d)
            case .null?, nil: return ""
            default: return "?"
            }
        }
        for (row, rid) in zip(value, [a, b]) {
            #expect(row["__id"]?.stringValue == cell("clientSubmissionId", rid))
            #expect(row["__system"]?["submissionDate"]?.stringValue == cell("receivedAt", rid))
            #expect(row["__system"]?["submitterId"]?.stringValue == cell("submittedBy", rid))
            #expect(row["__system"]?["submitterName"]?.stringValue == cell("submitterName", rid))
            #expect(row["__system"]?["reviewState"]?.stringValue == cell("reviewState", rid))
            #expect(row["__system"]?["formVersion"]?.stringValue == cell("versionNumber", rid))
            for q in ["size", "when", "tags", "note"] { #expect(text(row[q]) == cell(q, rid), "\(q) of \(rid)") }
            for q in ["district", "depth"] { #expect(text(row["site"]?[q]) == cell(q, rid), "site/\(q) of \(rid)") }
            let coordinates = row["loc"]?["coordinates"]?.arrayValue
            #expect(text(coordinates?.first) == cell("loc.lon", rid) && text(coordinates?.dropFirst().first) == cell("loc.lat", rid))
            #expect(text(row["loc"]?["properties"]?["accuracy"]) == cell("loc.accuracy", rid))
        }
        // Types as $metadata says: numbers are numbers, a geopoint GeoJSON with its altitude.
        #expect(value[0]["size"] == 4 && value[0]["site"]?["depth"] == 12.5 && value[0]["when"] == "2026-11-02")
        #expect(value[0]["loc"] == ["type": "Point", "coordinates": [36.5, -1.25, 1650], "properties": ["accuracy": 5]])
        #expect(value[1]["loc"] == .null && value[1]["when"] == .null && value[1]["site"] == ["district": nil, "depth": nil])
        #expect(value[0]["__system"]?["attachmentsExpected"] == 0 && value[0]["__system"]?["edits"] == 0)
        #expect(try w.table("Submissions", [("$wkt", "true")]).json?["value"]?[0]?["loc"] == "POINT (36.5 -1.25)")

        // Repeats: their own tables, keyed like the export's KEY, naming the parent row.
        let members = try w.table("Submissions.members").json?["value"]?.arrayValue ?? []
        #expect(members.map { $0["__id"]?.stringValue ?? "" } == ["\(a)/members[1]", "\(a)/members[2]", "\(b)/members[1]"])
        #expect(members.map { $0["__Submissions-id"]?.stringValue ?? "" } == ["odata-row-0001", "odata-row-0001", "odata-row-0002"])
        #expect(members[0]["name"] == "Ana" && members[0]["age"] == 41 && members[2]["name"] == "Mo")
        let visits = try w.table("Submissions.members.visits").json?["value"]?.arrayValue ?? []
        #expect(visits.map { $0["__id"]?.stringValue ?? "" } == ["\(a)/members[1]/visits[1]", "\(a)/members[1]/visits[2]"])
        #expect(visits.map { $0["__members-id"]?.stringValue ?? "" } == ["\(a)/members[1]", "\(a)/members[1]"])
        #expect(visits[1]["day"] == "2026-10-20")
        // $expand=*: every level inside its parent row.
        let expanded = try w.table("Submissions", [("$expand", "*"), ("$filter", "__id eq 'odata-row-0001'")]).json?["value"]?[0]
        #expect(expanded?["members"]?.arrayValue?.count == 2 && expanded?["members"]?[0]?["visits"]?.arrayValue?.count == 2)
        #expect(expanded?["members"]?[0]?["visits"]?[1]?["day"] == "2026-10-20")
        let one = try w.table("Submissions", [("$expand", "members"), ("$top", "1")]).json?["value"]?[0]
        #expect(one?["members"]?[0]?["visits"] == nil && one?["members"]?[0]?["name"] == "Ana")
    }

    /// A plain read writes each row from the stored bytes; any `$filter` takes the general path,
    /// which builds the row as a value first. `$filter=true` keeps every row, so the two bodies
    /// must be the same bytes, for every kind of answer and every table.
    @Test func plainReadsWriteWhatTheGeneralPathWrites() throws {
        let w = try World()
        let answers: [JSONValue] = [
            Self.first, Self.second, [:],
            ["note": "tab\there \u{1}ctl \\ back \"q\" / \u{1F600} émoji", "district": "", "tags": [], "size": 0],
            ["size": -12, "depth": 0.001, "loc": ["lat": 0.000001, "lon": -123.456789012345, "accuracy": 0], "when": "2026-01-31"],
            ["depth": 123456789.125, "loc": ["lat": 1, "lon": 2, "altitude": -0.5], "tags": ["wash"], "note": "=1+1, \"x\""],
            ["members": [["name": "x"], ["age": 3, "visits": []], ["visits": [["day": "2026-03-01"]]]], "note": "line\nbreak\r\n"],
        ]
        for (i, a) in answers.enumerated() { try w.submit(String(format: "odata-same-%04d", i), a) }
        for table in ["Submissions", "Submissions.members", "Submissions.members.visits"] {
            for extra in [[], [("$wkt", "true")]] as [[(String, String)]] {
                let plain = try w.table(table, extra), general = try w.table(table, extra + [("$filter", "true")])
                #expect(plain.status == 200 && general.status == 200)
                #expect(plain.text == general.text, "\(table) \(extra)")
                #expect(plain.json?["value"]?.arrayValue?.isEmpty == false, "\(table)")
            }
        }
    }

    @Test func pagesStayCorrectWhileResponsesArrive() throws {
        let w = try World()
        var before: [String] = []
        for i in 0..<30 { before.append(try w.submit(String(format: "odata-page-%04d", i), ["size": .number(Double(i))]) ) }
        // Responses keep arriving from another thread (20 a second, steadily: a read includes what
        // arrives while it pages, so arrivals faster than a low-priority reader pages would never
        // let it end), and between every two pages.
        let stop = Mutex(false)
        let arrived = Mutex(0)
        let writer = Thread {
            var n = 0
            while !stop.withLock({ $0 }) {
                _ = try? w.submit(String(format: "odata-late-%04d", n), ["size": 1000])
                n += 1
                arrived.withLock { $0 = n }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        writer.start()
        defer { stop.withLock { $0 = true } }
        var pages = 0
        let first = try w.table("Submissions", [("$count", "true")], headers: ["Prefer": "odata.maxpagesize=7", "Authorization": "Bearer \(w.f.reviewerToken)"])
        #expect(first.header("preference-applied") == "odata.maxpagesize=7" && first.json?["value"]?.arrayValue?.count == 7)
        #expect((first.json?["@odata.count"]?.intValue ?? 0) >= 30)
        let rows = try w.all("Submissions", [("$select", "__id")], pageSize: 7) {
            pages += 1
            _ = try w.submit("odata-between-\(pages)", ["size": 2000])
        }
        stop.withLock { $0 = true }
        let ids = rows.compactMap { $0["__id"]?.stringValue }
        #expect(Set(ids).count == ids.count, "a row came twice")
        for i in 0..<30 { #expect(ids.contains(String(format: "odata-page-%04d", i)), "odata-page-\(i) is missing") }
        #expect(pages >= 4 && rows.allSatisfy { $0.objectValue?.keys.sorted() == ["__id"] })
        // Ordered by an answer, across pages, the same: every row once, in order.
        let ordered = try w.all("Submissions", [("$orderby", "size desc"), ("$filter", "size lt 30")], pageSize: 4) {
            _ = try w.submit("odata-ordered-\(UUID().uuidString.prefix(8))", ["size": 15])
        }
        let sizes = ordered.compactMap { $0["size"]?.intValue }
        #expect(ordered.count >= 30 && sizes == sizes.sorted(by: >))
        let early = ordered.compactMap { $0["__id"]?.stringValue }.filter { $0.hasPrefix("odata-page-") }
        #expect(early.count == 30 && Set(early).count == 30)
        // Repeat tables page the same way.
        for i in 0..<5 { try w.submit("odata-rep-\(i)", ["members": [["name": .string("a\(i)")], ["name": .string("b\(i)")], ["name": .string("c\(i)")]]]) }
        let members = try w.all("Submissions.members", [], pageSize: 2) { try w.submit("odata-rep-late-\(UUID().uuidString.prefix(8))", ["members": [["name": "z"]]]) }
        let names = members.compactMap { $0["name"]?.stringValue }.filter { $0 != "z" }
        #expect(names == (0..<5).flatMap { ["a\($0)", "b\($0)", "c\($0)"] })
        _ = arrived
    }

    @Test func filtersOrderingSelectTopSkipAndCount() throws {
        let w = try World()
        try w.submit("odata-fil-0001", ["size": 1, "district": "North", "when": "2026-01-05"])
        try w.submit("odata-fil-0002", ["size": 5, "district": "South", "when": "2026-02-05"])
        try w.submit("odata-fil-0003", ["size": 9, "note": "it's"])
        let own = try w.f.client.post("/v1/orgs/\(w.f.orgId)/users", token: w.f.adminToken, ["name": "Second", "roles": ["collector"]])
        let other = own.json!["token"]!.stringValue!, otherId = own.json!["userId"]!.stringValue!
        try w.submit("odata-fil-0004", ["size": 5], token: other)
        func ids(_ filter: String, _ more: [(String, String)] = []) throws -> [String] {
            let r = try w.table("Submissions", [("$filter", filter)] + more)
            guard r.status == 200 else { return ["\(r.status): \(r.text)"] }
            return r.json?["value"]?.arrayValue?.compactMap { $0["__id"]?.stringValue.map { String($0.suffix(1)) } } ?? []
        }
        #expect(try ids("size eq 5") == ["2", "4"])
        #expect(try ids("size gt 1 and size le 5") == ["2", "4"])
        #expect(try ids("size lt 2 or size ge 9") == ["1", "3"])
        #expect(try ids("not (size eq 5)") == ["1", "3"])
        #expect(try ids("size ne 5") == ["1", "3"])
        #expect(try ids("site/district eq 'South'") == ["2"])
        #expect(try ids("site/district eq null") == ["3", "4"])
        #expect(try ids("note eq 'it''s'") == ["3"])
        #expect(try ids("when ge 2026-02-01") == ["2"])
        #expect(try ids("__system/submitterId eq '\(otherId)'") == ["4"])
        #expect(try ids("__system/reviewState eq 'submitted' and size eq 9") == ["3"])
        #expect(try ids("__system/submissionDate gt 2020-01-01T00:00:00Z") == ["1", "2", "3", "4"])
        #expect(try ids("__system/submissionDate lt 2020-01-01") == [])
        #expect(try ids("__id eq 'odata-fil-0002'") == ["2"])
        #expect(try ids("true") == ["1", "2", "3", "4"])
        #expect(try ids("size gt 0", [("$orderby", "size desc,__id asc")]) == ["3", "2", "4", "1"])
        #expect(try ids("size gt 0", [("$orderby", "site/district"), ("$top", "2")]) == ["3", "4"])
        #expect(try ids("size gt 0", [("$skip", "1"), ("$top", "2")]) == ["2", "3"])
        let counted = try w.table("Submissions", [("$filter", "size eq 5"), ("$count", "true"), ("$top", "1")])
        #expect(counted.json?["@odata.count"] == 2 && counted.json?["value"]?.arrayValue?.count == 1 && counted.json?["@odata.nextLink"] == nil)
        let selected = try w.table("Submissions", [("$select", "size,__system/reviewState"), ("$top", "1")]).json?["value"]?[0]
        // The key stays with whatever is selected.
        #expect(selected?["size"] == 1 && selected?["__system"] == ["reviewState": "submitted"] && selected?["__id"]?.stringValue != nil, "\(String(describing: selected))")
        #expect(selected?.objectValue?.count == 3)
        #expect(try w.table("Submissions", [("$filter", "age gt 3")], token: nil).status == 400)
        #expect(try ids("age gt 30") == ["400: {\"error\":{\"code\":\"400\",\"message\":\"$filter: there is no property age.\"}}"])
        let repeatFilter = try w.table("Submissions.members", [("$filter", "age gt 3")])
        #expect(repeatFilter.status == 200)
    }

    @Test func whatIsNotSupportedIs501AndWhatDoesNotExistIs400() throws {
        let w = try World()
        try w.submit("odata-501-0001", ["size": 3, "note": "x"])
        for (options, status) in [
            ([("$filter", "contains(note,'x')")], 501), ([("$filter", "size add 1 eq 4")], 501), ([("$filter", "size in (1,2)")], 501),
            ([("$filter", "members/any(m: m/age gt 3)")], 501), ([("$filter", "loc eq null")], 501), ([("$filter", "size eq @p")], 501),
            ([("$filter", "note eq duration'P1D'")], 501), ([("$search", "x")], 501), ([("$apply", "groupby((size))")], 501),
            ([("$compute", "size mul 2 as double")], 501), ([("$expand", "members($select=name)")], 501), ([("$format", "xml")], 501),
            ([("$filter", "nothing eq 1")], 400), ([("$filter", "size eq 'three'")], 400), ([("$filter", "site eq 'x'")], 400),
            ([("$filter", "size eq")], 400), ([("$filter", "(size eq 1")], 400), ([("$filter", "note eq 'open")], 400),
            ([("$orderby", "nothing")], 400), ([("$orderby", "size sideways")], 400), ([("$select", "nothing")], 400),
            ([("$expand", "nothing")], 400), ([("$top", "-1")], 400), ([("$skip", "x")], 400), ([("$count", "maybe")], 400),
            ([("$skiptoken", "forged")], 400), ([("$filter", String(repeating: "(", count: 40) + "size eq 1" + String(repeating: ")", count: 40))], 501),
            // A token whose time key is beyond Int64 ({"k":[["t",1e300]],…}) trapped the server (Fuzz/ODataQueries).
            ([("$skiptoken", "o1.eyJrIjpbWyJ0IiwxZTMwMF1dLCJuIjowLCJvIjowLCJyIjoiciJ9")], 400),
        ] as [([(String, String)], Int)] {
            let r = try w.table("Submissions", options)
            #expect(r.status == status, "\(options): \(r.status) \(r.text)")
            #expect(r.header("content-type") == "application/json" && r.json?["error"]?["code"]?.stringValue == String(status)
                    && !(r.json?["error"]?["message"]?.stringValue ?? "").isEmpty, "\(options): \(r.text)")
        }
        let byKey = try w.get(w.root + "/Submissions('odata-501-0001')")
        #expect(byKey.status == 501 && byKey.json?["error"]?["code"] == "501")
        // Not found keeps the API's problem (404 / 1005), for a table and for a survey.
        let noTable = try w.get(w.root + "/Nothing")
        #expect(noTable.status == 404 && noTable.json?["errorCode"] == 1005)
        let noSurvey = try w.get("/v1/orgs/\(w.f.orgId)/surveys/srv_nothing.svc/$metadata")
        #expect(noSurvey.status == 404 && noSurvey.json?["errorCode"] == 1005)
        // A custom option (no $) is ignored, as OData allows; a method other than GET is 405.
        #expect(try w.table("Submissions", [("anything", "1")]).status == 200)
        let post = try w.f.client.post(w.root + "/Submissions", token: w.f.reviewerToken, [:])
        #expect(post.status == 405 && post.header("allow") == "GET")
    }

    @Test func basicAndBearerAdmitTheSameRoles() throws {
        let c = try ConsoleTests.World()
        let f = c.f
        let root = "/v1/orgs/\(f.orgId)/surveys/\(c.survey.surveyId).svc"
        try c.submit("odata-auth-0001")
        let second = try f.client.post("/v1/orgs/\(f.orgId)/users", token: f.adminToken, ["name": "Other", "roles": ["collector"]])
        let otherToken = second.json!["token"]!.stringValue!
        _ = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: otherToken,
                              ResponseTests.submission("odata-auth-0002", c.survey, answers: ["size": 2]))
        func get(_ headers: [String: String], path: String = "/Submissions") throws -> Reply { try f.client.request("GET", root + path, headers: headers) }
        func ids(_ r: Reply) -> [String] { r.json?["value"]?.arrayValue?.compactMap { $0["__id"]?.stringValue } ?? [] }
        // A console user's email (any case) and password.
        let byPassword = try get(Self.basic("RAE@example.org", ConsoleTests.World.password))
        #expect(byPassword.status == 200 && ids(byPassword) == ["odata-auth-0001", "odata-auth-0002"])
        // Any user name with an API token as the password; the collector's own rows only.
        #expect(ids(try get(Self.basic("powerbi", f.reviewerToken))) == ["odata-auth-0001", "odata-auth-0002"])
        #expect(ids(try get(Self.basic("excel", otherToken))) == ["odata-auth-0002"])
        #expect(ids(try get(["Authorization": "Bearer \(f.collectorToken)"])) == ["odata-auth-0001"])
        #expect(try get(Self.basic("x", f.collectorToken), path: "/$metadata").status == 200)
        // Failures: 401 / 1007 with the Basic challenge.
        for headers in [Self.basic("rae@example.org", "not the password"), Self.basic("nobody@example.org", "whatever pass"),
                        Self.basic("x", "not-a-token"), Self.basic("", f.reviewerToken), ["Authorization": "Basic !!!"], [:],
                        ["Authorization": "Bearer nope"]] {
            let r = try get(headers)
            #expect(r.status == 401 && r.json?["errorCode"] == 1007 && r.header("www-authenticate") == "Basic realm=\"surveyd\"", "\(headers): \(r.status)")
        }
        // Another organization's reader gets the 404 of nothing; an operator is no member.
        let other = try Fixture(server: f.server)
        #expect(try get(["Authorization": "Bearer \(other.reviewerToken)"]).status == 404)
        #expect(try get(["Authorization": "Bearer \(f.server.operatorToken)"]).status == 404)
        // Reads are never gated.
        try f.expire()
        #expect(try get(Self.basic("rae@example.org", ConsoleTests.World.password)).status == 200)
        // The sign-in throttle counts failed Basic attempts: past its limit even the right password waits.
        for _ in 0..<12 { _ = try get(Self.basic("rae@example.org", "wrong password!")) }
        let throttled = try get(Self.basic("rae@example.org", ConsoleTests.World.password))
        #expect(throttled.status == 429 && throttled.json?["errorCode"] == 1030 && throttled.header("retry-after") != nil)
    }

    /// The survey's console page gives the feed's address and the steps for Power BI and Excel;
    /// the address it gives answers the service document to a token sent as Basic's password.
    @Test func theSurveyPageSaysHowToConnectPowerBIAndExcel() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        let page = try ConsoleAdminTests.Session(f, token: f.adminToken).get("/console/orgs/\(f.orgId)/surveys/\(v.surveyId)")
        #expect(page.text.contains("Connect Power BI or Excel"))
        let address = "/v1/orgs/\(f.orgId)/surveys/\(v.surveyId).svc"
        #expect(page.text.contains("http://127.0.0.1" + address), "\(page.text.prefix(3000))")
        let basic = "Basic " + Data("excel:\(f.adminToken)".utf8).base64EncodedString()
        let service = try f.client.request("GET", address, headers: ["Authorization": basic])
        #expect(service.status == 200, "\(service.text)")
        #expect(service.text.contains("Submissions"))
    }
}

private extension JSONValue {
    subscript(index: Int) -> JSONValue? { arrayValue.flatMap { $0.indices.contains(index) ? $0[index] : nil } }
}
