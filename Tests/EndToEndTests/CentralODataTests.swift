import Foundation
import Testing
import SurveyDomain

/// ODK Central's OData services on a real server: a form's (`/v1/projects/{n}/forms/{xmlFormId}.svc`)
/// is surveyd's own feed of that survey, row for row, but for Central's names in `__system`
/// (`reviewState`, `submitterId` as the actorId, `formVersion` as the XForm's version, in
/// `$filter` too); an entity list's (`…/datasets/{name}.svc/Entities`) is the list's own feed
/// with `creatorId` the actorId and `__system/updates`. A table comes whole unless a page size
/// is asked (pyodk reads `value` alone); pages link under Central's path. Admitted as every
/// Central route. (pyodk itself reads them in `Tests/Central/test_pyodk.py`.)
@Suite struct CentralODataTests {
    struct World {
        let o: ODataTests.World
        let projectId: Int
        let xmlFormId: String
        let formVersion: String
        var f: Fixture { o.f }
        var root: String { "/v1/projects/\(projectId)/forms/\(xmlFormId).svc" }

        init() throws {
            o = try ODataTests.World()
            let forms = try o.f.client.get("/v1/projects", token: o.f.adminToken)
            guard let id = forms.json?.arrayValue?.first?["id"]?.intValue else { throw TestFailure("projects: \(forms.text)") }
            projectId = id
            let listed = try o.f.client.get("/v1/projects/\(id)/forms", token: o.f.adminToken)
            guard let form = listed.json?.arrayValue?.first, let xmlFormId = form["xmlFormId"]?.stringValue,
                  let version = form["version"]?.stringValue else { throw TestFailure("forms: \(listed.text)") }
            self.xmlFormId = xmlFormId
            formVersion = version
        }

        func actorId(_ userId: String) throws -> String {
            let id = try f.server.rows("SELECT actor_id FROM users WHERE user_id = ?", [.text(userId)]).first?.int("actor_id")
            return try #require(id.map { String($0) })
        }

        /// Central's review PATCH, as a reviewer.
        func review(_ instanceId: String, _ state: String) throws {
            let r = try f.client.request("PATCH", "/v1/projects/\(projectId)/forms/\(xmlFormId)/submissions/\(instanceId)", token: f.reviewerToken,
                                         json: ["reviewState": .string(state)])
            guard r.status == 200 else { throw TestFailure("review \(instanceId): \(r.status) \(r.text)") }
        }

        func get(_ path: String, token: String? = nil, headers: [String: String] = [:]) throws -> Reply {
            try f.client.request("GET", path, token: token ?? f.reviewerToken, headers: headers)
        }

        /// `<root>/<table>?<options>`, each value percent-encoded.
        func table(_ name: String = "Submissions", _ options: [(String, String)] = [], root: String? = nil, token: String? = nil,
                   headers: [String: String] = [:]) throws -> Reply {
            let q = options.map { "\($0.0)=\(ODataTests.encode($0.1))" }.joined(separator: "&")
            return try get((root ?? self.root) + "/" + name + (q.isEmpty ? "" : "?" + q), token: token, headers: headers)
        }
    }

    /// Every page of a read, following `@odata.nextLink`; each link must start with `linkRoot`.
    static func pages(_ w: World, _ first: String, linkRoot: String, pageSize: Int) throws -> (rows: [JSONValue], pages: Int) {
        var rows: [JSONValue] = [], pages = 0
        var path: String? = first
        while let p = path {
            pages += 1
            guard pages <= 100 else { throw TestFailure("the links do not end") }
            let r = try w.get(p, headers: ["Prefer": "odata.maxpagesize=\(pageSize)"])
            guard r.status == 200, let doc = r.json else { throw TestFailure("page: \(r.status) \(r.text)") }
            #expect(r.header("preference-applied") == "odata.maxpagesize=\(pageSize)")
            rows += doc["value"]?.arrayValue ?? []
            path = nil
            if let next = doc["@odata.nextLink"]?.stringValue {
                #expect(next.hasPrefix(linkRoot), "\(next)")
                path = String(next.dropFirst("http://127.0.0.1".count))
            }
        }
        return (rows, pages)
    }

