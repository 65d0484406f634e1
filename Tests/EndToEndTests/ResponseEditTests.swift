import Foundation
import Testing
import SurveyDomain
import SurveyServer
@testable import SurveyStorage

/// Editing a response's answers from the API on a real server: the new version kept beside the
/// old ones, the review state `edited` (and `hasIssues`) in the one review machine, the versions
/// and their diffs, what every refusal leaves (nothing), the `response.edited` event, and the
/// exports and OData feed showing the latest version.
@Suite struct ResponseEditTests {
    typealias P = FoundationTests
    typealias W = ReviewTests.World

    static func edit(_ w: W, _ expected: Int, answers: JSONValue = ["size": 6, "source": "river"], comment: String? = nil,
                     token: String? = nil, key: String? = nil) throws -> Reply {
        var body: [String: JSONValue] = ["expectedRevision": .number(Double(expected)), "answers": answers]
        if let comment { body["comment"] = .string(comment) }
        return try w.f.client.request("PUT", "/v1/orgs/\(w.f.orgId)/responses/\(w.responseId)/answers", token: token ?? w.f.reviewerToken,
                                      json: .object(body), headers: key.map { ["Idempotency-Key": $0] } ?? [:])
    }

    static func get(_ w: W, _ path: String, token: String? = nil) throws -> Reply {
        try w.f.client.get("/v1/orgs/\(w.f.orgId)/responses/\(w.responseId)" + path, token: token ?? w.f.reviewerToken)
    }

    static func versionRows(_ w: W) throws -> Int64 { try w.f.server.count("SELECT COUNT(*) AS n FROM response_versions") }

