import Foundation
import SurveyDomain
@testable import SurveyStorage
import Testing

/// The console's entity list pages against a real server: what the table shows (conflicts first,
/// searched, paged without missing or repeating an entity), an entity's history with its sources,
/// resolving a conflict (audited; refused while the subscription has expired, changing nothing),
/// the downloads equal to the API's rows, and who sees what.
@Suite struct EntityConsoleTests {
    typealias Session = ConsoleAdminTests.Session
    typealias Published = EntityListTests.Published

    static let hard = "6f1d2a4e-3b7c-4e21-9a55-0c8d2f6b1a01"
    static let soft = "7a2b3c4d-2222-4333-8444-955566677788"
    static let calm = "0a9b8c7d-1111-4222-8333-944455566677"

    /// Three households: one in a hard conflict (two phones changed its members from version 1),
    /// one in a soft conflict, one without.
    struct Setup {
        let p: Published
        var f: Fixture { p.f }
        var base: String { "/console/orgs/\(f.orgId)/entity-lists" }
        var list: String { base + "/households" }

        init() throws {
            p = try Published()
            for (n, (id, head, members, village)) in [(EntityConsoleTests.hard, "Ada", 4, "Kisii"), (EntityConsoleTests.soft, "Bo", 2, "Nyeri"), (EntityConsoleTests.calm, "Cy", 3, "Embu")].enumerated() {
                let r = try p.collect.submit(try p.register("uuid:reg-console-\(n)", entityId: id, head: head, members: members, village: village))
                guard r.status == 201 else { throw TestFailure("register: \(r.status) \(r.text)") }
            }
            // Hard: two visits made from version 1 both change members.
            for (n, members) in [5, 7].enumerated() {
                let r = try p.collect.submit(try p.visit("uuid:visit-console-h\(n)", entityId: EntityConsoleTests.hard, baseVersion: 1, members: members))
                guard r.status == 201 else { throw TestFailure("visit: \(r.status) \(r.text)") }
            }
            // Soft: a visit changes members; a late one from version 1 leaves them as version 1 had them.
            let first = try p.collect.submit(try p.visit("uuid:visit-console-s0", entityId: EntityConsoleTests.soft, baseVersion: 1, members: 3))
            guard first.status == 201 else { throw TestFailure("visit: \(first.status)") }
            let late: JSONValue = ["clientSubmissionId": "json-console-soft", "surveyVersionId": .string(p.visit.versionId),
                                   "contentHash": .string(p.visit.contentHash), "answers": ["household": .string(EntityConsoleTests.soft), "members_now": 2],
                                   "entity": ["id": .string(EntityConsoleTests.soft), "update": true, "baseVersion": 1]]
            let r = try p.f.client.post("/v1/orgs/\(p.f.orgId)/responses", token: p.f.collectorToken, late)
            guard r.status == 201 else { throw TestFailure("late: \(r.status) \(r.text)") }
        }

        func audits() throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'entity.update'") }
    }

    /// The entity table's rows in page order: the entity id and each column's text.
    static func rows(_ html: String) -> [(id: String, cells: [String: String])] {
        html.components(separatedBy: "<tr data-entity=\"").dropFirst().map { chunk in
            let id = String(chunk.prefix { $0 != "\"" })
            let row = chunk.components(separatedBy: "</tr>")[0]
            var cells: [String: String] = [:]
            for piece in row.components(separatedBy: "<td data-column=\"").dropFirst() {
                let column = String(piece.prefix { $0 != "\"" })
                let inside = piece.drop { $0 != ">" }.dropFirst()
                cells[column] = ConsoleDataViewTests.text(inside.prefix(upTo: inside.range(of: "</td>")!.lowerBound))
            }
            return (id, cells)
        }
    }