    /// A row of surveyd's own feed as Central's feed names it.
    static func inCentralNames(_ row: JSONValue, reviewState: JSONValue, submitter: String, formVersion: String) -> JSONValue {
        guard case .object(var o) = row, case .object(var system)? = o["__system"] else { return row }
        system["reviewState"] = reviewState
        system["submitterId"] = .string(submitter)
        system["formVersion"] = .string(formVersion)
        o["__system"] = .object(system)
        return .object(o)
    }

    @Test func aFormsFeedIsTheSurveysOwnFeedInCentralsNames() throws {
        let w = try World()
        try w.o.submit("central-odata-1", ODataTests.first)
        try w.o.submit("central-odata-2", ODataTests.second)
        try w.o.submit("central-odata-3", ["size": 9, "note": "third"])
        try w.review("central-odata-1", "approved")
        try w.review("central-odata-3", "hasIssues")
        let actor = try w.actorId(w.f.collectorId)
        let own = w.o.root

        // The service document and $metadata: the own feed's, links under Central's path.
        let doc = try w.get(w.root)
        #expect(doc.status == 200 && doc.header("content-type") == "application/json;odata.metadata=minimal", "\(doc.text)")
        #expect(doc.json?["@odata.context"]?.stringValue == "http://127.0.0.1" + w.root + "/$metadata")
        let ownDoc = try w.get(own), ownMetadata = try w.get(own + "/$metadata")
        #expect(doc.json?["value"] == ownDoc.json?["value"])
        let metadata = try w.get(w.root + "/$metadata")
        #expect(metadata.status == 200 && metadata.header("content-type") == "application/xml" && metadata.body == ownMetadata.body)

        // Row for row the own feed's, but for Central's names in __system.
        let central = try w.table()
        #expect(central.status == 200 && central.header("odata-version") == "4.0", "\(central.text)")
        #expect(central.json?["@odata.context"]?.stringValue == "http://127.0.0.1" + w.root + "/$metadata#Submissions")
        let rows = central.json?["value"]?.arrayValue ?? []
        let ownRows = try w.table(root: own).json?["value"]?.arrayValue ?? []
        #expect(rows.count == 3 && ownRows.count == 3)
        let states: [JSONValue] = ["approved", .null, "hasIssues"]
        for (i, (row, mine)) in zip(rows, ownRows).enumerated() {
            #expect(row == Self.inCentralNames(mine, reviewState: states[i], submitter: actor, formVersion: w.formVersion), "row \(i): \(row)")
        }
        #expect(ownRows.map { $0["__system"]?["reviewState"]?.stringValue } == ["approved", "submitted", "returned"])
        // The general path (any $filter) writes what the plain read writes.
        let general = try w.table("Submissions", [("$filter", "true")])
        #expect(general.body == central.body)
        // Repeat tables have no __system: the own feed's rows exactly.
        for name in ["Submissions.members", "Submissions.members.visits"] {
            let mine = try w.table(name, root: own).json?["value"]
            #expect(try w.table(name).json?["value"] == mine && mine?.arrayValue?.isEmpty == false, "\(name)")
        }
        let selected = try w.table("Submissions", [("$wkt", "true"), ("$select", "__id,loc,__system/reviewState")])
        #expect(selected.json?["value"]?.arrayValue?.first == ["__id": "central-odata-1", "loc": "POINT (36.5 -1.25)", "__system": ["reviewState": "approved"]])

        // $filter reads Central's names.
        func ids(_ options: [(String, String)]) throws -> [String] {
            let r = try w.table("Submissions", options)
            #expect(r.status == 200, "\(options): \(r.text)")
            return r.json?["value"]?.arrayValue?.compactMap { $0["__id"]?.stringValue } ?? []
        }
        #expect(try ids([("$filter", "__system/reviewState eq 'approved'")]) == ["central-odata-1"])
        #expect(try ids([("$filter", "__system/reviewState eq null")]) == ["central-odata-2"])
        #expect(try ids([("$filter", "__system/reviewState ne null and __system/reviewState ne 'approved'")]) == ["central-odata-3"])
        #expect(try ids([("$filter", "__system/reviewState eq 'submitted'")]) == [])
        #expect(try ids([("$filter", "__system/submitterId eq '\(actor)'")]).count == 3)
        #expect(try ids([("$filter", "__system/formVersion eq '\(w.formVersion)' and size gt 3")]) == ["central-odata-1", "central-odata-3"])

        // Whole unless a page size is asked: $top bounds it, $skip starts it, $count counts every match.
        let topped = try w.table("Submissions", [("$top", "2"), ("$skip", "1"), ("$count", "true")])
        #expect(topped.json?["@odata.count"] == 3 && topped.json?["@odata.nextLink"] == nil)
        #expect(topped.json?["value"]?.arrayValue?.compactMap { $0["__id"]?.stringValue } == ["central-odata-2", "central-odata-3"])
        #expect(central.json?["@odata.nextLink"] == nil && central.json?["@odata.count"] == nil)

        // Pages when asked: every link under Central's path, carrying the options.
        let paged = try Self.pages(w, w.root + "/Submissions?$count=true", linkRoot: "http://127.0.0.1" + w.root + "/Submissions?", pageSize: 1)
        #expect(paged.pages == 3 && paged.rows == rows)
        let members = try Self.pages(w, w.root + "/Submissions.members", linkRoot: "http://127.0.0.1" + w.root + "/Submissions.members?", pageSize: 2)
        let ownMembers = try w.table("Submissions.members", root: own)
        #expect(members.rows == ownMembers.json?["value"]?.arrayValue && members.pages == 2)
    }

