import Foundation
import FoundationXML
import SurveyDomain
@testable import SurveyStorage
import Testing

/// Several entities per form, and entities of repeats (ODK Entities 2025.1, Docs/entities.md): a
/// household roster (pyxform 4.5.0, `Tests/SurveyXFormTests/Fixtures/make_entity_forms.py`)
/// registers a household at its root and each member in a repeat, to a second list; a member
/// visit updates members from a repeat. Published on a real server, sent as ODK Collect sends
/// them and through the JSON door; what is stored is read from the database itself.
@Suite struct EntityRepeatTests {
    static let household = "7a1d2a4e-3b7c-4e21-9a55-0c8d2f6b1a01"
    static let members = ["7a1d2a4e-3b7c-4e21-9a55-0c8d2f6b1b01", "7a1d2a4e-3b7c-4e21-9a55-0c8d2f6b1b02",
                          "7a1d2a4e-3b7c-4e21-9a55-0c8d2f6b1b03"]

    struct Roster {
        let f: Fixture
        let collect: CollectClient
        let roster: EntityListTests.Published.Version

        init() throws {
            f = try Fixture()
            collect = CollectClient(f)
            roster = try EntityListTests.Published.publish(f, "household_roster")
        }

        /// A roster as Collect sends it: the household's `meta/entity` at the root, and each
        /// member's in its own repeat instance. `memberIds`: one per member, in order.
        func instance(_ instanceID: String, householdId: String, head: String, memberIds: [String], names: [String], ages: [Int]) throws -> [UInt8] {
            var values = [("head_name", head), ("village_name", "Kisii")]
            for (k, name) in names.enumerated() { values.append(("member[\(k + 1)]/member_name", name)) }
            for (k, age) in ages.enumerated() { values.append(("member[\(k + 1)]/member_age", String(age))) }
            let xml = try CollectClient.instance(of: roster.xform, instanceID: instanceID, values: values, repeats: [("member", names.count)])
            let document = try XMLDocument(data: Data(xml))
            let root = try #require(try document.nodes(forXPath: "/*/*[local-name()='meta']/*[local-name()='entity']").first as? XMLElement)
            set(root, id: householdId, label: "Household of \(head)")
            let inRepeats = try document.nodes(forXPath: "/*/*[local-name()='member']/*[local-name()='meta']/*[local-name()='entity']")
                .compactMap { $0 as? XMLElement }
            #expect(inRepeats.count == memberIds.count)
            for (k, e) in inRepeats.enumerated() where k < memberIds.count { set(e, id: memberIds[k], label: names[k]) }
            return Array(document.xmlData)
        }

        func set(_ e: XMLElement, id: String, label: String) {
            e.removeAttribute(forName: "id")
            e.addAttribute(XMLNode.attribute(withName: "id", stringValue: id) as! XMLNode)
            e.elements(forName: "label").first?.stringValue = label
        }

        func entity(_ list: String, _ id: String) throws -> (label: String, properties: [String: String], version: Int64)? {
            guard let row = try f.server.rows("SELECT label, properties, version FROM entities WHERE org_id = ? AND list_name = ? AND entity_id = ?",
                                              [.text(f.orgId), .text(list), .text(id)]).first else { return nil }
            let properties = try JSONParser.parse(Array(try row.string("properties").utf8)).objectValue?.compactMapValues(\.stringValue) ?? [:]
            return (try row.string("label"), properties, try row.int("version"))
        }

        func count(_ list: String) throws -> Int64 {
            try f.server.count("SELECT COUNT(*) AS n FROM entities WHERE org_id = ? AND list_name = ?", [.text(f.orgId), .text(list)])
        }

        func versions() throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM entity_versions WHERE org_id = ?", [.text(f.orgId)]) }
        func responses() throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM responses") }
        func revisions() throws -> [String] {
            try f.server.rows("SELECT name, revision FROM entity_lists WHERE org_id = ? ORDER BY name", [.text(f.orgId)])
                .map { "\(try $0.string("name"))=\(try $0.int("revision"))" }
        }
    }

