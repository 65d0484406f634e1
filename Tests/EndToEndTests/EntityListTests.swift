import Foundation
import Synchronization
import FoundationXML
import Testing
import SurveyDomain
@testable import SurveyStorage

/// Entity lists as a field team uses them (Docs/entities.md): a household registration form and
/// a follow-up visit form (pyxform 4.5.0 XLSForms, `Tests/SurveyXFormTests/Fixtures/make_entity_forms.py`)
/// published on a real server, filled in and sent through the OpenRosa door as ODK Collect sends
/// them. What is stored afterwards is read from the database itself.
@Suite struct EntityListTests {
    /// Both forms published, with a Collect client.
    struct Published {
        let f: Fixture
        let collect: CollectClient
        let registration: Version
        let visit: Version

        struct Version {
            let surveyId: String
            let versionId: String
            let contentHash: String
            let xform: [UInt8]
        }

        init(server: TestServer? = nil) throws {
            f = try Fixture(server: server)
            collect = CollectClient(f)
            registration = try Self.publish(f, "household_registration")
            visit = try Self.publish(f, "household_visit")
        }

        static func publish(_ f: Fixture, _ name: String) throws -> Version {
            let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": .string(name)])
            let surveyId = try #require(s.json?["surveyId"]?.stringValue, "\(s.text)")
            let v = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken,
                                         body: try FormPublishingTests.bytes(name + ".xlsx"), headers: ["Content-Type": FormPublishingTests.xlsx])
            #expect(v.status == 201, "\(name): \(v.text)")
            let versionId = try #require(v.json?["surveyVersionId"]?.stringValue)
            let xform = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(versionId)/xform", token: f.collectorToken)
            #expect(xform.status == 200)
            return Version(surveyId: surveyId, versionId: versionId, contentHash: try #require(v.json?["contentHash"]?.stringValue),
                           xform: xform.body)
        }

        /// A filled-in form with its `meta/entity` as Collect writes it: the attributes the
        /// form's binds computed, and the label.
        func instance(_ version: Version, _ instanceID: String, values: [(String, String)], entity: [String: String], label: String?) throws -> [UInt8] {
            let xml = try CollectClient.instance(of: version.xform, instanceID: instanceID, values: values)
            let document = try XMLDocument(data: Data(xml))
            let e = try #require(try document.nodes(forXPath: "/*/*[local-name()='meta']/*[local-name()='entity']").first as? XMLElement)
            for (name, value) in entity {
                e.removeAttribute(forName: name)
                e.addAttribute(XMLNode.attribute(withName: name, stringValue: value) as! XMLNode)
            }
            if let label {
                let l = try #require(e.elements(forName: "label").first)
                l.stringValue = label
            }
            return Array(document.xmlData)
        }

        func register(_ instanceID: String, entityId: String, head: String, members: Int, village: String) throws -> [UInt8] {
            try instance(registration, instanceID, values: [("head_name", head), ("member_count", String(members)), ("village_name", village)],
                         entity: ["id": entityId], label: "Household of \(head)")
        }

        /// `branch`: the phone's offline branch (`branchId`, and `trunkVersion` unless the phone created the entity).
        func visit(_ instanceID: String, entityId: String, baseVersion: Int64, members: Int,
                   branch: (id: String, trunk: Int64?)? = nil) throws -> [UInt8] {
            var entity = ["id": entityId, "baseVersion": String(baseVersion)]
            if let branch {
                entity["branchId"] = branch.id
                if let trunk = branch.trunk { entity["trunkVersion"] = String(trunk) }
            }
            return try instance(visit, instanceID, values: [("household", entityId), ("members_now", String(members))],
                                entity: entity, label: "Household of \(members) people")
        }

        func waiting() throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM entity_waiting") }

        struct Stored: Equatable {
            let label: String
            let properties: [String: String]
            let version: Int64
            let conflict: String?
        }

        /// The entity as the database holds it.
        func entity(_ id: String) throws -> Stored? {
            guard let row = try f.server.rows("SELECT label, properties, version, conflict FROM entities WHERE org_id = ? AND entity_id = ?",
                                               [.text(f.orgId), .text(id)]).first else { return nil }
            let properties = try JSONParser.parse(Array(try row.string("properties").utf8)).objectValue?.compactMapValues(\.stringValue) ?? [:]
            return Stored(label: try row.string("label"), properties: properties, version: try row.int("version"),
                          conflict: try row.optionalString("conflict"))
        }

        func versions(_ id: String) throws -> Int64 {
            try f.server.count("SELECT COUNT(*) AS n FROM entity_versions WHERE org_id = ? AND entity_id = ?", [.text(f.orgId), .text(id)])
        }

        func responses() throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM responses") }

