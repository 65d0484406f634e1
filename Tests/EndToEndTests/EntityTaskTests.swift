import Foundation
import FoundationXML
import Synchronization
import Testing
import SurveyDomain
@testable import SurveyStorage

/// Field tasks on entities (Docs/entities.md, "Field tasks on entities"): a household
/// registration form and a follow-up visit form (pyxform 4.5.0 XLSForms) on a real server, two
/// collectors with tasks naming households. What each phone downloads is read as ODK Collect reads
/// it (form list, manifest, the list's CSV); what is stored, from the database itself.
@Suite struct EntityTaskTests {
    static let ada = "6f1d2a4e-3b7c-4e21-9a55-0c8d2f6b1a01"
    static let bo = "0a9b8c7d-1111-4222-8333-944455566677"
    static let cy = "1b2c3d4e-2222-4333-8444-a55566677788"

    /// The registration form (scope `all`) and the visit form (scope `scope`, reviewed when asked),
    /// three households registered, and a second collector.
    struct Field {
        let f: Fixture
        let cole: CollectClient
        let dee: CollectClient
        let deeId: String
        let deeToken: String
        let registration: Version
        let visit: Version

        struct Version {
            let surveyId: String
            let versionId: String
            let contentHash: String
            let xform: [UInt8]
        }

        init(scope: String = "assigned", reviewRequired: Bool = false) throws {
            f = try Fixture()
            let d = try f.client.post("/v1/orgs/\(f.orgId)/users", token: f.adminToken, ["name": "Dee", "roles": ["collector"]])
            deeId = try #require(d.json?["userId"]?.stringValue, "\(d.text)")
            deeToken = try #require(d.json?["token"]?.stringValue)
            cole = CollectClient(f)
            dee = CollectClient(f, token: deeToken)
            registration = try Self.publish(f, "household_registration", body: ["title": "Registration"])
            visit = try Self.publish(f, "household_visit", body: ["title": "Visit", "entityListScope": .string(scope),
                                                                  "reviewRequired": .bool(reviewRequired)])
            for (i, (id, head)) in [(EntityTaskTests.ada, "Ada"), (EntityTaskTests.bo, "Bo"), (EntityTaskTests.cy, "Cy")].enumerated() {
                let r = try cole.submit(try instance(registration, "uuid:reg-task-000\(i)", values: [("head_name", head), ("member_count", "4"),
                                                                                                     ("village_name", "Kisii")],
                                                     entity: ["id": id], label: "Household of \(head)"))
                #expect(r.status == 201, "\(r.text)")
            }
        }