    /// `__system/formVersion` is the XForm's `version` on Central's path (a team's reports
    /// filter on it), where the own feed names the version's number.
    @Test func formVersionIsTheXFormsVersion() throws {
        let f = try Fixture()
        let c = f.client
        let created = try c.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Visits"])
        let surveyId = try #require(created.json?["surveyId"]?.stringValue, "\(created.text)")
        let xform = """
            <?xml version="1.0"?>
            <h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa">
              <h:head><h:title>Visits</h:title><model>
                <instance><data id="visits" version="2026-12-a"><name/><meta><instanceID/></meta></data></instance>
                <bind nodeset="/data/name" type="string"/>
                <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
              </model></h:head>
              <h:body><input ref="/data/name"><label>Name</label></input></h:body>
            </h:html>
            """
        let published = try c.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, body: Array(xform.utf8),
                                      headers: ["Content-Type": "application/xml"])
        #expect(published.status == 201, "\(published.text)")
        let projectId = try #require(try c.get("/v1/projects", token: f.adminToken).json?.arrayValue?.first?["id"]?.intValue)
        let instance = #"<data id="visits" version="2026-12-a"><name>Ana</name><meta><instanceID>uuid:central-version-1</instanceID></meta></data>"#
        let sent = try c.request("POST", "/v1/projects/\(projectId)/forms/visits/submissions", token: f.collectorToken, body: Array(instance.utf8),
                                 headers: ["Content-Type": "application/xml"])
        #expect(sent.status == 200, "\(sent.text)")
        let central = try c.get("/v1/projects/\(projectId)/forms/visits.svc/Submissions", token: f.reviewerToken)
        let own = try c.get("/v1/orgs/\(f.orgId)/surveys/\(surveyId).svc/Submissions", token: f.reviewerToken)
        #expect(central.json?["value"]?.arrayValue?.first?["__system"]?["formVersion"] == "2026-12-a", "\(central.text)")
        #expect(own.json?["value"]?.arrayValue?.first?["__system"]?["formVersion"] == "1", "\(own.text)")
        #expect(central.json?["value"]?.arrayValue?.first?["name"] == "Ana" && central.json?["value"]?.arrayValue?.first?["__id"] == "uuid:central-version-1")
        let filtered = try c.get("/v1/projects/\(projectId)/forms/visits.svc/Submissions?$filter=__system/formVersion%20eq%20'2026-12-a'", token: f.reviewerToken)
        #expect(filtered.json?["value"]?.arrayValue?.count == 1, "\(filtered.text)")
    }

    /// Without a page size a table comes in one response, written a page at a time: more rows
    /// than a page, each once and in order, `$top` and `$skip` across the pages.
    @Test func aWholeTableIsWrittenAPageAtATime() throws {
        let w = try World()
        let n = 1_005
        for i in 0..<n { try w.o.submit(String(format: "central-whole-%05d", i), ["size": .number(Double(i))]) }
        let whole = try w.table("Submissions", [("$count", "true")])
        #expect(whole.status == 200 && whole.header("content-type") == "application/json;odata.metadata=minimal")
        let rows = whole.json?["value"]?.arrayValue ?? []
        #expect(whole.json?["@odata.count"] == .number(Double(n)) && whole.json?["@odata.nextLink"] == nil)
        #expect(rows.compactMap { $0["size"]?.doubleValue } == (0..<n).map(Double.init))
        let some = try w.table("Submissions", [("$skip", "3"), ("$top", "1001"), ("$select", "size")])
        #expect(some.json?["value"]?.arrayValue?.compactMap { $0["size"]?.doubleValue } == (3..<1004).map(Double.init))
        let filtered = try w.table("Submissions", [("$filter", "size ge 990"), ("$count", "true")])
        #expect(filtered.json?["@odata.count"] == 15 && filtered.json?["value"]?.arrayValue?.count == 15)
    }

    /// Admitted as every Central route: 401 → project 404 → form 404; any member reads, a
    /// collector only their own submissions; a query it cannot evaluate is OData's error with
    /// Central's `message` and `code`.
    @Test func admissionIsCentralsAndRefusalsKeepBothShapes() throws {
        let w = try World()
        let c = w.f.client
        try w.o.submit("central-mine-1", ["size": 1])
        let other = try c.post("/v1/orgs/\(w.f.orgId)/users", token: w.f.adminToken, ["name": "Other collector", "roles": ["collector"]])
        let otherToken = try #require(other.json?["token"]?.stringValue, "\(other.text)")
        try w.o.submit("central-theirs-1", ["size": 2], token: otherToken)

        let anonymous = try c.get(w.root + "/Submissions")
        #expect(anonymous.status == 401 && anonymous.json?["code"]?.doubleValue == 401.2 && anonymous.header("www-authenticate") == nil)
        let op = w.f.server.operatorToken
        let second = try c.post("/v1/orgs", token: op, ["name": "Second", "expiresAt": .string(Timestamp.format(Timestamp.nowMillis() + 86_400_000))])
        let secondProject = try #require(second.json?["projectId"]?.intValue)
        for path in ["/v1/projects/\(secondProject)/forms/\(w.xmlFormId).svc/Submissions", "/v1/projects/\(w.projectId)/forms/no_such_form.svc",
                     "/v1/projects/\(w.projectId)/forms/no_such_form.svc/$metadata", w.root + "/NoSuchTable",
                     "/v1/projects/\(secondProject)/datasets/households.svc/Entities", "/v1/projects/\(w.projectId)/datasets/households.svc/Entities"] {
            let r = try w.get(path, token: w.f.adminToken)
            #expect(r.status == 404 && r.json?["errorCode"]?.intValue == 1005 && r.json?["code"]?.doubleValue == 404.1, "\(path): \(r.status) \(r.text)")
        }
        // Any member reads; a collector sees only their own submissions, as every read.
        let mine = try w.table(token: w.f.collectorToken)
        #expect(mine.status == 200 && mine.json?["value"]?.arrayValue?.compactMap { $0["__id"]?.stringValue } == ["central-mine-1"], "\(mine.text)")
        #expect(try w.table(token: w.f.adminToken).json?["value"]?.arrayValue?.count == 2)
        // Never gated: an expired organization's feed still reads.
        try w.f.expire()
        #expect(try w.table(token: w.f.reviewerToken).json?["value"]?.arrayValue?.count == 2)
        try w.f.renew()

        let ordered = try w.table("Submissions", [("$orderby", "nothing_here")])
        #expect(ordered.status == 400 && ordered.json?["error"]?["message"]?.stringValue != nil, "\(ordered.text)")
        #expect(ordered.json?["message"] == ordered.json?["error"]?["message"] && ordered.json?["code"]?.doubleValue == 400.1)
        let unsupported = try w.table("Submissions", [("$apply", "groupby(size)")])
        #expect(unsupported.status == 501 && unsupported.json?["code"]?.doubleValue == 501.1 && unsupported.json?["message"]?.stringValue?.contains("$apply") == true)
        let keyed = try w.table("Submissions('central-mine-1')")
        #expect(keyed.status == 501, "\(keyed.text)")
    }

    /// An entity list's feed under Central's path: the own feed's rows, with `creatorId` the
    /// actorId and `__system/updates` (version − 1), also in `$metadata` and `$filter`.
    @Test func anEntityListsFeedHasCentralsCreatorAndUpdates() throws {
        let p = try EntityListTests.Published()
        let f = p.f
        let projects = try f.client.get("/v1/projects", token: f.adminToken)
        let projectId = try #require(projects.json?.arrayValue?.first?["id"]?.intValue)
        let root = "/v1/projects/\(projectId)/datasets/households.svc"
        let own = "/v1/orgs/\(f.orgId)/entity-lists/households.svc"
        let adminId = try #require(try f.client.get("/v1/users/current", token: f.adminToken).json?["id"]?.intValue)
        for i in 1...5 {
            let id = String(format: "00000000-0000-4000-8000-%012d", i)
            let r = try f.client.request("POST", "/v1/orgs/\(f.orgId)/entity-lists/households/entities", token: f.adminToken,
                                         json: ["id": .string(id), "label": .string("Household \(i)"), "properties": ["head": .string("Head \(i)")]],
                                         headers: ["Idempotency-Key": "central-entity-\(i)-key"])
            #expect(r.status == 201, "\(r.text)")
        }
        let changed = String(format: "00000000-0000-4000-8000-%012d", 2)
        let update = try f.client.request("PATCH", "/v1/projects/\(projectId)/datasets/households/entities/\(changed)?baseVersion=1", token: f.adminToken,
                                          json: ["data": ["head": "New head"]])
        #expect(update.status == 200, "\(update.text)")

        let doc = try f.client.get(root, token: f.reviewerToken)
        #expect(doc.status == 200 && doc.json?["value"]?.arrayValue?.map { $0["name"]?.stringValue } == ["Entities"], "\(doc.text)")
        #expect(doc.json?["@odata.context"]?.stringValue == "http://127.0.0.1" + root + "/$metadata")
        let metadata = try f.client.get(root + "/$metadata", token: f.reviewerToken).text
        #expect(metadata.contains(#"<Property Name="updates" Type="Edm.Int64"/>"#))
        let ownMetadata = try f.client.get(own + "/$metadata", token: f.reviewerToken)
        #expect(!ownMetadata.text.contains(#"Name="updates""#))

        let central = try f.client.get(root + "/Entities", token: f.reviewerToken)
        #expect(central.status == 200 && central.json?["@odata.nextLink"] == nil, "\(central.text)")
        let rows = central.json?["value"]?.arrayValue ?? []
        let ownRows = try f.client.get(own + "/Entities", token: f.reviewerToken).json?["value"]?.arrayValue ?? []
        #expect(rows.count == 5 && ownRows.count == 5)
        for (row, mine) in zip(rows, ownRows) {
            guard case .object(var o) = mine, case .object(var system)? = o["__system"] else { continue }
            system["creatorId"] = .string(String(adminId))
            system["updates"] = .number((system["version"]?.doubleValue ?? 0) - 1)
            o["__system"] = .object(system)
            #expect(row == .object(o))
        }
        #expect(rows.first { $0["__id"]?.stringValue == changed }?["__system"]?["updates"] == 1)
        let updated = try f.client.get(root + "/Entities?$filter=__system/updates%20gt%200", token: f.reviewerToken)
        #expect(updated.json?["value"]?.arrayValue?.compactMap { $0["head"]?.stringValue } == ["New head"], "\(updated.text)")
        let byCreator = try f.client.get(root + "/Entities?$filter=__system/creatorId%20eq%20'\(adminId)'&$count=true&$top=2&$skip=1", token: f.reviewerToken)
        #expect(byCreator.json?["@odata.count"] == 5 && byCreator.json?["value"]?.arrayValue?.count == 2 && byCreator.json?["@odata.nextLink"] == nil)

        // Pages when asked, linked under Central's path; $top across them.
        var path: String? = root + "/Entities?$top=4"
        var paged: [JSONValue] = [], pages = 0
        while let next = path {
            let page = try f.client.request("GET", next, token: f.reviewerToken, headers: ["Prefer": "odata.maxpagesize=2"])
            #expect(page.status == 200 && page.header("preference-applied") == "odata.maxpagesize=2")
            paged += page.json?["value"]?.arrayValue ?? []
            pages += 1
            path = page.json?["@odata.nextLink"]?.stringValue.map {
                #expect($0.hasPrefix("http://127.0.0.1" + root + "/Entities?"))
                return String($0.dropFirst("http://127.0.0.1".count))
            }
        }
        #expect(pages == 2 && paged == Array(rows.prefix(4)))
        #expect(try f.client.get(root + "/Entities?$orderby=label", token: f.reviewerToken).status == 501)
        let selected = try f.client.get(root + "/Entities?$select=label,__system/updates&$top=2&$count=True", token: f.reviewerToken)
        #expect(selected.json?["value"]?.arrayValue == rows.prefix(2).map { ["__id": $0["__id"] ?? .null, "label": $0["label"] ?? .null,
                                                                               "__system": ["updates": $0["__system"]?["updates"] ?? .null]] },
                "\(selected.text)")
        #expect(selected.json?["@odata.count"] == 5)

        // More entities than a page: one response, each once, $top and $skip across the pages.
        let batch: [JSONValue] = (0..<1_000).map { i in ["label": .string(String(format: "Batch %04d", i)), "data": ["head": .string("H\(i)")]] }
        let made = try f.client.post("/v1/projects/\(projectId)/datasets/households/entities", token: f.adminToken, ["entities": .array(batch), "source": ["name": "test"]])
        #expect(made.status == 200, "\(made.text)")
        let whole = try f.client.get(root + "/Entities?$count=true", token: f.reviewerToken)
        let ids = whole.json?["value"]?.arrayValue?.compactMap { $0["__id"]?.stringValue } ?? []
        #expect(whole.json?["@odata.count"] == 1_005 && ids.count == 1_005 && Set(ids).count == 1_005 && ids == ids.sorted())
        let some = try f.client.get(root + "/Entities?$skip=2&$top=1001", token: f.reviewerToken)
        #expect(some.json?["value"]?.arrayValue?.compactMap { $0["__id"]?.stringValue } == Array(ids[2..<1_003]))
    }
}