        /// The visit form's manifest entry for its entity list, as Collect reads it: type, name,
        /// hash and the URL it downloads the file from.
        func listedCSV() throws -> (type: String?, fileName: String, hash: String, url: String) {
            let form = try #require(try collect.formList().forms.first { $0.formID == "household_visit" })
            let manifest = try #require(form.manifestURL.flatMap(URL.init(string:)))
            let reply = try f.client.request("GET", manifest.path, headers: CollectClient.headers)
            #expect(reply.status == 200)
            let files = try XMLDocument(data: Data(reply.body)).rootElement()?.elements(forName: "mediaFile") ?? []
            #expect(files.count == 1)
            let file = try #require(files.first)
            func text(_ name: String) -> String { file.elements(forName: name).first?.stringValue ?? "" }
            return (file.attributes?.first { ($0.localName ?? $0.name) == "type" }?.stringValue, text("filename"), text("hash"), text("downloadUrl"))
        }

        /// The entity list's CSV as a phone downloads it.
        func csv() throws -> String {
            let url = try #require(URL(string: try listedCSV().url))
            let reply = try f.client.request("GET", url.path, headers: CollectClient.headers)
            #expect(reply.status == 200)
            #expect(reply.header("content-type")?.hasPrefix("text/csv") == true)
            return reply.text
        }
    }

    static let household = "6f1d2a4e-3b7c-4e21-9a55-0c8d2f6b1a01"

    @Test func publishingCreatesTheListAndServesTheEntityBlock() throws {
        let p = try Published()
        // The XForm devices download keeps the entity block, and ODK Validate accepts it.
        for version in [p.registration, p.visit] {
            #expect(String(decoding: version.xform, as: UTF8.self).contains("<entity dataset=\"households\""))
            try ODKValidate.accept(version.xform, label: "entity form")
        }
        let list = try #require(try p.f.server.rows("SELECT properties, revision FROM entity_lists WHERE org_id = ? AND name = 'households'",
                                                    [.text(p.f.orgId)]).first)
        #expect(try list.string("properties") == #"["head","members","village"]"#)
        #expect(try list.int("revision") == 1)  // the visit form adds no property
        // The definition carries the declaration.
        let version = try p.f.client.get("/v1/orgs/\(p.f.orgId)/survey-versions/\(p.visit.versionId)", token: p.f.adminToken)
        #expect(version.json?["definition"]?["entity"]?["list"] == "households")
        #expect(version.json?["definition"]?["entity"]?["saveTo"] == ["members_now": "members"])
        // Both forms are offered to phones.
        let ids = try p.collect.formList().forms.map(\.formID).sorted()
        #expect(ids == ["household_registration", "household_visit"])
    }

    @Test func aRegistrationCreatesAndAVisitUpdatesOnceHoweverOftenSent() throws {
        let p = try Published()
        let create = try p.register("uuid:reg-00000001", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")
        #expect(try p.collect.submit(create).status == 201)
        #expect(try p.entity(Self.household) == .init(label: "Household of Ada", properties: ["head": "Ada", "members": "4", "village": "Kisii"],
                                                      version: 1, conflict: nil))
        let source = try #require(try p.f.server.rows("""
            SELECT v.source, v.actor, r.client_submission_id FROM entity_versions v JOIN responses r ON r.response_id = v.response_id
            WHERE v.entity_id = ? AND v.version = 1
            """, [.text(Self.household)]).first)
        #expect(try source.string("source") == "submission")
        #expect(try source.string("client_submission_id") == "uuid:reg-00000001")
        #expect(try source.string("actor") == p.f.collectorId)

        let update = try p.visit("uuid:visit-0000001", entityId: Self.household, baseVersion: 1, members: 5)
        #expect(try p.collect.submit(update).status == 201)
        let updated = Published.Stored(label: "Household of 5 people", properties: ["head": "Ada", "members": "5", "village": "Kisii"],
                                       version: 2, conflict: nil)
        #expect(try p.entity(Self.household) == updated)

        // Sent again (Collect retries after a lost answer): the stored response, nothing applied twice.
        #expect(try p.collect.submit(update).status == 202)
        #expect(try p.collect.submit(create).status == 202)
        #expect(try p.entity(Self.household) == updated)
        #expect(try p.versions(Self.household) == 2)
        #expect(try p.responses() == 2)
    }

    @Test func anExpiredSubscriptionChangesNoEntityUntilRenewed() throws {
        let p = try Published()
        #expect(try p.collect.submit(try p.register("uuid:reg-00000002", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")).status == 201)
        let update = try p.visit("uuid:visit-0000002", entityId: Self.household, baseVersion: 1, members: 6)
        let another = "0a9b8c7d-1111-4222-8333-944455566677"
        let create = try p.register("uuid:reg-00000003", entityId: another, head: "Bo", members: 2, village: "Nyeri")
        let revision = try p.f.server.count("SELECT revision AS n FROM entity_lists WHERE name = 'households'")
        try p.f.expire()
        for instance in [update, create] {
            let refused = try p.collect.submit(instance)
            #expect(refused.status == 402)
            #expect(refused.header("surveyd-error-code") == "1001")
        }
        #expect(try p.entity(Self.household)?.version == 1)
        #expect(try p.entity(another) == nil)
        #expect(try p.versions(Self.household) == 1)
        #expect(try p.f.server.count("SELECT revision AS n FROM entity_lists WHERE name = 'households'") == revision)
        #expect(try p.responses() == 1)
        try p.f.renew()
        #expect(try p.collect.submit(update).status == 201)
        #expect(try p.collect.submit(create).status == 201)
        #expect(try p.collect.submit(update).status == 202)
        #expect(try p.entity(Self.household)?.properties["members"] == "6")
        #expect(try p.entity(Self.household)?.version == 2)
        #expect(try p.entity(another)?.version == 1)
    }

    @Test func aRefusedSubmissionChangesNoEntity() throws {
        let p = try Published()
        #expect(try p.collect.submit(try p.register("uuid:reg-00000004", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")).status == 201)
        // 422: a required answer missing (the form's rules), and an entity the form does not write.
        let missing = try p.instance(p.visit, "uuid:visit-0000004", values: [("household", Self.household)],
                                     entity: ["id": Self.household, "baseVersion": "1"], label: "Household of ? people")
        #expect(try p.collect.submit(missing).status == 422)
        let otherList = try p.instance(p.visit, "uuid:visit-0000005", values: [("household", Self.household), ("members_now", "9")],
                                       entity: ["id": Self.household, "baseVersion": "1", "dataset": "trees"], label: "x")
        #expect(try p.collect.submit(otherList).status == 422)
        // 409 through the JSON door: a contentHash that is not the version's.
        let json: JSONValue = ["clientSubmissionId": "json-visit-0001", "surveyVersionId": .string(p.visit.versionId),
                               "contentHash": "sha256:0000", "answers": ["household": .string(Self.household), "members_now": 9],
                               "entity": ["id": .string(Self.household), "update": true, "baseVersion": 1]]
        #expect(try p.f.client.post("/v1/orgs/\(p.f.orgId)/responses", token: p.f.collectorToken, json).status == 409)
        #expect(try p.entity(Self.household)?.version == 1)
        #expect(try p.versions(Self.household) == 1)
        #expect(try p.responses() == 1)
    }

    @Test func aStaleBaseVersionAppliesAndMarksTheConflict() throws {
        let p = try Published()
        #expect(try p.collect.submit(try p.register("uuid:reg-00000005", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")).status == 201)
        // Two phones visit version 1 offline. The first to sync applies cleanly.
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000006", entityId: Self.household, baseVersion: 1, members: 5)).status == 201)
        #expect(try p.entity(Self.household)?.conflict == nil)
        // The JSON door's update made from version 1 that changes nothing the first changed
        // (members as version 1 had it, no label): applied, a soft conflict.
        let soft: JSONValue = ["clientSubmissionId": "json-visit-0002", "surveyVersionId": .string(p.visit.versionId),
                               "contentHash": .string(p.visit.contentHash), "answers": ["household": .string(Self.household), "members_now": 4],
                               "entity": ["id": .string(Self.household), "update": true, "baseVersion": 1]]
        let accepted = try p.f.client.post("/v1/orgs/\(p.f.orgId)/responses", token: p.f.collectorToken, soft)
        #expect(accepted.status == 201, "\(accepted.text)")
        #expect(try p.entity(Self.household) == .init(label: "Household of 5 people", properties: ["head": "Ada", "members": "4", "village": "Kisii"],
                                                      version: 3, conflict: "soft"))
        // The second phone's visit changed members too: applied (its word is the latest), a hard conflict.
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000007", entityId: Self.household, baseVersion: 1, members: 7)).status == 201)
        #expect(try p.entity(Self.household) == .init(label: "Household of 7 people", properties: ["head": "Ada", "members": "7", "village": "Kisii"],
                                                      version: 4, conflict: "hard"))
        let marks = try p.f.server.rows("SELECT version, base_version, conflict FROM entity_versions WHERE entity_id = ? ORDER BY version",
                                        [.text(Self.household)])
        #expect(try marks.map { try $0.optionalString("conflict") } == [nil, nil, "soft", "hard"])
        #expect(try marks.map { try $0.optionalInt("base_version") } == [nil, 1, 1, 1])
        // An admin resolves it: the conflict is cleared, the values kept.
        let resolved = try p.f.client.request("PATCH", "/v1/orgs/\(p.f.orgId)/entity-lists/households/entities/\(Self.household)",
                                              token: p.f.adminToken, json: ["resolve": true])
        #expect(resolved.status == 200, "\(resolved.text)")
        #expect(try p.entity(Self.household) == .init(label: "Household of 7 people", properties: ["head": "Ada", "members": "7", "village": "Kisii"],
                                                      version: 5, conflict: nil))
    }

    @Test func theListReachesPhonesAsTheFormsCSVWithAHashThatMovesOnlyWithIt() throws {
        let p = try Published()
        // The registration form reads no list: no manifest. The visit form's names the list.
        #expect(try p.collect.formList().forms.first { $0.formID == "household_registration" }?.manifestURL == nil)
        let empty = try p.listedCSV()
        #expect(empty.type == "entityList" && empty.fileName == "households.csv")
        #expect(empty.hash.hasPrefix("md5:") && empty.hash.count == 36)
        #expect(try p.csv() == "name,label,__version,__trunkVersion,__branchId,head,members,village\r\n")

        let second = "0a9b8c7d-1111-4222-8333-944455566677"
        #expect(try p.collect.submit(try p.register("uuid:reg-00000011", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")).status == 201)
        #expect(try p.collect.submit(try p.register("uuid:reg-00000012", entityId: second, head: "Bo, Jr.", members: 2, village: "Nyeri")).status == 201)
        let created = try p.listedCSV().hash
        #expect(created != empty.hash)
        #expect(try p.listedCSV().hash == created)  // reads change nothing
        #expect(try p.csv() == """
            name,label,__version,__trunkVersion,__branchId,head,members,village\r
            \(second),"Household of Bo, Jr.",1,,,"Bo, Jr.",2,Nyeri\r
            \(Self.household),Household of Ada,1,,,Ada,4,Kisii\r

            """)

        // Submissions that change no entity leave the hash as it is: a replay, a refusal, an
        // update of an entity the server does not have, a create of one it has.
        #expect(try p.collect.submit(try p.register("uuid:reg-00000011", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")).status == 202)
        let missing = try p.instance(p.visit, "uuid:visit-0000011", values: [("household", Self.household)],
                                     entity: ["id": Self.household, "baseVersion": "1"], label: "x")
        #expect(try p.collect.submit(missing).status == 422)
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000012", entityId: "ffffffff-0000-4000-8000-000000000000", baseVersion: 1, members: 3)).status == 201)
        #expect(try p.collect.submit(try p.register("uuid:reg-00000013", entityId: second, head: "Cy", members: 1, village: "Embu")).status == 201)
        #expect(try p.listedCSV().hash == created)

        // An update moves it, and the CSV says the new version.
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000013", entityId: Self.household, baseVersion: 1, members: 5)).status == 201)
        let updated = try p.listedCSV().hash
        #expect(updated != created)
        #expect(try p.csv().contains("\(Self.household),Household of 5 people,2,,,Ada,5,Kisii\r\n"))
        #expect(try p.listedCSV().hash == updated)
    }

    @Test func theAPIListsEntityListsEntitiesAndTheirVersions() throws {
        let p = try Published()
        #expect(try p.collect.submit(try p.register("uuid:reg-00000021", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")).status == 201)
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000021", entityId: Self.household, baseVersion: 1, members: 5)).status == 201)
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000022", entityId: Self.household, baseVersion: 1, members: 7)).status == 201)
        let base = "/v1/orgs/\(p.f.orgId)/entity-lists"
        // Any member reads them, the collector too.
        let lists = try p.f.client.get(base, token: p.f.collectorToken)
        #expect(lists.status == 200)
        #expect(lists.json?["items"]?.arrayValue?.map { $0["name"] } == ["households"])
        #expect(lists.json?["nextCursor"] == .null)
        let list = try p.f.client.get(base + "/households", token: p.f.reviewerToken)
        #expect(list.json?["properties"] == ["head", "members", "village"])
        #expect(list.json?["label"] == "households")

        let entities = try p.f.client.get(base + "/households/entities?limit=1", token: p.f.adminToken)
        #expect(entities.status == 200)
        let item = try #require(entities.json?["items"]?.arrayValue?.first)
        #expect(item["id"] == .string(Self.household))
        #expect(item["label"] == "Household of 7 people")
        #expect(item["properties"] == ["head": "Ada", "members": "7", "village": "Kisii"])
        #expect(item["version"] == 3)
        #expect(item["conflict"] == "hard")
        #expect(item["createdBy"] == .string(p.f.collectorId))
        #expect(item["deletedAt"] == .null)
        #expect(entities.json?["nextCursor"] == .string(Self.household))
        #expect(try p.f.client.get(base + "/households/entities?after=\(Self.household)", token: p.f.adminToken).json?["items"] == [])
        #expect(try p.f.client.get(base + "/households/entities/\(Self.household)", token: p.f.adminToken).json == item)
        // Filters: the conflict mark, changes after a time, a text in the label (either case).
        func count(_ query: String) throws -> Int? {
            try p.f.client.get(base + "/households/entities?" + query, token: p.f.adminToken).json?["items"]?.arrayValue?.count
        }
        #expect(try count("conflict=hard") == 1)
        #expect(try count("conflict=soft") == 0)
        #expect(try count("search=OF%207") == 1)
        #expect(try count("search=%25") == 0)  // a literal %, in no label
        #expect(try count("search=of%207&conflict=hard") == 1)
        #expect(try count("updatedAfter=2000-01-01T00:00:00Z") == 1)
        #expect(try count("updatedAfter=2100-01-01T00:00:00Z") == 0)
        let bad = try p.f.client.get(base + "/households/entities?conflict=yes&updatedAfter=soon", token: p.f.adminToken)
        #expect(bad.status == 422)
        #expect(bad.json?["errors"]?.arrayValue?.compactMap { $0["path"]?.stringValue } == ["conflict", "updatedAfter"])

        let versions = try p.f.client.get(base + "/households/entities/\(Self.household)/versions", token: p.f.adminToken)
        #expect(versions.status == 200)
        let items = try #require(versions.json?["items"]?.arrayValue)
        #expect(items.map { $0["version"] } == [1, 2, 3])
        #expect(items.map { $0["conflict"] } == [.null, .null, "hard"])
        #expect(items.map { $0["baseVersion"] } == [.null, 1, 1])
        #expect(items.map { $0["source"]?["instanceID"] } == ["uuid:reg-00000021", "uuid:visit-0000021", "uuid:visit-0000022"])
        #expect(items.first?["source"]?["type"] == "submission")
        #expect(items.last?["diff"] == [["path": "label", "old": "Household of 5 people", "new": "Household of 7 people"],
                                        ["path": "properties.members", "old": "5", "new": "7"]])
        #expect(items.first?["diff"]?.arrayValue?.count == 4)  // the label and three properties, from nothing

        // The CSV phones get, through the API too.
        let csv = try p.f.client.get(base + "/households/entities.csv", token: p.f.reviewerToken)
        #expect(csv.status == 200 && csv.header("content-type")?.hasPrefix("text/csv") == true)
        #expect(csv.text == "name,label,__version,__trunkVersion,__branchId,head,members,village\r\n\(Self.household),Household of 7 people,3,,,Ada,7,Kisii\r\n")
        #expect(try p.f.client.get(base + "/trees/entities.csv", token: p.f.adminToken).status == 404)
        // What does not exist is the 404 of nothing.
        for path in [base + "/trees", base + "/trees/entities", base + "/households/entities/00000000-0000-4000-8000-000000000000",
                     base + "/households/entities/00000000-0000-4000-8000-000000000000/versions"] {
            let r = try p.f.client.get(path, token: p.f.adminToken)
            #expect(r.status == 404 && r.json?["errorCode"] == 1005, "\(path): \(r.status)")
        }
        // Reads are never gated.
        try p.f.expire()
        #expect(try p.f.client.get(base + "/households/entities", token: p.f.adminToken).status == 200)
    }

    @Test func anUpdateThatArrivesBeforeItsCreateWaitsAndThenApplies() throws {
        let p = try Published()
        // One phone registered a household and visited it offline (its branch starts at the
        // create: no trunk version); the visit reaches the server first.
        let branch = (id: "b1f0c3aa-5d2e-4c7b-9e11-3a4b5c6d7e8f", trunk: Int64?.none)
        let visit = try p.visit("uuid:visit-0000031", entityId: Self.household, baseVersion: 1, members: 6, branch: branch)
        #expect(try p.collect.submit(visit).status == 201)
        #expect(try p.entity(Self.household) == nil)
        #expect(try p.waiting() == 1)
        #expect(try p.collect.submit(visit).status == 202)  // sent again: still one
        #expect(try p.waiting() == 1)
        #expect(try p.collect.submit(try p.register("uuid:reg-00000031", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")).status == 201)
        #expect(try p.entity(Self.household) == .init(label: "Household of 6 people", properties: ["head": "Ada", "members": "6", "village": "Kisii"],
                                                      version: 2, conflict: nil))
        #expect(try p.waiting() == 0)
    }

    /// Phones registering the same household at the same moment: every submission is stored
    /// (201), the first create makes the entity and the others change nothing — on PostgreSQL,
    /// where the creates run in concurrent transactions, as on SQLite.
    @Test func simultaneousCreatesOfOneEntityAreEachStoredAndMakeItOnce() throws {
        let p = try Published()
        let forms = try (0..<8).map { i in
            try p.register("uuid:reg-race-\(String(format: "%04d", i))", entityId: Self.household, head: "Ada \(i)", members: 4, village: "Kisii")
        }
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: forms.count) { i in
            let status = (try? CollectClient(p.f).submit(forms[i]).status) ?? 0
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0 } == Array(repeating: 201, count: forms.count))
        #expect(try p.responses() == Int64(forms.count))
        #expect(try p.entity(Self.household)?.version == 1)
        #expect(try p.versions(Self.household) == 1)
    }

    /// An update that waits past the limit (five days by default) applies all the same, marked
    /// `soft`: one whose create never came makes the entity, one whose predecessor from the same
    /// phone never came applies to the current version. While the subscription has expired it
    /// keeps waiting; it applies once, after renewal. A create arriving later changes nothing.
    @Test func anUpdateThatWaitsPastTheLimitAppliesAllTheSameMarkedSoft() throws {
        let clock = ManualClock()
        let p = try Published(server: try TestServer { $0.clock = clock })
        let overdue = p.f.server.app.operations.overdueEntityChanges
        let limit: Int64 = 5 * 86_400_000
        // A visit of a household registered on a phone that never synced.
        let orphan = "7a2e3b5f-4c8d-4f32-8b66-1d9e3f7c2b02"
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000061", entityId: orphan, baseVersion: 1, members: 6,
                                                 branch: (id: "d3f2e5cc-7f40-4e9d-9f33-5c6d7e8f9a01", trunk: nil))).status == 201)
        // A phone's second visit of a registered household, its first visit lost.
        #expect(try p.collect.submit(try p.register("uuid:reg-00000061", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")).status == 201)
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000062", entityId: Self.household, baseVersion: 2, members: 7,
                                                 branch: (id: "e4a3f6dd-8a51-4fae-8a44-6d7e8f9a0b12", trunk: 1))).status == 201)
        #expect(try p.waiting() == 2)
        clock.advance(byMillis: limit - 60_000)
        #expect(overdue.apply(waitedLongerThan: limit) == 0)
        #expect(try p.waiting() == 2)
        clock.advance(byMillis: 120_000)
        try p.f.setExpiry(clock.nowMillis() - 60_000)
        #expect(overdue.apply(waitedLongerThan: limit) == 0)
        #expect(try p.waiting() == 2 && p.entity(orphan) == nil)
        try p.f.setExpiry(clock.nowMillis() + 86_400_000)
        #expect(overdue.apply(waitedLongerThan: limit) == 2)
        #expect(try p.waiting() == 0)
        let made = try p.entity(orphan)
        #expect(made == .init(label: "Household of 6 people", properties: ["members": "6"], version: 1, conflict: "soft"), "\(String(describing: made))")
        #expect(try p.entity(Self.household) == .init(label: "Household of 7 people", properties: ["head": "Ada", "members": "7", "village": "Kisii"],
                                                      version: 2, conflict: "soft"))
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'entity.waitEnded'") == 2)
        #expect(overdue.apply(waitedLongerThan: limit) == 0)
        // The orphan's registration arrives at last: stored, and the entity stays as it is.
        #expect(try p.collect.submit(try p.register("uuid:reg-00000062", entityId: orphan, head: "Bo", members: 5, village: "Kisii")).status == 201)
        #expect(try p.entity(orphan)?.version == 1)
    }

    /// A phone's offline visits of an entity it downloaded at version 1 (one branch, trunk 1), with
    /// and without another phone's visit racing them, in every order they can reach the server:
    /// the final state is what the phones' order implies, each submission applies once, and a
    /// conflict is marked exactly when two phones raced (on the same property: hard).
    @Test func offlineVisitsApplyInThePhonesOrderWhateverOrderTheyArriveIn() throws {
        let branch = (id: "c2e1d4bb-6e3f-4d8c-8f22-4b5c6d7e8f90", trunk: Int64?.some(1))
        // Phone A: members 5 (made from version 1), then 6 (made from its own version 2).
        // Phone B: members 9, made from version 1, online.
        let arrivals: [[Int]] = [[0, 1], [1, 0], [0, 1, 2], [1, 0, 2], [0, 2, 1], [1, 2, 0], [2, 0, 1], [2, 1, 0]]
        for order in arrivals {
            let raced = order.contains(2)
            let p = try Published()
            #expect(try p.collect.submit(try p.register("uuid:reg-00000041", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")).status == 201)
            let sent = [try p.visit("uuid:visit-a-000041", entityId: Self.household, baseVersion: 1, members: 5, branch: branch),
                        try p.visit("uuid:visit-a-000042", entityId: Self.household, baseVersion: 2, members: 6, branch: branch),
                        try p.visit("uuid:visit-b-000043", entityId: Self.household, baseVersion: 1, members: 9)]
            for i in order { #expect(try p.collect.submit(sent[i]).status == 201, "\(order)") }
            // Phone A's second visit applies after its first, wherever B's falls; the last applied wins.
            let stored = try #require(try p.entity(Self.household))
            #expect(stored.version == (raced ? 4 : 3), "\(order)")
            #expect(try p.waiting() == 0, "\(order)")
            let applied = try p.f.server.rows("""
                SELECT r.client_submission_id FROM entity_versions v JOIN responses r ON r.response_id = v.response_id
                WHERE v.entity_id = ? AND v.version > 1 ORDER BY v.version
                """, [.text(Self.household)]).map { try $0.string("client_submission_id") }
            #expect(applied.firstIndex(of: "uuid:visit-a-000041")! < applied.firstIndex(of: "uuid:visit-a-000042")!, "\(order): \(applied)")
            #expect(stored.properties["members"] == (applied.last == "uuid:visit-b-000043" ? "9" : "6"), "\(order)")
            // B raced A: whichever of them reached the server second made its change from a stale version.
            #expect(stored.conflict == (raced ? "hard" : nil), "\(order)")
            // Sent again, all of it: nothing changes.
            for i in order { #expect(try p.collect.submit(sent[i]).status == 202) }
            #expect(try p.entity(Self.household) == stored)
        }
    }

    @Test(.enabled(if: !TestEngine.isPostgres, "edits the SQLite file to make violations")) func surveydCheckVerifiesEntitiesAgainstTheirVersions() throws {
        let p = try Published()
        #expect(try p.collect.submit(try p.register("uuid:reg-00000051", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")).status == 201)
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000051", entityId: Self.household, baseVersion: 1, members: 5)).status == 201)
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000052", entityId: "ffffffff-0000-4000-8000-000000000000", baseVersion: 1, members: 3)).status == 201)
        let dir = p.f.server.dataDir
        let (ok, report) = try MaintenanceTests.surveyd(["check", "--data-dir", dir])
        #expect(ok == 0, "\(report)")
        // An entity changed behind its versions' back, and a version whose response is gone.
        let conn = try Connection(path: dir + "/surveyd.sqlite", readOnly: false)
        try conn.run("UPDATE entities SET properties = '{\"members\":\"99\"}' WHERE entity_id = ?", [.text(Self.household)])
        try conn.run("DELETE FROM entity_versions WHERE entity_id = ? AND version = 1", [.text(Self.household)])
        let (bad, badReport) = try MaintenanceTests.surveyd(["check", "--data-dir", dir])
        #expect(bad == 1)
        #expect(badReport.contains("entity households/\(Self.household): version 2 but 1 versions recorded"), "\(badReport)")
        #expect(badReport.contains("entity households/\(Self.household): not as its version 2 left it"), "\(badReport)")
        try conn.run("UPDATE entity_versions SET response_id = 'rsp_gone' WHERE entity_id = ?", [.text(Self.household)])
        try conn.run("UPDATE entity_waiting SET response_id = 'rsp_gone_too'")
        let (_, gone) = try MaintenanceTests.surveyd(["check", "--data-dir", dir])
        #expect(gone.contains("entity households/\(Self.household): version 2 names no response"), "\(gone)")
        #expect(gone.contains("a waiting entity update names no response (rsp_gone_too)"), "\(gone)")
    }

    @Test func anAdminWritesEntitiesThroughTheAPIGatedAndKeyed() throws {
        let p = try Published()
        let base = "/v1/orgs/\(p.f.orgId)/entity-lists/households/entities"
        let id = "9c8b7a69-5d4e-4f3a-8b2c-1d0e9f8a7b6c"
        func send(_ method: String, _ path: String, token: String? = nil, _ body: JSONValue? = nil, key: String? = nil) throws -> Reply {
            try p.f.client.request(method, path, token: token ?? p.f.adminToken, json: body, headers: key.map { ["Idempotency-Key": $0] } ?? [:])
        }
        // Create: keyed, replayed, refused by name.
        let new: JSONValue = ["id": .string(id), "label": "Household of Cy", "properties": ["head": "Cy", "members": 3]]
        let created = try send("POST", base, new, key: "entity-create-0001")
        #expect(created.status == 201, "\(created.text)")
        #expect(created.header("location") == "\(base)/\(id)")
        #expect(created.json?["properties"] == ["head": "Cy", "members": "3"])
        let again = try send("POST", base, new, key: "entity-create-0001")
        #expect(again.status == 200 && again.header("idempotent-replayed") == "true" && again.body == created.body)
        #expect(try send("POST", base, ["label": "Other"], key: "entity-create-0001").json?["errorCode"] == 1004)
        #expect(try send("POST", base, new).json?["errorCode"] == 1004)  // the id is taken
        let unknown = try send("POST", base, ["label": "X", "properties": ["colour": "red"]])
        #expect(unknown.status == 422 && unknown.json?["errors"]?.arrayValue?.first?["path"] == "properties.colour")
        #expect(try send("POST", base, token: p.f.collectorToken, new).status == 403)
        let generated = try send("POST", base, ["label": "No id given"])
        #expect(generated.status == 201)
        #expect(generated.json?["id"]?.stringValue?.count == 36)

        // Update: from the version it was made from; stale is 409 / 1021 with the current entity.
        #expect(try send("PATCH", "\(base)/\(id)", ["label": "x"]).json?["errorCode"] == 1031)
        let updated = try send("PATCH", "\(base)/\(id)", ["baseVersion": 1, "properties": ["members": "4"]], key: "entity-update-0001")
        #expect(updated.status == 200, "\(updated.text)")
        #expect(updated.json?["version"] == 2 && updated.json?["properties"] == ["head": "Cy", "members": "4"])
        let stale = try send("PATCH", "\(base)/\(id)", ["baseVersion": 1, "properties": ["members": "9"]])
        #expect(stale.status == 409 && stale.json?["errorCode"] == 1021)
        #expect(stale.json?["current"]?["version"] == 2)
        #expect(try send("PATCH", "\(base)/\(id)", ["force": true, "label": "Household of Cy (moved)"]).json?["version"] == 3)

        // Expired: a stale change is still 1021 (step 4), a current one 402, and nothing changes.
        try p.f.expire()
        #expect(try send("PATCH", "\(base)/\(id)", ["baseVersion": 1, "label": "y"]).json?["errorCode"] == 1021)
        let refused = try send("PATCH", "\(base)/\(id)", ["baseVersion": 3, "label": "y"], key: "entity-update-0002")
        #expect(refused.status == 402 && refused.json?["errorCode"] == 1001)
        #expect(try send("DELETE", "\(base)/\(id)").status == 402)
        #expect(try p.entity(id)?.version == 3)
        try p.f.renew()
        #expect(try send("PATCH", "\(base)/\(id)", ["baseVersion": 3, "label": "y"], key: "entity-update-0002").status == 200)

        // Delete leaves the list, its CSV and reads; restore brings it back as it was.
        let hash = try p.listedCSV().hash
        #expect(try send("DELETE", "\(base)/\(id)", key: "entity-delete-0001").status == 204)
        #expect(try send("DELETE", "\(base)/\(id)", key: "entity-delete-0001").status == 204)
        #expect(try send("GET", "\(base)/\(id)").status == 404)
        #expect(try !p.csv().contains(id))
        #expect(try p.listedCSV().hash != hash)
        let restored = try send("POST", "\(base)/\(id)/restore")
        #expect(restored.status == 200 && restored.json?["label"] == "y" && restored.json?["version"] == 4 && restored.json?["deletedAt"] == .null)
        #expect(try p.csv().contains(id))

        // Versions say the API made them.
        let versions = try send("GET", "\(base)/\(id)/versions")
        #expect(versions.json?["items"]?.arrayValue?.map { $0["source"]?["type"] } == ["api", "api", "api", "api"])
        // Restored again under a key of its own: the same answer, and `surveyd check` finds every kept key with its write.
        #expect(try send("POST", "\(base)/\(id)/restore", key: "entity-restore-0002").json?["version"] == 4)
        #expect(try p.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE target_type = 'entity'") == 8)
        if !TestEngine.isPostgres {
            let (ok, report) = try MaintenanceTests.surveyd(["check", "--data-dir", p.f.server.dataDir])
            #expect(ok == 0, "\(report)")
        }
    }

    @Test func anAdminCreatesAListThatAFormThenWritesTo() throws {
        let f = try Fixture()
        let lists = "/v1/orgs/\(f.orgId)/entity-lists"
        let new: JSONValue = ["name": "households", "label": "Households of the district", "properties": ["head", "district"]]
        let created = try f.client.post(lists, token: f.adminToken, new, headers: ["Idempotency-Key": "entity-list-0001"])
        #expect(created.status == 201, "\(created.text)")
        #expect(created.header("location") == "\(lists)/households")
        #expect(created.json?["properties"] == ["head", "district"])
        #expect(try f.client.post(lists, token: f.adminToken, new, headers: ["Idempotency-Key": "entity-list-0001"]).status == 200)
        #expect(try f.client.post(lists, token: f.adminToken, new).json?["errorCode"] == 1004)
        let bad = try f.client.post(lists, token: f.adminToken, ["name": "1st list", "properties": ["label", "ok"]])
        #expect(bad.status == 422)
        #expect(bad.json?["errors"]?.arrayValue?.compactMap { $0["path"]?.stringValue } == ["name", "properties[0]"])
        #expect(try f.client.post(lists, token: f.collectorToken, ["name": "trees"]).status == 403)
        try f.expire()
        #expect(try f.client.post(lists, token: f.adminToken, ["name": "trees"]).status == 402)
        try f.renew()
        // A form that writes the list adds its own properties after the list's.
        _ = try Published.publish(f, "household_registration")
        let list = try f.client.get(lists + "/households", token: f.adminToken)
        #expect(list.json?["properties"] == ["head", "district", "members", "village"])
        #expect(list.json?["label"] == "Households of the district")
    }

    @Test func entityChangesAreWebhookEvents() throws {
        let receiver = try WebhookReceiver()
        let p = try Published(server: try TestServer { $0.webhooksAllowPrivate = true })
        let hook = try p.f.client.post("/v1/orgs/\(p.f.orgId)/webhooks", token: p.f.adminToken,
                                       ["url": .string(receiver.url()), "events": ["entity.created", "entity.updated", "entity.conflict"]])
        #expect(hook.status == 201, "\(hook.text)")
        #expect(try p.collect.submit(try p.register("uuid:reg-00000061", entityId: Self.household, head: "Ada", members: 4, village: "Kisii")).status == 201)
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000061", entityId: Self.household, baseVersion: 1, members: 5)).status == 201)
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000062", entityId: Self.household, baseVersion: 1, members: 7)).status == 201)
        #expect(receiver.wait { $0.count >= 4 }, "\(receiver.calls.map(\.type))")
        let calls = receiver.calls
        #expect(calls.map(\.type) == ["entity.created", "entity.updated", "entity.updated", "entity.conflict"])
        let created = try #require(calls.first?.json?["data"])
        #expect(created["list"] == "households" && created["id"] == .string(Self.household) && created["version"] == 1)
        #expect(created["source"]?["instanceID"] == "uuid:reg-00000061")
        let conflict = try #require(calls.last?.json?["data"])
        #expect(conflict["version"] == 3 && conflict["conflict"] == "hard")
        #expect(conflict["diff"]?.arrayValue?.contains(["path": "properties.members", "old": "5", "new": "7"]) == true)
        // A replay sends nothing more.
        #expect(try p.collect.submit(try p.visit("uuid:visit-0000062", entityId: Self.household, baseVersion: 1, members: 7)).status == 202)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(receiver.calls.count == 4)
    }
}