    @Test func anEditKeepsEveryVersionAndMovesTheResponseThroughTheReviewMachine() throws {
        let w = try W()
        #expect(try w.review("startReview", 1).status == 200)
        #expect(try w.review("approve", 2).status == 200)
        let completedTask = try w.f.server.rows("SELECT state, completed_at, response_id FROM tasks WHERE task_id = ?", [.text(w.taskId)])[0]
        #expect(try completedTask.string("state") == "completed")

        // An admin's edit of an approved response: 200, the document as edited, revision + 1.
        let edited = try Self.edit(w, 3, comment: "Recounted by phone", token: w.f.adminToken)
        #expect(edited.status == 200, "\(edited.text)")
        #expect(edited.json?["reviewState"] == "edited" && edited.json?["revision"]?.intValue == 4)
        #expect(edited.json?["answers"] == ["size": 6, "source": "river"])
        #expect(edited.json?["responseId"]?.stringValue == w.responseId && edited.json?["clientSubmissionId"] == "review-0001")
        #expect(edited.json?["submittedBy"]?.stringValue == w.f.collectorId)
        #expect(try Self.get(w, "", token: w.f.collectorToken).json?["answers"] == ["size": 6, "source": "river"])

        // Its versions: 1 as submitted, 2 the edit; one of them; what each changed.
        let versions = try Self.get(w, "/versions")
        #expect(versions.status == 200 && versions.json?["nextCursor"] == .null, "\(versions.text)")
        let items = versions.json?["items"]?.arrayValue ?? []
        #expect(items.map { $0["number"]?.intValue } == [1, 2])
        #expect(items.first?["answers"] == ["size": 4, "source": "well"] && items.first?["source"] == "submission")
        #expect(items.first?["createdBy"]?.stringValue == w.f.collectorId)
        #expect(items.last?["answers"] == ["size": 6, "source": "river"] && items.last?["source"] == "api")
        let adminId = try w.f.server.rows("SELECT actor FROM audit WHERE action = 'response.edit'")[0].string("actor")
        #expect(items.last?["createdBy"]?.stringValue == adminId)
        #expect(try Self.get(w, "/versions/2", token: w.f.collectorToken).json == items.last)
        P.expectProblem(try Self.get(w, "/versions/3"), .notFound)
        P.expectProblem(try Self.get(w, "/versions/0"), .notFound)
        P.expectProblem(try Self.get(w, "/versions/two/diff"), .notFound)
        let diff = try Self.get(w, "/versions/2/diff")
        #expect(diff.json == ["items": [["path": "answers.size", "old": 4, "new": 6], ["path": "answers.source", "old": "well", "new": "river"]],
                              "nextCursor": nil], "\(diff.text)")
        #expect(try Self.get(w, "/versions/1/diff").json?["items"] == [["path": "answers.size", "old": nil, "new": 4],
                                                                         ["path": "answers.source", "old": nil, "new": "well"]])
        let history = try Self.get(w, "/history").json?["items"]?.arrayValue ?? []
        #expect(history.last?["action"] == "response.edit" && history.last?["fromState"] == "approved" && history.last?["toState"] == "edited")
        #expect(history.last?["comment"] == "Recounted by phone")

        // The original submission sent again is still its replay, answered as at acceptance.
        let replay = try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses", token: w.f.collectorToken,
                                         ResponseTests.submission("review-0001", w.v, extra: ["fieldTaskId": .string(w.taskId)]))
        #expect(replay.status == 200 && replay.header("idempotent-replayed") == "true", "\(replay.text)")
        #expect(replay.json?["revision"]?.intValue == 1 && replay.json?["reviewState"] == "submitted")
        P.expectProblem(try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses", token: w.f.collectorToken,
                                            ResponseTests.submission("review-0001", w.v, answers: ["size": 9, "source": "well"])),
                        .idempotencyConflict)

        // From edited: startReview is out of order; flagIssues needs a comment; then hasIssues.
        P.expectProblem(try w.review("startReview", 4), .invalidTransition)
        P.expectProblem(try w.review("flagIssues", 4), .validationFailed)
        let flagged = try w.review("flagIssues", 4, comment: "Size still doubtful")
        #expect(flagged.status == 200 && flagged.json?["reviewState"] == "hasIssues", "\(flagged.text)")
        P.expectProblem(try w.review("approve", 5), .invalidTransition)
        let listed = try w.f.client.get("/v1/orgs/\(w.f.orgId)/responses?reviewState=hasIssues", token: w.f.reviewerToken)
        #expect(listed.json?["items"]?.arrayValue?.map { $0["responseId"]?.stringValue } == [w.responseId])

        // Edited again (from hasIssues), then approved: the task stays completed by this response, once.
        let again = try Self.edit(w, 5, answers: ["size": 7, "source": "river"])
        #expect(again.status == 200 && again.json?["reviewState"] == "edited" && again.json?["revision"]?.intValue == 6, "\(again.text)")
        #expect(try Self.get(w, "/versions").json?["items"]?.arrayValue?.count == 3)
        #expect(try Self.get(w, "/versions/3/diff").json?["items"] == [["path": "answers.size", "old": 6, "new": 7]])
        let approved = try w.review("approve", 6)
        #expect(approved.status == 200 && approved.json?["reviewState"] == "approved", "\(approved.text)")
        let task = try w.f.server.rows("SELECT state, completed_at, response_id FROM tasks WHERE task_id = ?", [.text(w.taskId)])[0]
        #expect(try task.int("completed_at") == completedTask.int("completed_at") && task.string("response_id") == w.responseId)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'task.complete'") == 1)
        #expect(try TestEngine.check(dataDir: w.f.server.dataDir).ok)
    }

    @Test func aRefusedEditLeavesNothingAndTheSameEditAfterTheCauseIsFixedIsAppliedOnce() throws {
        let w = try W()
        let before = try w.snapshot()
        func unchanged(sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(try w.snapshot() == before, sourceLocation: sourceLocation)
            #expect(try Self.versionRows(w) == 0, sourceLocation: sourceLocation)
        }
        // A collector — the submitter too — may not edit; another organization's caller gets the 404 of nothing.
        P.expectProblem(try Self.edit(w, 1, token: w.f.collectorToken), .forbidden)
        let g = try Fixture()
        P.expectProblem(try g.client.request("PUT", "/v1/orgs/\(w.f.orgId)/responses/\(w.responseId)/answers", token: g.reviewerToken,
                                             json: ["expectedRevision": 1, "answers": ["size": 6]]), .notFound)
        P.expectProblem(try w.f.client.request("PUT", "/v1/orgs/\(w.f.orgId)/responses/rsp_nothing/answers", token: w.f.reviewerToken,
                                               json: ["expectedRevision": 1, "answers": ["size": 6]]), .notFound)
        // The body (1031), the answers against the response's own version (1002, every failure at its path), the revision (1021).
        P.expectProblem(try w.f.client.request("PUT", "/v1/orgs/\(w.f.orgId)/responses/\(w.responseId)/answers", token: w.f.reviewerToken,
                                               json: ["expectedRevision": 1]), .malformedRequest)
        let invalid = try Self.edit(w, 1, answers: ["size": 99, "source": "lake"])
        P.expectProblem(invalid, .validationFailed)
        #expect(Set(invalid.json?["errors"]?.arrayValue?.compactMap { $0["path"]?.stringValue } ?? []) == ["answers.size", "answers.source"])
        let stale = try Self.edit(w, 7)
        P.expectProblem(stale, .staleRevision)
        #expect(stale.json?["revision"]?.intValue == 1 && stale.json?["reviewState"] == "submitted")
        try unchanged()
        // Expired: 1001 for the edit, never before its own checks (a stale one is still 1021).
        try w.f.expire()
        P.expectProblem(try Self.edit(w, 7), .staleRevision)
        let audit = try w.f.server.count("SELECT COUNT(*) AS n FROM audit")
        P.expectProblem(try Self.edit(w, 1, key: "edit-answers-0001"), .subscriptionExpired)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit") == audit)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM idempotency_keys") == before.keys)
        #expect(try Self.versionRows(w) == 0)
        try w.f.renew()

        // The same keyed edit after renewal: applied once; its replay answers the kept answer; another body under the key is 1004.
        let first = try Self.edit(w, 1, key: "edit-answers-0001")
        #expect(first.status == 200 && first.json?["revision"]?.intValue == 2, "\(first.text)")
        let replay = try Self.edit(w, 1, key: "edit-answers-0001")
        #expect(replay.status == 200 && replay.header("idempotent-replayed") == "true" && replay.json == first.json)
        P.expectProblem(try Self.edit(w, 1, answers: ["size": 8], key: "edit-answers-0001"), .idempotencyConflict)
        #expect(try Self.versionRows(w) == 2)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'response.edit'") == 1)
    }

    @Test func anEditIsTheEventResponseEditedAndExportsAndODataShowTheLatestVersion() throws {
        let w = try WebhookTests.World()
        let receiver = w.receiver
        _ = try w.webhook(receiver.url(), events: ["response.edited"])
        let responseId = try w.submit("edit-event-0001")
        let edited = try w.f.client.request("PUT", "/v1/orgs/\(w.f.orgId)/responses/\(responseId)/answers", token: w.f.reviewerToken,
                                            json: ["expectedRevision": 1, "answers": ["size": 12, "source": "piped", "notes": "edited"]])
        #expect(edited.status == 200, "\(edited.text)")
        #expect(receiver.wait { $0.count == 1 })
        let event = try #require(receiver.calls.first?.json)
        #expect(event["type"] == "response.edited")
        #expect(event["data"]?["answers"] == ["size": 12, "source": "piped", "notes": "edited"])
        #expect(event["data"]?["reviewState"] == "edited" && event["data"]?["revision"]?.intValue == 2)
        #expect(event["data"]?["review"]?["action"] == "edit" && event["data"]?["review"]?["fromState"] == "submitted")
        #expect(event["data"]?["review"]?["version"]?.intValue == 2 && event["data"]?["review"]?["source"] == "api")

        let csv = try w.f.client.get("/v1/orgs/\(w.f.orgId)/surveys/\(w.v.surveyId)/responses.csv", token: w.f.reviewerToken)
        #expect(csv.status == 200 && csv.text.contains("edited") && csv.text.contains("12"), "\(csv.text)")
        let odata = try w.f.client.get("/v1/orgs/\(w.f.orgId)/surveys/\(w.v.surveyId).svc/Submissions", token: w.f.reviewerToken)
        let row = odata.json?["value"]?.arrayValue?.first
        #expect(row?["size"]?.intValue == 12 && row?["notes"] == "edited", "\(odata.text)")
        #expect(row?["__system"]?["edits"]?.intValue == 1 && row?["__system"]?["reviewState"] == "edited")
        // The reference path (a `$filter`ed page) says the same.
        let byFilter = try w.f.client.get("/v1/orgs/\(w.f.orgId)/surveys/\(w.v.surveyId).svc/Submissions?$filter=size%20eq%2012", token: w.f.reviewerToken)
        #expect(byFilter.json?["value"]?.arrayValue?.first?["__system"]?["edits"]?.intValue == 1, "\(byFilter.text)")
        let filtered = try w.f.client.get("/v1/orgs/\(w.f.orgId)/surveys/\(w.v.surveyId)/responses.csv?reviewState=edited", token: w.f.reviewerToken)
        #expect(filtered.status == 200 && filtered.text.contains("edit-event-0001"), "\(filtered.text)")
    }

    /// A roster instance as Collect writes it, `deprecatedID` naming the instance it replaces.
    static func rosterInstance(_ p: OpenRosaTests.Published, _ id: String, leoAge: String = "6", firstAge: String = "41",
                               deprecating old: String? = nil) throws -> [UInt8] {
        let xml = try CollectClient.instance(of: p.xform, instanceID: id, values: [
            ("consent", "yes"), ("household/size", "2"), ("eldest", "41"),
            ("household/people[1]/name", "Ana"), ("household/people[1]/age", firstAge), ("household/people[1]/pregnant", "no"),
            ("household/people[1]/visits[1]/visited", "2026-10-01"),
            ("household/people[2]/name", "Leo"), ("household/people[2]/age", leoAge),
        ], repeats: [("household/people", 2), ("household/people[2]/visits", 0)])
        guard let old else { return xml }
        var text = String(decoding: xml, as: UTF8.self)
        guard let at = text.range(of: id), let close = text[at.upperBound...].firstIndex(of: ">") else { throw TestFailure("no instanceID in \(text)") }
        text.insert(contentsOf: "<deprecatedID>\(old)</deprecatedID>", at: text.index(after: close))
        return Array(text.utf8)
    }

    @Test func anOpenRosaInstanceNamingTheCurrentInstanceIDIsAnEditOfItsCollectorsResponse() throws {
        let p = try OpenRosaTests.Published(definition: FormLogicTests.roster)
        let f = p.f
        let a = "uuid:edit-a000-0001", b = "uuid:edit-b000-0002", c = "uuid:edit-c000-0003"
        #expect(try p.collect.submit(try Self.rosterInstance(p, a)).status == 201)
        let responseId = try #require(try p.stored(a).json?["responseId"]?.stringValue)
        func document() throws -> Reply { try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)", token: f.reviewerToken) }
        func traces() throws -> [Int64] {
            try ["responses", "response_versions", "audit WHERE action <> 'subscription.set'", "uploads"].map { try f.server.count("SELECT COUNT(*) AS n FROM \($0)") }
        }

        // B replaces A: 201, a new version of the same response, state edited.
        let edited = try p.collect.submit(try Self.rosterInstance(p, b, leoAge: "7", deprecating: a))
        #expect(edited.status == 201, "\(edited.text)")
        #expect(OpenRosaTests.message(edited).contains("edited"))
        let now = try document()
        #expect(now.json?["reviewState"] == "edited" && now.json?["revision"]?.intValue == 2)
        #expect(now.json?["answers"]?["people"]?.arrayValue?.last?["age"]?.intValue == 7)
        #expect(try p.responses() == 1)
        let versions = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)/versions", token: f.collectorToken)
        #expect(versions.json?["items"]?.arrayValue?.map { $0["source"]?.stringValue } == ["submission", "openrosa"], "\(versions.text)")
        let diff = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)/versions/2/diff", token: f.collectorToken)
        #expect(diff.json?["items"] == [["path": "answers.people[1].age", "old": 6, "new": 7]], "\(diff.text)")

        // Sent again: 202, nothing new; other content under B: 1004; the original A: still its replay.
        let before = try traces()
        #expect(try p.collect.submit(try Self.rosterInstance(p, b, leoAge: "7", deprecating: a)).status == 202)
        let other = try p.collect.submit(try Self.rosterInstance(p, b, leoAge: "8", deprecating: a))
        #expect(other.status == 409 && other.header("surveyd-error-code") == "1004", "\(other.text)")
        #expect(try p.collect.submit(try Self.rosterInstance(p, a)).status == 202)
        // B is the response's id now: a submission under it (no deprecatedID) is not a second response.
        let plain = try p.collect.submit(try Self.rosterInstance(p, b, leoAge: "7"))
        #expect(plain.status == 409 && plain.header("surveyd-error-code") == "1004", "\(plain.text)")
        P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                          ResponseTests.submission(b, p.v, answers: FormLogicTests.goodAnswers)), .idempotencyConflict)
        #expect(try p.responses() == 1)
        // A is no longer the current instance: an edit of it is stale (1021), nothing changes.
        let stale = try p.collect.submit(try Self.rosterInstance(p, c, leoAge: "9", deprecating: a))
        #expect(stale.status == 409 && stale.header("surveyd-error-code") == "1021", "\(stale.text)")
        #expect(OpenRosaTests.message(stale).contains(b))
        // An instance of nothing received, and answers that break the form's rules.
        let unknown = try p.collect.submit(try Self.rosterInstance(p, c, deprecating: "uuid:never-sent-0001"))
        #expect(unknown.status == 404 && unknown.header("surveyd-error-code") == "1005", "\(unknown.text)")
        let invalid = try p.collect.submit(try Self.rosterInstance(p, c, firstAge: "50", deprecating: b))
        #expect(invalid.status == 422 && invalid.header("surveyd-error-code") == "1002", "\(invalid.text)")
        // Expired: 402, nothing stored; the same edit after renewal: 201, once.
        try f.expire()
        let expired = try p.collect.submit(try Self.rosterInstance(p, c, leoAge: "9", deprecating: b))
        #expect(expired.status == 402 && expired.header("surveyd-error-code") == "1001", "\(expired.text)")
        try f.renew()
        #expect(try traces() == before)
        #expect(try document().json?["revision"]?.intValue == 2)
        #expect(try p.collect.submit(try Self.rosterInstance(p, c, leoAge: "9", deprecating: b)).status == 201)
        #expect(try p.collect.submit(try Self.rosterInstance(p, c, leoAge: "9", deprecating: b)).status == 202)
        #expect(try document().json?["revision"]?.intValue == 3)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM response_versions WHERE response_id = ?", [.text(responseId)]) == 3)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'response.edit'") == 2)
    }

    /// The console's response page: a reviewer's or admin's edit form laid out by the form; the
    /// same edit operation (`source: console`); a refusal shown on the page, nothing changed.
    @Test func theConsoleEditsTheAnswersThroughTheSameOperation() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("console-edit-0001", v, answers: ["size": 4, "source": "well", "notes": "first"]))
        let responseId = try #require(r.json?["responseId"]?.stringValue)
        let page = "/console/orgs/\(f.orgId)/responses/\(responseId)"
        let reviewer = try ConsoleAdminTests.Session(f, token: f.reviewerToken)
        let shown = try reviewer.get(page)
        #expect(shown.text.contains("Edit the answers") && shown.text.contains(#"name="answers.size" value="4""#), "\(shown.text.prefix(3000))")
        #expect(shown.text.contains(#"<option value="well" selected>"#))
        let collector = try ConsoleAdminTests.Session(f, token: f.collectorToken)
        #expect(try !collector.get(page).text.contains("Edit the answers"))
        func api() throws -> JSONValue? { try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)", token: f.reviewerToken).json }

        // Refused: a size that is not a number (1002 at its path), then a stale page (1021); nothing changes.
        let invalid = try reviewer.post(page + "/answers", ["expectedRevision": "1", "answers.size": "many", "answers.source": "river", "answers.notes": ""])
        #expect(invalid.status == 422 && invalid.text.contains("answers.size"), "\(invalid.status) \(invalid.text.prefix(2000))")
        #expect(invalid.text.contains(#"value="many""#), "what was sent stays in the form to correct")
        let stale = try reviewer.post(page + "/answers", ["expectedRevision": "9", "answers.size": "6"])
        #expect(stale.status == 409 && stale.text.contains("changed since you opened it"))
        #expect(try api()?["revision"]?.intValue == 1 && f.server.count("SELECT COUNT(*) AS n FROM response_versions") == 0)

        // Saved: the answers as the form says them (an emptied field is no answer), a new version from the console.
        let saved = try reviewer.post(page + "/answers", ["expectedRevision": "1", "answers.size": "6", "answers.source": "river", "answers.notes": "",
                                                          "comment": "Checked with the household"])
        #expect(saved.status == 303 && saved.header("location")?.hasSuffix("?done=edit") == true, "\(saved.status) \(saved.text.prefix(1000))")
        #expect(try api()?["answers"] == ["size": 6, "source": "river"])
        #expect(try api()?["reviewState"] == "edited")
        let versions = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)/versions", token: f.reviewerToken).json?["items"]?.arrayValue
        #expect(versions?.last?["source"] == "console" && versions?.count == 2)
        // The submission sent again: its replay, answered as accepted (a survey without review: `none`).
        let replay = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                       ResponseTests.submission("console-edit-0001", v, answers: ["size": 4, "source": "well", "notes": "first"]))
        #expect(replay.status == 200 && replay.json?["reviewState"] == "none" && replay.json?["revision"]?.intValue == 1, "\(replay.text)")
        let after = try reviewer.get(page + "?done=edit")
        #expect(after.text.contains("the answers were edited") && after.text.contains("Answers edited") && after.text.contains("Checked with the household"))
    }

    /// An edit that changes what the form saves to its entity updates the entity, in the edit's
    /// transaction: a new version from this response; an edit of other answers leaves it alone.
    @Test func anEditOfASavedAnswerUpdatesTheEntityTheResponseMade() throws {
        let p = try EntityListTests.Published()
        let f = p.f
        let id = EntityListTests.household
        #expect(try p.collect.submit(try p.register("uuid:reg-edit-0001", entityId: id, head: "Ada", members: 4, village: "Kisii")).status == 201)
        let responseId = try #require(try f.server.rows("SELECT response_id FROM responses WHERE client_submission_id = 'uuid:reg-edit-0001'")
            .first?.string("response_id"))
        let stored = try #require(try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)", token: f.reviewerToken).json?["answers"]?.objectValue)
        func edit(_ revision: Int, _ changes: [String: JSONValue]) throws -> Reply {
            var answers = stored
            for (k, v) in changes { answers[k] = v }
            return try f.client.request("PUT", "/v1/orgs/\(f.orgId)/responses/\(responseId)/answers", token: f.reviewerToken,
                                        json: ["expectedRevision": .number(Double(revision)), "answers": .object(answers)])
        }
        let members: JSONValue = stored["member_count"]?.stringValue != nil ? "6" : 6
        let edited = try edit(1, ["member_count": members])
        #expect(edited.status == 200, "\(edited.text)")
        #expect(try p.entity(id) == .init(label: "Household of Ada", properties: ["head": "Ada", "members": "6", "village": "Kisii"],
                                          version: 2, conflict: nil))
        let made = try #require(try f.server.rows("SELECT source, response_id, actor FROM entity_versions WHERE entity_id = ? AND version = 2", [.text(id)]).first)
        #expect(try made.string("source") == "submission" && made.string("response_id") == responseId)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'entity.update'") == 1)
        // The same properties again (another answer changed): no new entity version.
        #expect(try edit(2, ["member_count": members, "village_name": "Kisii"]).status == 200)
        #expect(try p.entity(id)?.version == 2)
        // A refused edit (expired) changes neither.
        try f.expire()
        let refused = try edit(3, ["member_count": stored["member_count"]?.stringValue != nil ? "9" : 9])
        #expect(refused.status == 402)
        try f.renew()
        #expect(try p.entity(id)?.properties["members"] == "6")
    }

    /// `surveyd check`: an edited response keeps its versions, the last of them its answers.
    @Test(.enabled(if: !TestEngine.isPostgres, "edits the SQLite file to make violations")) func surveydCheckVerifiesAResponsesVersions() throws {
        let w = try W()
        #expect(try Self.edit(w, 1).status == 200)
        let dir = w.f.server.dataDir
        let (ok, report) = try MaintenanceTests.surveyd(["check", "--data-dir", dir])
        #expect(ok == 0, "\(report)")
        let conn = try Connection(path: dir + "/surveyd.sqlite", readOnly: false)
        try conn.run("UPDATE responses SET answers = '{\"size\":1}' WHERE response_id = ?", [.text(w.responseId)])
        let (bad, changed) = try MaintenanceTests.surveyd(["check", "--data-dir", dir])
        #expect(bad == 1 && changed.contains("response \(w.responseId): its answers are not its last version's"), "\(changed)")
        try conn.run("DELETE FROM response_versions WHERE response_id = ? AND number = 1", [.text(w.responseId)])
        let (_, lost) = try MaintenanceTests.surveyd(["check", "--data-dir", dir])
        #expect(lost.contains("response \(w.responseId): 1 edits but 1 versions kept"), "\(lost)")
    }

    /// An instance of the photos form with both files named, as Collect writes it; an edit
    /// carries `meta/deprecatedID` right after its instanceID.
    static func photoInstance(_ p: OpenRosaTests.Published, _ id: String, size: String, replacing old: String?) throws -> [UInt8] {
        let xml = try CollectClient.instance(of: p.xform, instanceID: id, values: [("size", size), ("house", "house.png"), ("water", "water.jpg")])
        guard let old else { return xml }
        var text = String(decoding: xml, as: UTF8.self)
        guard let at = text.range(of: id), let close = text[at.upperBound...].firstIndex(of: ">") else { throw TestFailure("no instanceID") }
        text.insert(contentsOf: "<deprecatedID>\(old)</deprecatedID>", at: text.index(after: close))
        return Array(text.utf8)
    }

    /// An edited form too large for one POST comes in parts, as Collect sends any form: the
    /// earlier part's file is kept as an upload of the new instance, the last part makes the edit
    /// with both files; the last part sent again is 202 and stores nothing twice.
    @Test func anOpenRosaEditSentInPartsIsMadeByItsLastPart() throws {
        let p = try OpenRosaTests.Published(definition: OpenRosaTests.photos)
        let f = p.f
        let a = "uuid:parts-edit-a001", b = "uuid:parts-edit-b002"
        func instance(_ id: String, size: String, replacing old: String? = nil) throws -> [UInt8] {
            try Self.photoInstance(p, id, size: size, replacing: old)
        }
        let house = CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(2_000))
        let water = CollectClient.File(name: "water.jpg", contentType: "image/jpeg", bytes: Files.jpeg(4_000))
        let newHouse = CollectClient.File(name: "house.png", contentType: "image/png", bytes: Files.png(3_500))
        let newWater = CollectClient.File(name: "water.jpg", contentType: "image/jpeg", bytes: Files.jpeg(4_500))
        #expect(try p.collect.submit(try instance(a, size: "3"), files: [house, water]).status == 201)
        let responseId = try #require(try p.stored(a).json?["responseId"]?.stringValue)
        let edit = try instance(b, size: "5", replacing: a)
        let first = try p.collect.submit(edit, files: [newHouse], incomplete: true)
        #expect(first.status == 201, "\(first.text)")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM uploads") == 3 && f.server.count("SELECT COUNT(*) AS n FROM response_versions") == 0)
        let last = try p.collect.submit(edit, files: [newWater])
        #expect(last.status == 201, "\(last.text)")
        let answers = try #require(try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)", token: f.reviewerToken).json?["answers"])
        #expect(answers["size"]?.intValue == 5)
        for (question, file) in [("house", newHouse), ("water", newWater)] {
            let id = try #require(answers[question]?["clientUploadId"]?.stringValue)
            #expect(try f.client.get("/v1/orgs/\(f.orgId)/uploads/\(id)/content", token: f.reviewerToken).body == file.bytes)
        }
        #expect(try p.collect.submit(edit, files: [newWater]).status == 202)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM uploads") == 4 && f.server.count("SELECT COUNT(*) AS n FROM response_versions") == 2)
        #expect(try p.responses() == 1 && TestEngine.check(dataDir: f.server.dataDir).ok)
    }

    /// An edited form with its files (Collect sends them again): each stored as an upload of the
    /// new instance, in the edit's transaction; sent again, 202 and nothing stored twice.
    @Test func anOpenRosaEditCarriesItsFiles() throws {
        let p = try OpenRosaTests.Published(definition: OpenRosaTests.photos)
        let f = p.f
        let house = Files.png(2_000), water = Files.jpeg(4_000), newHouse = Files.png(3_000)
        let a = "uuid:photo-edit-a001", b = "uuid:photo-edit-b002"
        func instance(_ id: String, size: String, replacing old: String? = nil) throws -> [UInt8] {
            try Self.photoInstance(p, id, size: size, replacing: old)
        }
        func files(_ h: [UInt8]) -> [CollectClient.File] {
            [CollectClient.File(name: "house.png", contentType: "image/png", bytes: h), CollectClient.File(name: "water.jpg", contentType: "image/jpeg", bytes: water)]
        }
        #expect(try p.collect.submit(try instance(a, size: "3"), files: files(house)).status == 201)
        let responseId = try #require(try p.stored(a).json?["responseId"]?.stringValue)
        // The edit without its files: 1014, nothing stored.
        let without = try p.collect.submit(try instance(b, size: "4", replacing: a))
        #expect(without.status == 422 && without.header("surveyd-error-code") == "1014", "\(without.text)")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM uploads") == 2 && f.server.count("SELECT COUNT(*) AS n FROM response_versions") == 0)

        let edited = try p.collect.submit(try instance(b, size: "4", replacing: a), files: files(newHouse))
        #expect(edited.status == 201, "\(edited.text)")
        let answers = try #require(try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)", token: f.reviewerToken).json?["answers"])
        #expect(answers["size"]?.intValue == 4)
        let houseId = try #require(answers["house"]?["clientUploadId"]?.stringValue)
        let content = try f.client.get("/v1/orgs/\(f.orgId)/uploads/\(houseId)/content", token: f.reviewerToken)
        #expect(content.status == 200 && content.body == newHouse)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM uploads") == 4)
        // Sent again whole: 202, nothing stored twice.
        #expect(try p.collect.submit(try instance(b, size: "4", replacing: a), files: files(newHouse)).status == 202)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM uploads") == 4)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM response_versions") == 2 && p.responses() == 1)
        #expect(try TestEngine.check(dataDir: f.server.dataDir).ok)
    }
}