        static func publish(_ f: Fixture, _ name: String, body: JSONValue) throws -> Version {
            let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, body)
            let surveyId = try #require(s.json?["surveyId"]?.stringValue, "\(s.text)")
            let v = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken,
                                         body: try FormPublishingTests.bytes(name + ".xlsx"), headers: ["Content-Type": FormPublishingTests.xlsx])
            #expect(v.status == 201, "\(name): \(v.text)")
            let versionId = try #require(v.json?["surveyVersionId"]?.stringValue)
            let xform = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(versionId)/xform", token: f.collectorToken)
            return Version(surveyId: surveyId, versionId: versionId, contentHash: try #require(v.json?["contentHash"]?.stringValue),
                           xform: xform.body)
        }

        /// A filled-in form with its `meta/entity` attributes and label as Collect writes them.
        func instance(_ version: Version, _ instanceID: String, values: [(String, String)], entity: [String: String], label: String) throws -> [UInt8] {
            let xml = try CollectClient.instance(of: version.xform, instanceID: instanceID, values: values)
            let document = try XMLDocument(data: Data(xml))
            let e = try #require(try document.nodes(forXPath: "/*/*[local-name()='meta']/*[local-name()='entity']").first as? XMLElement)
            for (name, value) in entity {
                e.removeAttribute(forName: name)
                if let attribute = XMLNode.attribute(withName: name, stringValue: value) as? XMLNode { e.addAttribute(attribute) }
            }
            let l = try #require(e.elements(forName: "label").first)
            l.stringValue = label
            return Array(document.xmlData)
        }

        /// The visit of a household, made from `baseVersion`.
        func visitOf(_ entityId: String, _ instanceID: String, baseVersion: Int64 = 1, members: Int) throws -> [UInt8] {
            try instance(visit, instanceID, values: [("household", entityId), ("members_now", String(members))],
                         entity: ["id": entityId, "baseVersion": String(baseVersion)], label: "Household of \(members) people")
        }

        /// An admin's task for `assignee` on the visit survey, naming `entityId` of `households`.
        func task(for assignee: String, _ entityId: String) throws -> String {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/tasks", token: f.adminToken,
                                      ["title": .string("Visit \(entityId)"), "surveyId": .string(visit.surveyId), "assigneeUserId": .string(assignee),
                                       "entityList": "households", "entityId": .string(entityId)])
            #expect(r.status == 201, "\(r.text)")
            #expect(r.json?["entityList"] == "households")
            #expect(r.json?["entityId"] == .string(entityId))
            return try #require(r.json?["taskId"]?.stringValue)
        }

        /// A phone's copy of the list: the manifest's hash and the CSV's entity ids.
        struct Copy: Equatable {
            let hash: String
            let ids: [String]
        }

        /// The visit form's list as `collect`'s phone sees it: the manifest's hash, and the CSV's
        /// entity ids (its `name` column) as downloaded from the manifest's URL.
        func copy(_ collect: CollectClient) throws -> Copy {
            let form = try #require(try collect.formList().forms.first { $0.formID == "household_visit" })
            let manifest = try #require(form.manifestURL.flatMap(URL.init(string:)))
            let reply = try f.client.request("GET", manifest.path, headers: CollectClient.headers)
            #expect(reply.status == 200)
            let files = try XMLDocument(data: Data(reply.body)).rootElement()?.elements(forName: "mediaFile") ?? []
            let file = try #require(files.first)
            #expect(file.attributes?.first { ($0.localName ?? $0.name) == "type" }?.stringValue == "entityList")
            func text(_ name: String) -> String { file.elements(forName: name).first?.stringValue ?? "" }
            #expect(text("filename") == "households.csv")
            let url = try #require(URL(string: text("downloadUrl")))
            let csv = try f.client.request("GET", url.path, headers: CollectClient.headers)
            #expect(csv.status == 200)
            let lines = csv.text.split(separator: "\r\n").map(String.init)
            #expect(lines.first == "name,label,__version,__trunkVersion,__branchId,head,members,village")
            return Copy(hash: text("hash"), ids: lines.dropFirst().map { line in String(line.prefix { $0 != "," }) })
        }

        struct TaskRow: Equatable {
            let state: String
            let responseId: String?
            let completedBy: String?
            let completedAt: Int64?
        }

        func task(_ taskId: String) throws -> TaskRow? {
            try f.server.rows("SELECT state, response_id, completed_by, completed_at FROM tasks WHERE task_id = ?", [.text(taskId)]).first.map {
                TaskRow(state: try $0.string("state"), responseId: try $0.optionalString("response_id"), completedBy: try $0.optionalString("completed_by"),
                     completedAt: try $0.optionalInt("completed_at"))
            }
        }

        func version(_ entityId: String) throws -> Int64 {
            try f.server.count("SELECT version AS n FROM entities WHERE org_id = ? AND entity_id = ?", [.text(f.orgId), .text(entityId)])
        }

        /// The response stored under an instanceID: its id and the task it is linked to.
        func response(_ clientSubmissionId: String) throws -> (responseId: String, fieldTaskId: String?)? {
            try f.server.rows("SELECT response_id, field_task_id FROM responses WHERE client_submission_id = ?", [.text(clientSubmissionId)])
                .first.map { (try $0.string("response_id"), try $0.optionalString("field_task_id")) }
        }
    }

    @Test func eachCollectorGetsTheEntitiesOfTheirOpenTasks() throws {
        let w = try Field()
        // No task yet: an empty copy, each collector's own hash.
        let coleEmpty = try w.copy(w.cole), deeEmpty = try w.copy(w.dee)
        #expect(coleEmpty.ids.isEmpty && deeEmpty.ids.isEmpty)
        #expect(coleEmpty.hash.hasPrefix("md5:") && coleEmpty.hash.count == 36)
        #expect(coleEmpty.hash != deeEmpty.hash)

        _ = try w.task(for: w.f.collectorId, Self.ada)
        _ = try w.task(for: w.f.collectorId, Self.bo)
        _ = try w.task(for: w.deeId, Self.cy)
        // A task naming an entity not created yet (a phone holds its create): not in the copy until it arrives.
        let later = "2c3d4e5f-3333-4444-8555-b66677788899"
        _ = try w.task(for: w.deeId, later)
        let cole = try w.copy(w.cole), dee = try w.copy(w.dee)
        #expect(cole.ids == [Self.bo, Self.ada])
        #expect(dee.ids == [Self.cy])
        #expect(cole.hash != dee.hash)
        #expect(cole.hash != coleEmpty.hash && dee.hash != deeEmpty.hash)
        // Reads change nothing.
        #expect(try w.copy(w.cole) == cole)
        #expect(try w.copy(w.dee) == dee)

        // The entity arrives: Dee's copy has it.
        let r = try w.cole.submit(try w.instance(w.registration, "uuid:reg-task-late", values: [("head_name", "Di"), ("member_count", "2"),
                                                                                              ("village_name", "Embu")],
                                                 entity: ["id": later], label: "Household of Di"))
        #expect(r.status == 201)
        #expect(try w.copy(w.dee).ids == [Self.cy, later])

        // The survey's scope back to `all`: everyone gets every entity, under one hash.
        let survey = try w.f.client.put("/v1/orgs/\(w.f.orgId)/surveys/\(w.visit.surveyId)/entity-list-scope", token: w.f.adminToken,
                                        ["entityListScope": "all"])
        #expect(survey.status == 200, "\(survey.text)")
        #expect(survey.json?["entityListScope"] == "all")
        let all = try w.copy(w.cole)
        #expect(all.ids == [Self.bo, Self.ada, Self.cy, later].sorted())
        #expect(try w.copy(w.dee) == all)
        #expect(try w.f.client.get("/v1/orgs/\(w.f.orgId)/surveys/\(w.visit.surveyId)", token: w.f.adminToken).json?["entityListScope"] == "all")
    }

    @Test func anAllSurveyServesEveryEntity() throws {
        let w = try Field(scope: "all")
        _ = try w.task(for: w.f.collectorId, Self.ada)
        let cole = try w.copy(w.cole)
        #expect(cole.ids == [Self.bo, Self.ada, Self.cy].sorted())
        #expect(try w.copy(w.dee) == cole)
        // The follow-up completes the task all the same.
        let taskId = try w.task(for: w.deeId, Self.cy)
        #expect(try w.dee.submit(try w.visitOf(Self.cy, "uuid:visit-all-0001", members: 3)).status == 201)
        #expect(try w.task(taskId)?.state == "completed")
    }

    @Test func theFollowUpCompletesTheTaskWithTheUpdateOnce() throws {
        let w = try Field()
        let adaTask = try w.task(for: w.f.collectorId, Self.ada)
        let boTask = try w.task(for: w.f.collectorId, Self.bo)
        let cyTask = try w.task(for: w.deeId, Self.cy)
        let before = try w.copy(w.cole)

        // Another collector's visit of Bo updates Bo and completes no task of Cole's.
        #expect(try w.dee.submit(try w.visitOf(Self.bo, "uuid:visit-dee-bo01", members: 2)).status == 201)
        #expect(try w.task(boTask)?.state == "open")
        #expect(try w.response("uuid:visit-dee-bo01")?.fieldTaskId == nil)
        #expect(try w.version(Self.bo) == 2)

        // Cole's visit of Ada, as Collect sends it: the entity updated and the task completed together.
        let visit = try w.visitOf(Self.ada, "uuid:visit-cole-ada1", members: 5)
        #expect(try w.cole.submit(visit).status == 201)
        let stored = try #require(try w.response("uuid:visit-cole-ada1"))
        #expect(stored.fieldTaskId == adaTask)
        let done = try #require(try w.task(adaTask))
        #expect(done.state == "completed" && done.responseId == stored.responseId && done.completedBy == w.f.collectorId)
        #expect(try w.version(Self.ada) == 2)
        let api = try w.f.client.get("/v1/orgs/\(w.f.orgId)/tasks/\(adaTask)", token: w.f.collectorToken)
        #expect(api.json?["state"] == "completed")
        #expect(api.json?["responseId"] == .string(stored.responseId))
        // Cole's copy no longer holds Ada, under a new hash.
        let after = try w.copy(w.cole)
        #expect(after.ids == [Self.bo])
        #expect(after.hash != before.hash)

        // Sent again: the stored response, nothing changed.
        #expect(try w.cole.submit(visit).status == 202)
        #expect(try w.task(adaTask) == done)
        #expect(try w.version(Self.ada) == 2)
        #expect(try w.copy(w.cole) == after)

        // A second visit of Ada: its task is completed already; accepted, it completes nothing.
        #expect(try w.cole.submit(try w.visitOf(Self.ada, "uuid:visit-cole-ada2", baseVersion: 2, members: 6)).status == 201)
        #expect(try w.response("uuid:visit-cole-ada2")?.fieldTaskId == nil)
        #expect(try w.task(adaTask) == done)

        // The JSON door: the receipt names the task it completed; its replay answers the same.
        let json: JSONValue = ["clientSubmissionId": "json-visit-bo-0001", "surveyVersionId": .string(w.visit.versionId),
                               "contentHash": .string(w.visit.contentHash), "answers": ["household": .string(Self.bo), "members_now": 7],
                               "entity": ["id": .string(Self.bo), "update": true, "baseVersion": 2]]
        let accepted = try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses", token: w.f.collectorToken, json)
        #expect(accepted.status == 201, "\(accepted.text)")
        #expect(accepted.json?["fieldTaskId"] == .string(boTask))
        #expect(try w.task(boTask)?.state == "completed")
        #expect(try w.task(boTask)?.responseId == accepted.json?["responseId"]?.stringValue)
        #expect(try w.version(Self.bo) == 3)
        let replayed = try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses", token: w.f.collectorToken, json)
        #expect(replayed.status == 200)
        #expect(replayed.json?["fieldTaskId"] == .string(boTask))
        #expect(try w.version(Self.bo) == 3)
        #expect(try w.copy(w.cole).ids.isEmpty)

        // An expired subscription: refused, nothing updated, nothing completed.
        let deeVisit = try w.visitOf(Self.cy, "uuid:visit-dee-cy01", members: 3)
        let deeBefore = try w.copy(w.dee)
        try w.f.expire()
        let refused = try w.dee.submit(deeVisit)
        #expect(refused.status == 402)
        #expect(refused.header("surveyd-error-code") == "1001")
        #expect(try w.task(cyTask)?.state == "open")
        #expect(try w.version(Self.cy) == 1)
        #expect(try w.response("uuid:visit-dee-cy01")?.responseId == nil)
        #expect(try w.copy(w.dee) == deeBefore)
        // After renewal the same submission does both, once.
        try w.f.renew()
        #expect(try w.dee.submit(deeVisit).status == 201)
        let cy = try #require(try w.task(cyTask))
        #expect(cy.state == "completed" && cy.completedBy == w.deeId)
        #expect(try w.version(Self.cy) == 2)
        #expect(try w.dee.submit(deeVisit).status == 202)
        #expect(try w.task(cyTask) == cy)
        #expect(try w.version(Self.cy) == 2)
        #expect(try w.copy(w.dee).ids.isEmpty)
        // Each completion has its audit entry, once.
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'task.complete'") == 3)
    }

    /// Several visits of one household sent at once (two phones of one collector): every one is
    /// accepted and updates the entity; exactly one is linked to the task and completes it (on
    /// PostgreSQL the task's row is locked by the first until its commit).
    @Test func followUpsSentAtOnceCompleteTheTaskOnce() throws {
        let w = try Field()
        let taskId = try w.task(for: w.f.collectorId, Self.ada)
        let visits = try (0..<4).map { try w.visitOf(Self.ada, "uuid:visit-at-once-\($0)", members: 10 + $0) }
        let statuses = Mutex<[Int]>([])
        atOnce(visits.count) { i in
            let r = try? w.cole.submit(visits[i])
            statuses.withLock { $0.append(r?.status ?? -1) }
        }
        #expect(statuses.withLock { $0 } == [201, 201, 201, 201])
        let linked = try w.f.server.rows("SELECT response_id FROM responses WHERE field_task_id = ?", [.text(taskId)])
        #expect(linked.count == 1)
        let linkedId = try linked.first?.string("response_id")
        let done = try #require(try w.task(taskId))
        #expect(done.state == "completed" && done.responseId == linkedId)
        #expect(try w.version(Self.ada) == 5)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'task.complete'") == 1)
    }

    /// ODK Central's API (pyodk's `submissions.create`): the same follow-up, the same completion.
    @Test func aFollowUpThroughCentralsAPICompletesTheTask() throws {
        let w = try Field()
        let taskId = try w.task(for: w.deeId, Self.cy)
        let projects = try w.f.client.get("/v1/projects", token: w.f.adminToken)
        let project = try #require(projects.json?.arrayValue?.first?["id"]?.intValue, "\(projects.text)")
        let visit = try w.visitOf(Self.cy, "uuid:visit-central-cy1", members: 8)
        func send() throws -> Reply {
            try w.f.client.request("POST", "/v1/projects/\(project)/forms/household_visit/submissions", token: w.deeToken, body: visit,
                                   headers: ["Content-Type": "application/xml"])
        }
        let accepted = try send()
        #expect(accepted.status == 200, "\(accepted.text)")
        let done = try #require(try w.task(taskId))
        #expect(done.state == "completed" && done.completedBy == w.deeId)
        let stored = try w.response("uuid:visit-central-cy1")
        #expect(done.responseId == stored?.responseId)
        #expect(try w.version(Self.cy) == 2)
        let again = try send()
        #expect(again.status == 200 && again.header("idempotent-replayed") == "true")
        #expect(try w.task(taskId) == done)
        #expect(try w.version(Self.cy) == 2)
        #expect(try w.copy(w.dee).ids.isEmpty)
    }

    @Test func aReviewedSurveysFollowUpCompletesTheTaskOnApproval() throws {
        let w = try Field(reviewRequired: true)
        let taskId = try w.task(for: w.f.collectorId, Self.ada)
        #expect(try w.cole.submit(try w.visitOf(Self.ada, "uuid:visit-rev-ada1", members: 5)).status == 201)
        let stored = try #require(try w.response("uuid:visit-rev-ada1"))
        #expect(stored.fieldTaskId == taskId)
        #expect(try w.version(Self.ada) == 2)
        #expect(try w.task(taskId)?.state == "open")
        #expect(try w.copy(w.cole).ids == [Self.ada])
        let path = "/v1/orgs/\(w.f.orgId)/responses/\(stored.responseId)/review"
        #expect(try w.f.client.post(path, token: w.f.reviewerToken, ["action": "startReview", "expectedRevision": 1]).status == 200)
        let approved = try w.f.client.post(path, token: w.f.reviewerToken, ["action": "approve", "expectedRevision": 2])
        #expect(approved.status == 200, "\(approved.text)")
        #expect(try w.task(taskId)?.state == "completed")
        #expect(try w.task(taskId)?.responseId == stored.responseId)
        #expect(try w.copy(w.cole).ids.isEmpty)
    }

    @Test func aTaskNamesAnEntityOfAListOrNone() throws {
        let w = try Field()
        let tasks = "/v1/orgs/\(w.f.orgId)/tasks"
        func refused(_ extra: [String: JSONValue], at path: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            var body: [String: JSONValue] = ["title": "Visit", "surveyId": .string(w.visit.surveyId), "assigneeUserId": .string(w.deeId)]
            body.merge(extra) { _, new in new }
            let r = try w.f.client.post(tasks, token: w.f.adminToken, .object(body))
            #expect(r.status == 422, "\(r.text)", sourceLocation: sourceLocation)
            #expect(r.json?["errorCode"] == 1002, sourceLocation: sourceLocation)
            #expect(r.json?["errors"]?.arrayValue?.map { $0["path"] } == [.string(path)], "\(r.text)", sourceLocation: sourceLocation)
        }
        try refused(["entityList": "households"], at: "entityId")
        try refused(["entityId": .string(Self.ada)], at: "entityList")
        try refused(["entityList": "trees", "entityId": .string(Self.ada)], at: "entityList")
        try refused(["entityList": "households", "entityId": "no"], at: "entityId")
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM tasks") == 0)
        // A task with no entity carries none; one with an entity not created yet is taken.
        let plain = try w.f.client.post(tasks, token: w.f.adminToken,
                                        ["title": "Visit", "surveyId": .string(w.visit.surveyId), "assigneeUserId": .string(w.deeId)])
        #expect(plain.status == 201)
        #expect(plain.json?["entityList"] == nil && plain.json?["entityId"] == nil)
        _ = try w.task(for: w.deeId, "3d4e5f60-4444-4555-8666-c77788899900")

        // The survey's scope: `all` by default, `assigned` when asked, nothing else.
        let surveys = "/v1/orgs/\(w.f.orgId)/surveys"
        #expect(try w.f.client.get(surveys + "/\(w.registration.surveyId)", token: w.f.adminToken).json?["entityListScope"] == "all")
        #expect(try w.f.client.get(surveys + "/\(w.visit.surveyId)", token: w.f.adminToken).json?["entityListScope"] == "assigned")
        let bad = try w.f.client.post(surveys, token: w.f.adminToken, ["title": "Other", "entityListScope": "mine"])
        #expect(bad.status == 422)
        #expect(bad.json?["errors"]?.arrayValue?.map { $0["path"] } == ["entityListScope"])
        let badPut = try w.f.client.put(surveys + "/\(w.visit.surveyId)/entity-list-scope", token: w.f.adminToken, ["entityListScope": "mine"])
        #expect(badPut.status == 422)
        #expect(try w.f.client.put(surveys + "/\(w.visit.surveyId)/entity-list-scope", token: w.deeToken, ["entityListScope": "all"]).status == 403)
    }
}