    @Test func aRosterPublishesWithBothListsAndItsXFormServedAsPublished() throws {
        let r = try Roster()
        let text = String(decoding: r.roster.xform, as: UTF8.self)
        #expect(text.contains(#"entities:entities-version="2025.1.0""#))
        #expect(text.contains(#"<member><member_name/><member_age/><meta><entity dataset="members" create="1" id="">"#), "\(text)")
        try ODKValidate.accept(r.roster.xform, label: "a roster with an entity per repeat instance")
        let version = try r.f.client.get("/v1/orgs/\(r.f.orgId)/survey-versions/\(r.roster.versionId)", token: r.f.adminToken)
        let definition = try #require(version.json?["definition"])
        #expect(definition["entity"] == nil)
        #expect(definition["entities"] == [
            ["list": "households", "create": true, "id": "uuid()", "label": "concat('Household of ', ${head_name})",
             "saveTo": ["head_name": "head", "village_name": "village"], "specVersion": "2025.1.0"],
            ["list": "members", "create": true, "id": "uuid()", "label": "${member_name}",
             "saveTo": ["member_name": "full_name", "member_age": "age"], "specVersion": "2025.1.0", "container": "member"],
        ])
        let lists = try r.f.server.rows("SELECT name, properties FROM entity_lists WHERE org_id = ? ORDER BY name", [.text(r.f.orgId)])
            .map { "\(try $0.string("name")) \(try $0.string("properties"))" }
        #expect(lists == [#"households ["head","village"]"#, #"members ["age","full_name"]"#])
        #expect(try r.collect.formList().forms.map(\.formID) == ["household_roster"])
    }

    @Test func aRosterCreatesTheHouseholdAndEachMemberOnceInItsOwnTransaction() throws {
        let r = try Roster()
        let sent = try r.instance("uuid:roster-000001", householdId: Self.household, head: "Ada", memberIds: Self.members,
                                  names: ["Ada", "Bo", "Cy"], ages: [41, 12, 7])
        let created = try r.collect.submit(sent)
        #expect(created.status == 201, "\(created.text)")
        #expect(try r.entity("households", Self.household)?.properties == ["head": "Ada", "village": "Kisii"])
        #expect(try r.entity("households", Self.household)?.label == "Household of Ada")
        for (k, (name, age)) in zip(["Ada", "Bo", "Cy"], [41, 12, 7]).enumerated() {
            let m = try #require(try r.entity("members", Self.members[k]))
            #expect(m.label == name && m.version == 1 && m.properties == ["full_name": name, "age": String(age)], "\(m)")
        }
        #expect(try r.count("members") == 3 && r.count("households") == 1)
        // Every version is the one response's.
        let sources = try r.f.server.rows("SELECT DISTINCT response_id FROM entity_versions WHERE org_id = ?", [.text(r.f.orgId)])
        #expect(sources.count == 1)
        #expect(try r.versions() == 4)
        let audited = try r.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'entity.create'")
        #expect(audited == 4)

        // Sent again: the stored response, nothing applied twice.
        let revisions = try r.revisions()
        #expect(try r.collect.submit(sent).status == 202)
        #expect(try r.versions() == 4 && r.count("members") == 3 && r.responses() == 1)
        #expect(try r.revisions() == revisions)
    }

    @Test func aRefusedRosterChangesNoEntityOfAnyList() throws {
        let r = try Roster()
        let sent = try r.instance("uuid:roster-000002", householdId: Self.household, head: "Ada", memberIds: Self.members,
                                  names: ["Ada", "Bo", "Cy"], ages: [41, 12, 7])
        let revisions = try r.revisions()
        try r.f.expire()
        let refused = try r.collect.submit(sent)
        #expect(refused.status == 402)
        #expect(refused.header("surveyd-error-code") == "1001")
        #expect(try r.count("members") == 0 && r.count("households") == 0 && r.versions() == 0 && r.responses() == 0)
        #expect(try r.revisions() == revisions)
        try r.f.renew()

        // One member's id no entity can have: 422 at that member, and the household is not made either.
        let bad = try r.instance("uuid:roster-000003", householdId: Self.household, head: "Ada", memberIds: [Self.members[0], "x"],
                                 names: ["Ada", "Bo"], ages: [41, 12])
        let invalid = try r.collect.submit(bad)
        #expect(invalid.status == 422, "\(invalid.text)")
        #expect(invalid.text.contains("entities[1].id"), "\(invalid.text)")
        #expect(try r.count("members") == 0 && r.count("households") == 0 && r.versions() == 0 && r.responses() == 0)

        // Renewed, the first applies exactly once.
        #expect(try r.collect.submit(sent).status == 201)
        #expect(try r.count("members") == 3 && r.count("households") == 1)
        #expect(try r.collect.submit(sent).status == 202)
        #expect(try r.versions() == 4)
    }

    @Test func aMemberVisitUpdatesEachMemberOfItsRepeat() throws {
        let r = try Roster()
        #expect(try r.collect.submit(try r.instance("uuid:roster-000004", householdId: Self.household, head: "Ada", memberIds: Self.members,
                                                    names: ["Ada", "Bo", "Cy"], ages: [41, 12, 7])).status == 201)
        let visit = try EntityListTests.Published.publish(r.f, "member_visit")
        let text = String(decoding: visit.xform, as: UTF8.self)
        #expect(text.contains(#"<checkup><member/><age_now/><meta><entity dataset="members" update="1""#), "\(text)")
        try ODKValidate.accept(visit.xform, label: "a follow-up updating an entity per repeat instance")
        // Its manifest names the members' list, served from its entities.
        let form = try #require(try r.collect.formList().forms.first { $0.formID == "member_visit" })
        let manifest = try #require(form.manifestURL.flatMap(URL.init(string:)))
        let files = try r.f.client.request("GET", manifest.path, headers: CollectClient.headers)
        #expect(files.text.contains("<filename>members.csv</filename>"), "\(files.text)")

        // Two check-ups: Bo and Cy a year older.
        var values = [("visitor", "Eve")]
        for (k, age) in [13, 8].enumerated() {
            values += [("checkup[\(k + 1)]/member", Self.members[k + 1]), ("checkup[\(k + 1)]/age_now", String(age))]
        }
        let xml = try CollectClient.instance(of: visit.xform, instanceID: "uuid:mvisit-00001", values: values, repeats: [("checkup", 2)])
        let document = try XMLDocument(data: Data(xml))
        let entities = try document.nodes(forXPath: "/*/*[local-name()='checkup']/*[local-name()='meta']/*[local-name()='entity']")
            .compactMap { $0 as? XMLElement }
        #expect(entities.count == 2)
        for (k, e) in entities.enumerated() {
            for (name, value) in [("id", Self.members[k + 1]), ("baseVersion", "1")] {
                e.removeAttribute(forName: name)
                e.addAttribute(XMLNode.attribute(withName: name, stringValue: value) as! XMLNode)
            }
        }
        let updated = try r.collect.submit(Array(document.xmlData))
        #expect(updated.status == 201, "\(updated.text)")
        #expect(try r.entity("members", Self.members[0])?.version == 1)
        #expect(try r.entity("members", Self.members[1]).map { ($0.version, $0.properties["age"], $0.label) } ?? (0, nil, "") == (2, "13", "Bo"))
        #expect(try r.entity("members", Self.members[2]).map { ($0.version, $0.properties["age"]) } ?? (0, nil) == (2, "8"))
        #expect(try r.collect.submit(Array(document.xmlData)).status == 202)
        #expect(try r.versions() == 6)

        // The response's page lists every entity it updated.
        let response = try #require(try r.f.server.rows("SELECT response_id FROM responses WHERE client_submission_id = 'uuid:mvisit-00001'").first)
        let admin = try ConsoleAdminTests.Session(r.f, token: r.f.adminToken)
        let page = try admin.get("/console/orgs/\(r.f.orgId)/responses/\(try response.string("response_id"))")
        #expect(page.status == 200)
        let list = "/console/orgs/\(r.f.orgId)/entity-lists/members/entities/"
        #expect(page.text.contains("href=\"\(list)\(Self.members[1])\"") && page.text.contains("href=\"\(list)\(Self.members[2])\""))
        #expect(!page.text.contains(Self.members[0]))
    }

    /// A follow-up that reads two lists (a household at its root, its members in a repeat) is served
    /// both: each in the manifest as an entity list, each CSV from its own entities, and one
    /// submission updates the household and each member it names.
    @Test func aFormReadingTwoListsIsServedBothAndUpdatesBoth() throws {
        let r = try Roster()
        #expect(try r.collect.submit(try r.instance("uuid:roster-000009", householdId: Self.household, head: "Ada", memberIds: Self.members,
                                                    names: ["Ada", "Bo", "Cy"], ages: [41, 12, 7])).status == 201)
        let checkup = try EntityListTests.Published.publish(r.f, "household_checkup")
        try ODKValidate.accept(checkup.xform, label: "a follow-up reading two entity lists")
        let form = try #require(try r.collect.formList().forms.first { $0.formID == "household_checkup" })
        let manifestURL = try #require(form.manifestURL.flatMap(URL.init(string:)))
        let manifest = try r.f.client.request("GET", manifestURL.path, headers: CollectClient.headers)
        let document = try XMLDocument(data: Data(manifest.text.utf8))
        let files = try document.nodes(forXPath: "//*[local-name()='mediaFile']").compactMap { $0 as? XMLElement }
        #expect(files.compactMap { $0.elements(forName: "filename").first?.stringValue } == ["households.csv", "members.csv"], "\(manifest.text)")
        #expect(manifest.text.components(separatedBy: #"<mediaFile type="entityList">"#).count == 3, "\(manifest.text)")
        for (file, ids) in [("households.csv", [Self.household]), ("members.csv", Self.members)] {
            let url = try #require(files.first { $0.elements(forName: "filename").first?.stringValue == file }?
                .elements(forName: "downloadUrl").first?.stringValue.flatMap(URL.init(string:)))
            let csv = try r.f.client.request("GET", url.path, headers: CollectClient.headers)
            #expect(csv.status == 200, "\(csv.text)")
            let names = csv.text.split(whereSeparator: \.isNewline).dropFirst().compactMap { $0.split(separator: ",").first.map(String.init) }
            #expect(names.sorted() == ids.sorted(), "\(file): \(csv.text)")
        }

        // The household now has 4 people; Cy is 8.
        let xml = try CollectClient.instance(of: checkup.xform, instanceID: "uuid:hcheck-00001",
                                             values: [("household", Self.household), ("members_now", "4"),
                                                      ("checkup[1]/member", Self.members[2]), ("checkup[1]/age_now", "8")],
                                             repeats: [("checkup", 1)])
        let instance = try XMLDocument(data: Data(xml))
        let entities = try ["/*/*[local-name()='meta']/*[local-name()='entity']", "/*/*[local-name()='checkup']/*[local-name()='meta']/*[local-name()='entity']"]
            .flatMap { try instance.nodes(forXPath: $0) }.compactMap { $0 as? XMLElement }
        #expect(entities.count == 2)
        for (e, id) in zip(entities, [Self.household, Self.members[2]]) {
            for (name, value) in [("id", id), ("baseVersion", "1")] {
                e.removeAttribute(forName: name)
                e.addAttribute(XMLNode.attribute(withName: name, stringValue: value) as! XMLNode)
            }
        }
        let sent = try r.collect.submit(Array(instance.xmlData))
        #expect(sent.status == 201, "\(sent.text)")
        #expect(try r.entity("households", Self.household).map { ($0.version, $0.properties["members"]) } ?? (0, nil) == (2, "4"))
        #expect(try r.entity("members", Self.members[2]).map { ($0.version, $0.properties["age"]) } ?? (0, nil) == (2, "8"))
        #expect(try r.entity("members", Self.members[1])?.version == 1)
    }

    @Test func theJSONDoorTakesEachEntityOfARepeatByItsInstance() throws {
        let r = try Roster()
        func body(_ id: String, entities: JSONValue) -> JSONValue {
            ["clientSubmissionId": .string(id), "surveyVersionId": .string(r.roster.versionId), "contentHash": .string(r.roster.contentHash),
             "answers": ["head_name": "Ada", "village_name": "Kisii",
                         "member": [["member_name": "Ada", "member_age": 41], ["member_name": "Bo", "member_age": 12]]],
             "entity": ["id": .string(Self.household), "create": true, "label": "Household of Ada"],
             "entities": entities]
        }
        func post(_ b: JSONValue) throws -> Reply { try r.f.client.post("/v1/orgs/\(r.f.orgId)/responses", token: r.f.collectorToken, b) }
        let both: JSONValue = [
            ["container": "member", "index": 0, "id": .string(Self.members[0]), "create": true, "label": "Ada"],
            ["container": "member", "index": 1, "id": .string(Self.members[1]), "create": true, "label": "Bo"],
        ]
        // Refused by path, and nothing stored: a container the form has no entity in, an
        // instance the answers lack, a repeat's entity without its instance.
        for (entities, path) in [
            ([["container": "household", "id": .string(Self.members[0]), "create": true]] as JSONValue, "entities[0].container"),
            ([["container": "member", "index": 2, "id": .string(Self.members[0]), "create": true]], "entities[0].index"),
            ([["container": "member", "id": .string(Self.members[0]), "create": true]], "entities[0].index"),
            ([["container": "member", "index": 0, "id": .string(Self.members[0]), "create": true],
              ["container": "member", "index": 1, "id": .string(Self.members[0]), "create": true]], "entities"),
        ] {
            let refused = try post(body("json-roster-bad-\(path.count)", entities: entities))
            #expect(refused.status == 422, "\(refused.text)")
            #expect(refused.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == path, "\(refused.text)")
        }
        #expect(try r.versions() == 0 && r.responses() == 0)

        let created = try post(body("json-roster-0001", entities: both))
        #expect(created.status == 201, "\(created.text)")
        #expect(try r.entity("members", Self.members[1])?.properties == ["full_name": "Bo", "age": "12"])
        #expect(try r.entity("households", Self.household)?.properties == ["head": "Ada", "village": "Kisii"])
        #expect(try r.versions() == 3)
        // The same again is a replay; other entities under the same id are another submission.
        #expect(try post(body("json-roster-0001", entities: both)).status == 200)
        let other: JSONValue = [["container": "member", "index": 0, "id": .string(Self.members[2]), "create": true, "label": "Ada"]]
        #expect(try post(body("json-roster-0001", entities: other)).status == 409)
        #expect(try r.versions() == 3 && r.responses() == 1)
    }

    @Test func anEditOfAnAnswerSavedToAMemberIsRefusedAndChangesNothing() throws {
        let r = try Roster()
        #expect(try r.collect.submit(try r.instance("uuid:roster-000005", householdId: Self.household, head: "Ada", memberIds: Self.members,
                                                    names: ["Ada", "Bo", "Cy"], ages: [41, 12, 7])).status == 201)
        let row = try #require(try r.f.server.rows("SELECT response_id, revision FROM responses").first)
        let id = try row.string("response_id")
        let answers: JSONValue = ["head_name": "Ada", "village_name": "Nyeri",
                                  "member": [["member_name": "Ada", "member_age": 41], ["member_name": "Bo", "member_age": 13],
                                             ["member_name": "Cy", "member_age": 7]]]
        let refused = try r.f.client.request("PUT", "/v1/orgs/\(r.f.orgId)/responses/\(id)/answers", token: r.f.adminToken,
                                             json: ["answers": answers, "expectedRevision": 1])
        #expect(refused.status == 422, "\(refused.text)")
        #expect(try r.entity("members", Self.members[1])?.version == 1)
        #expect(try r.entity("households", Self.household)?.properties["village"] == "Kisii")
        // An edit of the household's answers alone updates the household.
        let kept: JSONValue = ["head_name": "Ada", "village_name": "Nyeri",
                "member": [["member_name": "Ada", "member_age": 41], ["member_name": "Bo", "member_age": 12], ["member_name": "Cy", "member_age": 7]]]
        let edited = try r.f.client.request("PUT", "/v1/orgs/\(r.f.orgId)/responses/\(id)/answers", token: r.f.adminToken,
                                            json: ["answers": kept, "expectedRevision": 1])
        #expect(edited.status == 200, "\(edited.text)")
        #expect(try r.entity("households", Self.household).map { ($0.version, $0.properties["village"]) } ?? (0, nil) == (2, "Nyeri"))
        #expect(try r.entity("members", Self.members[1])?.version == 1)
    }

    @Test func aTaskOnAMemberIsCompletedByTheVisitThatUpdatesIt() throws {
        let r = try Roster()
        #expect(try r.collect.submit(try r.instance("uuid:roster-000006", householdId: Self.household, head: "Ada", memberIds: Self.members,
                                                    names: ["Ada", "Bo", "Cy"], ages: [41, 12, 7])).status == 201)
        let visit = try EntityListTests.Published.publish(r.f, "member_visit")
        let task = try r.f.client.post("/v1/orgs/\(r.f.orgId)/tasks", token: r.f.adminToken,
                                       ["title": "See Cy", "surveyId": .string(visit.surveyId), "assigneeUserId": .string(r.f.collectorId),
                                        "entityList": "members", "entityId": .string(Self.members[2])])
        #expect(task.status == 201, "\(task.text)")
        let taskId = try #require(task.json?["taskId"]?.stringValue)
        // A visit of Bo, then Cy: the second check-up's entity is the task's.
        var values = [("visitor", "Eve")]
        for (k, m) in [Self.members[1], Self.members[2]].enumerated() {
            values += [("checkup[\(k + 1)]/member", m), ("checkup[\(k + 1)]/age_now", "20")]
        }
        let xml = try CollectClient.instance(of: visit.xform, instanceID: "uuid:mvisit-00002", values: values, repeats: [("checkup", 2)])
        let document = try XMLDocument(data: Data(xml))
        let entities = try document.nodes(forXPath: "/*/*[local-name()='checkup']/*[local-name()='meta']/*[local-name()='entity']")
            .compactMap { $0 as? XMLElement }
        for (k, e) in entities.enumerated() {
            for (name, value) in [("id", Self.members[k + 1]), ("baseVersion", "1")] {
                e.removeAttribute(forName: name)
                e.addAttribute(XMLNode.attribute(withName: name, stringValue: value) as! XMLNode)
            }
        }
        #expect(try r.collect.submit(Array(document.xmlData)).status == 201)
        let stored = try #require(try r.f.server.rows("SELECT state FROM tasks WHERE task_id = ?", [.text(taskId)]).first)
        #expect(try stored.string("state") == "completed")
    }

    /// A visit of two members whose roster has not arrived: both updates wait, kept apart under
    /// the one response, and apply when the roster's creates arrive.
    @Test func updatesOfSeveralMembersWaitForTheirCreatesUnderOneResponse() throws {
        let r = try Roster()
        let visit = try EntityListTests.Published.publish(r.f, "member_visit")
        var values = [("visitor", "Eve")]
        for (k, age) in [13, 8].enumerated() {
            values += [("checkup[\(k + 1)]/member", Self.members[k + 1]), ("checkup[\(k + 1)]/age_now", String(age))]
        }
        let xml = try CollectClient.instance(of: visit.xform, instanceID: "uuid:mvisit-00003", values: values, repeats: [("checkup", 2)])
        let document = try XMLDocument(data: Data(xml))
        for (k, e) in try document.nodes(forXPath: "/*/*[local-name()='checkup']/*[local-name()='meta']/*[local-name()='entity']")
            .compactMap({ $0 as? XMLElement }).enumerated() {
            for (name, value) in [("id", Self.members[k + 1]), ("baseVersion", "1")] {
                e.removeAttribute(forName: name)
                e.addAttribute(XMLNode.attribute(withName: name, stringValue: value) as! XMLNode)
            }
        }
        #expect(try r.collect.submit(Array(document.xmlData)).status == 201)
        #expect(try r.f.server.count("SELECT COUNT(*) AS n FROM entity_waiting") == 2)
        #expect(try r.count("members") == 0)
        #expect(try r.collect.submit(try r.instance("uuid:roster-000007", householdId: Self.household, head: "Ada", memberIds: Self.members,
                                                    names: ["Ada", "Bo", "Cy"], ages: [41, 12, 7])).status == 201)
        #expect(try r.f.server.count("SELECT COUNT(*) AS n FROM entity_waiting") == 0)
        #expect(try r.entity("members", Self.members[1]).map { ($0.version, $0.properties["age"]) } ?? (0, nil) == (2, "13"))
        #expect(try r.entity("members", Self.members[2]).map { ($0.version, $0.properties["age"]) } ?? (0, nil) == (2, "8"))
        #expect(try r.entity("members", Self.members[0])?.version == 1)
    }

    /// `surveyd check` holds a response with several entities, and several waiting updates, to
    /// the same rules as one: each entity as its versions left it, each version and each waiting
    /// update tied to its response.
    @Test(.enabled(if: !TestEngine.isPostgres, "reads the SQLite data directory")) func surveydCheckHoldsSeveralEntitiesPerResponse() throws {
        let r = try Roster()
        #expect(try r.collect.submit(try r.instance("uuid:roster-000008", householdId: Self.household, head: "Ada", memberIds: Self.members,
                                                    names: ["Ada", "Bo", "Cy"], ages: [41, 12, 7])).status == 201)
        let visit = try EntityListTests.Published.publish(r.f, "member_visit")
        let unknown = ["7a1d2a4e-3b7c-4e21-9a55-0c8d2f6b1c01", "7a1d2a4e-3b7c-4e21-9a55-0c8d2f6b1c02"]
        let values = [("visitor", "Eve"), ("checkup[1]/member", unknown[0]), ("checkup[1]/age_now", "3"),
                      ("checkup[2]/member", unknown[1]), ("checkup[2]/age_now", "4")]
        let document = try XMLDocument(data: Data(try CollectClient.instance(of: visit.xform, instanceID: "uuid:mvisit-00004", values: values,
                                                                              repeats: [("checkup", 2)])))
        for (k, e) in try document.nodes(forXPath: "/*/*[local-name()='checkup']/*[local-name()='meta']/*[local-name()='entity']")
            .compactMap({ $0 as? XMLElement }).enumerated() {
            for (name, value) in [("id", unknown[k]), ("baseVersion", "1")] {
                e.removeAttribute(forName: name)
                e.addAttribute(XMLNode.attribute(withName: name, stringValue: value) as! XMLNode)
            }
        }
        #expect(try r.collect.submit(Array(document.xmlData)).status == 201)
        #expect(try r.f.server.count("SELECT COUNT(*) AS n FROM entity_waiting") == 2)
        let (ok, report) = try MaintenanceTests.surveyd(["check", "--data-dir", r.f.server.dataDir])
        #expect(ok == 0, "\(report)")
    }

    /// A JSON definition with `entities`: published, its lists declared, its responses taken
    /// through the JSON door, and its XForm written as pyxform writes a 2025.1 form — ODK
    /// Validate accepts it, and Collect's instances of it (a create per repeat instance, then an
    /// update per repeat instance of a follow-up) change the entities as the JSON door does.
    @Test func aJSONDefinitionWithEntitiesPublishesAndTakesResponses() throws {
        let f = try Fixture()
        let questions: JSONValue = [
            ["id": "site", "type": "text", "label": "Site", "required": true],
            ["id": "trees", "type": "repeat", "label": "Tree", "children": [["id": "species", "type": "text", "label": "Species"]]],
        ]
        let site: JSONValue = ["list": "sites", "create": true, "saveTo": ["site": "name_given"]]
        let tree: JSONValue = ["list": "trees", "create": true, "saveTo": ["species": "species"], "container": "trees"]
        let both = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Trees"])
        let surveyId = try #require(both.json?["surveyId"]?.stringValue)
        let refused = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken,
                                        ["definition": ["title": "Trees", "questions": questions, "entity": site, "entities": [tree]]])
        #expect(refused.status == 422)
        #expect(refused.json?["errors"]?.arrayValue?.first?["path"] == "definition.entities", "\(refused.text)")

        let made = try f.publishSurvey(definition: ["title": "Trees", "questions": questions, "entities": [site, tree]])
        let xform = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(made.versionId)/xform", token: f.collectorToken)
        #expect(xform.status == 200, "\(xform.text)")
        let compact = xform.text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined()
        #expect(compact.contains(#"entities:entities-version="2025.1.0""#), "\(xform.text)")
        #expect(compact.contains(#"<trees><species/><meta><entity dataset="trees" create="1" id=""><label/></entity></meta></trees>"#), "\(xform.text)")
        #expect(compact.contains(#"<setvalue ref="/data/trees/meta/entity/@id" event="odk-new-repeat" value="uuid()"/>"#), "\(xform.text)")
        try ODKValidate.accept(xform.body, label: "a JSON definition with an entity per repeat instance")
        let lists = try f.server.rows("SELECT name FROM entity_lists WHERE org_id = ? ORDER BY name", [.text(f.orgId)]).map { try $0.string("name") }
        #expect(lists == ["sites", "trees"])
        let ids = ["9b1d2a4e-3b7c-4e21-9a55-0c8d2f6b1a01", "9b1d2a4e-3b7c-4e21-9a55-0c8d2f6b1a02"]
        let body: JSONValue = ["clientSubmissionId": "json-trees-0001", "surveyVersionId": .string(made.versionId), "contentHash": .string(made.contentHash),
                               "answers": ["site": "North", "trees": [["species": "Acacia"]]],
                               "entity": ["id": .string(ids[0]), "create": true, "label": "North"],
                               "entities": [["container": "trees", "index": 0, "id": .string(ids[1]), "create": true, "label": "Acacia"]]]
        let created = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, body)
        #expect(created.status == 201, "\(created.text)")
        let stored = try f.server.rows("SELECT list_name, properties FROM entities WHERE org_id = ? ORDER BY list_name", [.text(f.orgId)])
            .map { "\(try $0.string("list_name")) \(try $0.string("properties"))" }
        #expect(stored == [#"sites {"name_given":"North"}"#, #"trees {"species":"Acacia"}"#])

        // From Collect: the XForm's instance, one tree per repeat instance.
        let collect = CollectClient(f)
        let more = ["9b1d2a4e-3b7c-4e21-9a55-0c8d2f6b1a03", "9b1d2a4e-3b7c-4e21-9a55-0c8d2f6b1a04", "9b1d2a4e-3b7c-4e21-9a55-0c8d2f6b1a05"]
        let xml = try CollectClient.instance(of: xform.body, instanceID: "uuid:trees-000001",
                                             values: [("site", "South"), ("trees[1]/species", "Baobab"), ("trees[2]/species", "Cedar")],
                                             repeats: [("trees", 2)])
        let document = try XMLDocument(data: Data(xml))
        var entities = try document.nodes(forXPath: "/*/*[local-name()='trees']/*[local-name()='meta']/*[local-name()='entity']").compactMap { $0 as? XMLElement }
        entities += try document.nodes(forXPath: "/*/*[local-name()='meta']/*[local-name()='entity']").compactMap { $0 as? XMLElement }
        #expect(entities.count == 3)
        for (k, e) in entities.enumerated() {
            e.removeAttribute(forName: "id")
            e.addAttribute(XMLNode.attribute(withName: "id", stringValue: more[k]) as! XMLNode)
        }
        let sent = try collect.submit(Array(document.xmlData))
        #expect(sent.status == 201, "\(sent.text)")
        let species = try f.server.rows("SELECT properties FROM entities WHERE org_id = ? AND entity_id IN (?, ?) ORDER BY entity_id",
                                        [.text(f.orgId), .text(more[0]), .text(more[1])]).map { try $0.string("properties") }
        #expect(species == [#"{"species":"Baobab"}"#, #"{"species":"Cedar"}"#])
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM entities WHERE entity_id = ?", [.text(more[2])]) == 1)

        // A follow-up: a repeat of inspections, each updating the tree it picks.
        let inspection = try f.publishSurvey(definition: [
            "title": "Tree inspection", "formId": "tree_inspection",
            "questions": [["id": "inspections", "type": "repeat", "label": "Inspection", "children": [
                ["id": "tree", "type": "select_one", "label": "Which tree?", "choiceList": "trees.csv", "required": true],
                ["id": "species_now", "type": "text", "label": "Species"],
            ]]],
            "entities": [["list": "trees", "update": true, "id": "${tree}", "saveTo": ["species_now": "species"], "container": "inspections"]],
        ])
        let inspecting = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(inspection.versionId)/xform", token: f.collectorToken)
        #expect(inspecting.status == 200, "\(inspecting.text)")
        #expect(inspecting.text.contains("instance('trees')/root/item[name= current()/../../../tree ]/__version"), "\(inspecting.text)")
        try ODKValidate.accept(inspecting.body, label: "a JSON definition updating an entity per repeat instance")
        let visit = try CollectClient.instance(of: inspecting.body, instanceID: "uuid:inspect-000001",
                                               values: [("inspections[1]/tree", more[0]), ("inspections[1]/species_now", "Adansonia"),
                                                        ("inspections[2]/tree", more[1]), ("inspections[2]/species_now", "Cedrus")],
                                               repeats: [("inspections", 2)])
        let visitDocument = try XMLDocument(data: Data(visit))
        for (k, e) in try visitDocument.nodes(forXPath: "/*/*[local-name()='inspections']/*[local-name()='meta']/*[local-name()='entity']")
            .compactMap({ $0 as? XMLElement }).enumerated() {
            for (name, value) in [("id", more[k]), ("baseVersion", "1")] {
                e.removeAttribute(forName: name)
                e.addAttribute(XMLNode.attribute(withName: name, stringValue: value) as! XMLNode)
            }
        }
        #expect(try collect.submit(Array(visitDocument.xmlData)).status == 201)
        let after = try f.server.rows("SELECT version, properties FROM entities WHERE org_id = ? AND entity_id IN (?, ?) ORDER BY entity_id",
                                      [.text(f.orgId), .text(more[0]), .text(more[1])]).map { "\(try $0.int("version")) \(try $0.string("properties"))" }
        #expect(after == [#"2 {"species":"Adansonia"}"#, #"2 {"species":"Cedrus"}"#])
    }

    /// Two groups' entities from Collect: one farm and one well per submission, in one transaction.
    @Test func twoGroupsEntitiesAreMadeByOneSubmission() throws {
        let f = try Fixture()
        let collect = CollectClient(f)
        let farm = try EntityListTests.Published.publish(f, "farm_survey")
        try ODKValidate.accept(farm.xform, label: "two lists written from two groups")
        let ids = ["8c1d2a4e-3b7c-4e21-9a55-0c8d2f6b1a01", "8c1d2a4e-3b7c-4e21-9a55-0c8d2f6b1a02"]
        let xml = try CollectClient.instance(of: farm.xform, instanceID: "uuid:farm-000001", values: [("farm/farm_name", "Hill"), ("well/well_depth", "12")])
        let document = try XMLDocument(data: Data(xml))
        for (k, group) in ["farm", "well"].enumerated() {
            let e = try #require(try document.nodes(forXPath: "/*/*[local-name()='\(group)']/*[local-name()='meta']/*[local-name()='entity']").first as? XMLElement)
            e.removeAttribute(forName: "id")
            e.addAttribute(XMLNode.attribute(withName: "id", stringValue: ids[k]) as! XMLNode)
            e.elements(forName: "label").first?.stringValue = k == 0 ? "Hill" : "Well of Hill"
        }
        #expect(try collect.submit(Array(document.xmlData)).status == 201)
        let stored = try f.server.rows("SELECT list_name, entity_id, label, properties FROM entities WHERE org_id = ? ORDER BY list_name", [.text(f.orgId)])
            .map { "\(try $0.string("list_name")) \(try $0.string("entity_id")) \(try $0.string("label")) \(try $0.string("properties"))" }
        #expect(stored == ["farms \(ids[0]) Hill {\"title\":\"Hill\"}", "wells \(ids[1]) Well of Hill {\"depth\":\"12\"}"])
        #expect(try collect.submit(Array(document.xmlData)).status == 202)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM entity_versions") == 2)
    }

    /// ODK Central's API takes the roster as pyodk and Central's clients send it (the XML as the
    /// body): the same entities, in the one transaction, exactly once.
    @Test func centralsSubmissionsMakeEachMemberToo() throws {
        let r = try Roster()
        let sent = try r.instance("uuid:roster-central-1", householdId: Self.household, head: "Ada", memberIds: Self.members,
                                  names: ["Ada", "Bo", "Cy"], ages: [41, 12, 7])
        let projectId = try #require(try r.f.client.get("/v1/projects", token: r.f.adminToken).json?.arrayValue?.first?["id"]?.intValue)
        let path = "/v1/projects/\(projectId)/forms/household_roster/submissions"
        let created = try r.f.client.request("POST", path, token: r.f.collectorToken, body: sent, headers: ["Content-Type": "application/xml"])
        #expect(created.status == 200, "\(created.text)")
        #expect(try r.count("members") == 3 && r.count("households") == 1 && r.versions() == 4)
        #expect(try r.entity("members", Self.members[2])?.properties == ["full_name": "Cy", "age": "7"])
        _ = try r.f.client.request("POST", path, token: r.f.collectorToken, body: sent, headers: ["Content-Type": "application/xml"])
        #expect(try r.versions() == 4 && r.responses() == 1)
    }
}