    @Test func theListPageShowsConflictsFirstAndSearches() throws {
        let s = try Setup()
        let admin = try Session(s.f, token: s.f.adminToken)
        let lists = try admin.get(s.base)
        #expect(lists.status == 200)
        #expect(lists.text.contains("href=\"\(s.list)\""))
        #expect(lists.text.contains("href=\"/console/orgs/\(s.f.orgId)/entity-lists\""))  // the menu's link
        let page = try admin.get(s.list)
        #expect(page.status == 200)
        let rows = Self.rows(page.text)
        #expect(rows.map(\.id) == [Self.hard, Self.soft, Self.calm])
        #expect(rows[0].cells == ["label": "Household of 7 people", "head": "Ada", "members": "7", "village": "Kisii", "version": "3",
                                  "conflict": "Hard conflict"])
        #expect(rows[1].cells["conflict"] == "Soft conflict" && rows[1].cells["members"] == "2")
        #expect(rows[2].cells == ["label": "Household of Cy", "head": "Cy", "members": "3", "village": "Embu", "version": "1", "conflict": ""])
        // Search: a property's value, a label, either case; kept in the form.
        let byVillage = try admin.get(s.list + "?q=NYERI")
        #expect(Self.rows(byVillage.text).map(\.id) == [Self.soft])
        #expect(byVillage.text.contains("name=\"q\" type=\"search\" value=\"NYERI\""))
        #expect(Self.rows(try admin.get(s.list + "?q=household%20of%20cy").text).map(\.id) == [Self.calm])
        #expect(Self.rows(try admin.get(s.list + "?q=nowhere").text).isEmpty)
        // A collector reads what the API lets them read; another organization's admin nothing.
        let collector = try Session(s.f, token: s.f.collectorToken)
        #expect(Self.rows(try collector.get(s.list).text).map(\.id) == [Self.hard, Self.soft, Self.calm])
        let other = try Fixture(server: s.f.server)
        let intruder = try Session(other, token: other.adminToken)
        for path in [s.base, s.list, s.list + "/entities/\(Self.hard)", s.list + "/download?format=csv"] {
            #expect(try intruder.get(path).status == 404, "\(path)")
        }
        #expect(try admin.get(s.base + "/trees").status == 404)
    }

    @Test func pagesFollowOneAnotherWithoutMissingOrRepeatingAnEntity() throws {
        let s = try Setup()
        // 120 more through the API: three pages of 50, the conflicts on the first.
        for i in 0..<120 {
            let r = try s.f.client.post("/v1/orgs/\(s.f.orgId)/entity-lists/households/entities", token: s.f.adminToken,
                                        ["id": .string(String(format: "e%07d-0000-4000-8000-000000000000", i)), "label": .string("Tent \(i)"),
                                         "properties": ["village": .string(i % 2 == 0 ? "Kisii" : "Embu")]])
            #expect(r.status == 201)
        }
        let admin = try Session(s.f, token: s.f.adminToken)
        func walk(_ query: String) throws -> [String] {
            var seen: [String] = [], url: String? = s.list + query
            while let u = url {
                let page = try admin.get(u)
                #expect(page.status == 200)
                seen += Self.rows(page.text).map(\.id)
                url = ConsoleDataViewTests.nextLink(page.text)
                if let next = url { #expect(query.isEmpty || next.contains("q=kisii"), "the search is kept: \(next)") }
            }
            return seen
        }
        let all = try walk("")
        #expect(all.count == 123 && Set(all).count == 123)
        #expect(Array(all.prefix(2)) == [Self.hard, Self.soft])
        #expect(Array(all.dropFirst(2)) == Array(all.dropFirst(2)).sorted())
        // The API's list holds the same entities.
        let api = try s.f.client.get("/v1/orgs/\(s.f.orgId)/entity-lists/households/entities?limit=500", token: s.f.adminToken)
        #expect(Set(api.json?["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []) == Set(all))
        let kisii = try walk("?q=kisii")
        #expect(kisii.count == 61 && kisii.first == Self.hard)
        #expect(try admin.get(s.list + "?after=nonsense").status == 400)
    }

    @Test(.enabled(if: !TestEngine.isPostgres, "writes entities straight into the SQLite file"))
    func aSearchFindsARareNameByTheIndexAndReadsAShortOneAPartAtATime() throws {
        let s = try Setup()
        // 30,000 more, written in SQL: more than two searched pages read.
        let db = try Connection(path: s.f.server.dataDir + "/surveyd.sqlite", readOnly: false)
        _ = try db.query("PRAGMA busy_timeout = 10000")
        try db.execute("""
            WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 30000)
            INSERT INTO entities(org_id, list_name, entity_id, label, properties, version, created_by, created_at, updated_at)
            SELECT '\(s.f.orgId)', 'households', printf('f%07d-0000-4000-8000-000000000000', n), 'Tent ' || n,
                   '{"village":"' || CASE WHEN n = 29999 THEN 'Lamu' ELSE 'Embu' END || '"}', 1, 'usr_bulk', 1, 1 FROM c
            """)
        let admin = try Session(s.f, token: s.f.adminToken)
        // A text of three characters or more: the trigram index finds the one match on the first page.
        let indexed = try admin.get(s.list + "?q=lamu")
        #expect(Self.rows(indexed.text).map(\.id) == ["f0029999-0000-4000-8000-000000000000"])
        #expect(ConsoleDataViewTests.nextLink(indexed.text) == nil && !indexed.text.contains("Search further"))
        // The index follows a change: after the API moves it to Kwale, "lamu" finds nothing and "kwale" finds it.
        let moved = try s.f.client.request("PATCH", "/v1/orgs/\(s.f.orgId)/entity-lists/households/entities/f0029999-0000-4000-8000-000000000000",
                                           token: s.f.adminToken, json: ["force": true, "properties": ["village": "Kwale"]])
        #expect(moved.status == 200, "\(moved.text)")
        #expect(Self.rows(try admin.get(s.list + "?q=lamu").text).isEmpty)
        #expect(Self.rows(try admin.get(s.list + "?q=KWALE").text).map(\.id) == ["f0029999-0000-4000-8000-000000000000"])
        let back = try s.f.client.request("PATCH", "/v1/orgs/\(s.f.orgId)/entity-lists/households/entities/f0029999-0000-4000-8000-000000000000",
                                          token: s.f.adminToken, json: ["force": true, "properties": ["village": "Lamu"]])
        #expect(back.status == 200, "\(back.text)")
        // Two characters, which no trigram holds: 30,003 entities read 15,000 a page, two pages
        // without a match, each offering to search further.
        var page = try admin.get(s.list + "?q=mu")
        for _ in 0..<2 {
            #expect(page.status == 200)
            #expect(Self.rows(page.text).isEmpty)
            #expect(page.text.contains("No entities matching “mu” among the next 15000 searched"))
            #expect(page.text.contains(">Search further</a>"))
            let further = try #require(ConsoleDataViewTests.nextLink(page.text))
            #expect(further.contains("q=mu"))
            page = try admin.get(further)
        }
        #expect(Self.rows(page.text).map(\.id) == ["f0029999-0000-4000-8000-000000000000"])
        #expect(ConsoleDataViewTests.nextLink(page.text) == nil)
        // Without a search, pages go on as ever; a search that matches often fills its page.
        #expect(Self.rows(try admin.get(s.list).text).count == 50)
        #expect(Self.rows(try admin.get(s.list + "?q=embu").text).count == 50)
    }

    @Test func anEntityPageShowsItsHistoryAndTheResponsesThatMadeIt() throws {
        let s = try Setup()
        let admin = try Session(s.f, token: s.f.adminToken)
        let page = try admin.get(s.list + "/entities/\(Self.hard)")
        #expect(page.status == 200)
        let html = page.text
        #expect(html.contains("data-conflict=\"hard\""))
        for v in 1...3 { #expect(html.contains("data-version=\"\(v)\""), "version \(v)") }
        // Version 3: members 5 → 7 by the second visit, which marked the conflict; its response linked.
        let third = try #require(html.components(separatedBy: "data-version=\"3\"").last?.components(separatedBy: "</li>").first)
        #expect(third.contains("<tr data-path=\"properties.members\"><th scope=\"row\">members</th><td><del>5</del></td><td><ins>7</ins></td></tr>"))
        #expect(third.contains("Marked a hard conflict"))
        let responseId = try #require(try s.f.server.rows("SELECT response_id FROM responses WHERE client_submission_id = 'uuid:visit-console-h1'").first?
            .string("response_id"))
        #expect(third.contains("href=\"/console/orgs/\(s.f.orgId)/responses/\(responseId)\""))
        // …and the response's page links back to the entity.
        let response = try admin.get("/console/orgs/\(s.f.orgId)/responses/\(responseId)")
        #expect(response.status == 200)
        #expect(response.text.contains("href=\"\(s.list)/entities/\(Self.hard)\""))
        #expect(response.text.contains("Updated to version 3"))
        // An admin has the resolve form; a collector does not, and may not resolve.
        #expect(html.contains("action=\"\(s.list)/entities/\(Self.hard)/resolve\""))
        let collector = try Session(s.f, token: s.f.collectorToken)
        let seen = try collector.get(s.list + "/entities/\(Self.hard)")
        #expect(seen.status == 200 && !seen.text.contains("/resolve\""))
        #expect(try collector.post(s.list + "/entities/\(Self.hard)/resolve", ["baseVersion": "3"]).status == 403)
        #expect(try s.p.entity(Self.hard)?.conflict == "hard")
    }

    @Test func resolvingClearsTheConflictAsAnAuditedConsoleVersion() throws {
        let s = try Setup()
        let admin = try Session(s.f, token: s.f.adminToken)
        let audits = try s.audits()
        // Made from a version that is no longer the entity's: refused, nothing changes.
        let stale = try admin.post(s.list + "/entities/\(Self.hard)/resolve", ["baseVersion": "2"])
        #expect(stale.status == 409)
        #expect(try s.p.entity(Self.hard)?.conflict == "hard" && s.p.entity(Self.hard)?.version == 3)
        let done = try admin.post(s.list + "/entities/\(Self.hard)/resolve", ["baseVersion": "3"])
        #expect(done.status == 303)
        #expect(done.header("location") == s.list + "/entities/\(Self.hard)?done=resolved")
        #expect(try s.p.entity(Self.hard) == .init(label: "Household of 7 people", properties: ["head": "Ada", "members": "7", "village": "Kisii"],
                                                   version: 4, conflict: nil))
        #expect(try s.audits() == audits + 1)
        let entry = try #require(try s.f.server.rows("SELECT actor, target_id FROM audit WHERE action = 'entity.update' ORDER BY seq DESC").first)
        #expect(try entry.string("target_id").hasSuffix(Self.hard) && entry.string("actor") != s.f.collectorId)
        let versions = try s.f.client.get("/v1/orgs/\(s.f.orgId)/entity-lists/households/entities/\(Self.hard)/versions", token: s.f.adminToken)
        let last = try #require(versions.json?["items"]?.arrayValue?.last)
        #expect(last["source"]?["type"]?.stringValue == "console" && last["diff"]?.arrayValue?.isEmpty == true)
        let after = try admin.get(try #require(done.header("location")))
        #expect(after.text.contains("Done: the conflict is resolved.") && after.text.contains("changed in the console"))
        #expect(Self.rows(try admin.get(s.list).text).map(\.id) == [Self.soft, Self.calm, Self.hard])
    }

    @Test func aResolveWhileTheSubscriptionHasExpiredChangesNothing() throws {
        let s = try Setup()
        let admin = try Session(s.f, token: s.f.adminToken)
        let audits = try s.audits()
        let versions = try s.p.versions(Self.soft)
        let revision = try s.f.server.count("SELECT revision AS n FROM entity_lists WHERE name = 'households'")
        try s.f.expire()
        let refused = try admin.post(s.list + "/entities/\(Self.soft)/resolve", ["baseVersion": "3"])
        #expect(refused.status == 402)
        #expect(refused.text.contains("Subscription expired"))
        let api = try s.f.client.request("PATCH", "/v1/orgs/\(s.f.orgId)/entity-lists/households/entities/\(Self.soft)",
                                         token: s.f.adminToken, json: ["resolve": true, "baseVersion": 3])
        #expect(api.status == 402 && api.json?["errorCode"]?.intValue == 1001)
        #expect(try s.p.entity(Self.soft)?.conflict == "soft" && s.p.entity(Self.soft)?.version == 3)
        #expect(try s.p.versions(Self.soft) == versions)
        #expect(try s.audits() == audits)
        #expect(try s.f.server.count("SELECT revision AS n FROM entity_lists WHERE name = 'households'") == revision)
        // Reading goes on: the pages, with the button off and the reason given.
        let page = try admin.get(s.list + "/entities/\(Self.soft)")
        #expect(page.status == 200 && page.text.contains("changes wait until it is renewed") && page.text.contains(" disabled>"))
        #expect(try admin.get(s.list).status == 200)
        #expect(try admin.get(s.list + "/download?format=csv").status == 200)
        try s.f.renew()
        #expect(try admin.post(s.list + "/entities/\(Self.soft)/resolve", ["baseVersion": "3"]).status == 303)
        #expect(try s.p.entity(Self.soft)?.conflict == nil)
    }

    @Test func theDownloadsHoldTheAPIsRows() throws {
        let s = try Setup()
        let admin = try Session(s.f, token: s.f.adminToken)
        let api = try s.f.client.get("/v1/orgs/\(s.f.orgId)/entity-lists/households/entities.csv", token: s.f.collectorToken)
        #expect(api.status == 200)
        let csv = try admin.get(s.list + "/download?format=csv")
        #expect(csv.status == 200 && csv.header("content-type")?.hasPrefix("text/csv") == true)
        #expect(csv.body == api.body)
        let rows = ConsoleDataViewTests.csv(csv.text)
        #expect(rows.first == ["name", "label", "__version", "__trunkVersion", "__branchId", "head", "members", "village"])
        #expect(rows.count == 4)
        // The workbook: the same cells, from the console and from the API.
        for (reply, name) in [(try admin.get(s.list + "/download?format=xlsx"), "console"),
                              (try s.f.client.get("/v1/orgs/\(s.f.orgId)/entity-lists/households/entities.xlsx", token: s.f.collectorToken), "api")] {
            #expect(reply.status == 200, "\(name)")
            #expect(reply.header("content-type") == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
            #expect(reply.header("content-disposition") == "attachment; filename=\"households.xlsx\"")
            let path = s.f.server.dataDir + "/entities-\(name).xlsx"
            FileManager.default.createFile(atPath: path, contents: Data(reply.body))
            let sheet = try ExportTests.python("""
                import sys, json, zipfile, re
                x = zipfile.ZipFile(sys.argv[1]).read("xl/worksheets/sheet1.xml").decode()
                rows = {}
                for col, row, body in re.findall(r'<c r="([A-Z]+)(\\d+)"[^>]*>(.*?)</c>', x):
                    rows.setdefault(int(row), {})[ord(col) - 65] = re.sub('<[^>]+>', '', body)
                width = 1 + max(max(r) for r in rows.values())
                print(json.dumps([[rows[n].get(c, "") for c in range(width)] for n in sorted(rows)]))
                """, path)
            let cells = sheet.arrayValue?.map { $0.arrayValue?.compactMap(\.stringValue) ?? [] } ?? []
            #expect(cells == rows, "\(name)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: s.f.server.dataDir + "/tmp").isEmpty)
        #expect(try admin.get(s.list + "/download?format=pdf").status == 400)
    }
}
