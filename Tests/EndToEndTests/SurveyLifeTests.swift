import Foundation
import Testing
import SurveyDomain

/// A survey's life on a real server: open (listed, taking responses), closing (no longer listed
/// to apps, still taking what phones hold), closed (no new response through any door, 409 /
/// 1023, nothing stored; a response sent before is still recognised), and open again. Changing
/// the state is an admin's gated, audited write, from the API and the console.
@Suite struct SurveyLifeTests {
    typealias P = FoundationTests

    func setState(_ f: Fixture, _ surveyId: String, _ state: String, token: String? = nil, key: String? = nil) throws -> Reply {
        try f.client.request("PUT", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/state", token: token ?? f.adminToken,
                             json: ["state": .string(state)], headers: key.map { ["Idempotency-Key": $0] } ?? [:])
    }

    func responses(_ f: Fixture) throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM responses") }

    @Test func aClosingSurveyIsUnlistedButTakesWhatPhonesHoldAndAClosedOneTakesNothingNew() throws {
        let p = try OpenRosaTests.Published(definition: FormLogicTests.roster)
        let f = p.f
        let sent = try p.instance("uuid:life-sent-0001")
        #expect(try p.collect.submit(sent).status == 201)
        #expect(try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId)", token: f.adminToken).json?["state"] == "open")

        // Closing: gone from the form list, still taking responses from either door.
        let closing = try setState(f, p.v.surveyId, "closing")
        #expect(closing.status == 200, "\(closing.text)")
        #expect(closing.json?["state"] == "closing")
        #expect(try p.collect.formList().forms.isEmpty)
        #expect(try p.collect.submit(try p.instance("uuid:life-closing-0001")).status == 201)
        let json = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                     ResponseTests.submission("life-closing-json-0001", p.v, answers: FormLogicTests.goodAnswers))
        #expect(json.status == 201, "\(json.text)")
        #expect(try responses(f) == 3)

        // Closed: nothing new through either door, nothing stored, no audit entry; replays still answer.
        #expect(try setState(f, p.v.surveyId, "closed").json?["state"] == "closed")
        let audit = try f.server.count("SELECT COUNT(*) AS n FROM audit")
        let refused = try p.collect.submit(try p.instance("uuid:life-closed-0001"))
        #expect(refused.status == 409, "\(refused.text)")
        #expect(refused.header("surveyd-error-code") == "1023")
        #expect(OpenRosaTests.message(refused).contains("is closed"), "\(OpenRosaTests.message(refused))")
        let refusedJSON = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                            ResponseTests.submission("life-closed-json-0001", p.v, answers: FormLogicTests.goodAnswers))
        P.expectProblem(refusedJSON, .surveyClosed)
        #expect(try responses(f) == 3)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit") == audit)
        #expect(try p.collect.submit(sent).status == 202)
        let replay = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                       ResponseTests.submission("life-closing-json-0001", p.v, answers: FormLogicTests.goodAnswers))
        #expect(replay.status == 200 && replay.header("idempotent-replayed") == "true", "\(replay.text)")

        // Open again: the refused ones go through, once.
        #expect(try setState(f, p.v.surveyId, "open").json?["state"] == "open")
        #expect(try p.collect.formList().forms.count == 1)
        #expect(try p.collect.submit(try p.instance("uuid:life-closed-0001")).status == 201)
        #expect(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("life-closed-json-0001", p.v, answers: FormLogicTests.goodAnswers)).status == 201)
        #expect(try responses(f) == 5)
        let trail = try f.server.rows("SELECT detail FROM audit WHERE action = 'survey.state' ORDER BY seq").map { try $0.string("detail") }
        #expect(trail == ["from=open to=closing", "from=closing to=closed", "from=closed to=open"], "\(trail)")
    }

    /// 1023 is a check of step 4: after the replay check (a response sent before is still its
    /// replay, another body under its id still 1004) and before the gate (while the subscription
    /// has expired a closed survey is reported as itself, never as 1001), through both doors.
    @Test func aClosedSurveyIsCheckedAfterTheReplayAndBeforeTheGate() throws {
        let p = try OpenRosaTests.Published(definition: FormLogicTests.roster)
        let f = p.f
        #expect(try p.collect.submit(try p.instance("uuid:life-order-0001")).status == 201)
        #expect(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("life-order-json-0001", p.v, answers: FormLogicTests.goodAnswers)).status == 201)
        #expect(try setState(f, p.v.surveyId, "closed").status == 200)
        func traces() throws -> [Int64] {
            try ["responses", "audit WHERE action <> 'subscription.set'", "idempotency_keys", "uploads"].map { try f.server.count("SELECT COUNT(*) AS n FROM \($0)") }
        }
        let before = try traces()

        // The same ids with other content: still 1004, not 1023.
        let otherXML = try p.collect.submit(try p.instance("uuid:life-order-0001", size: "3"))
        #expect(otherXML.status == 409 && otherXML.header("surveyd-error-code") == "1004", "\(otherXML.text)")
        let changed: JSONValue = ["consent": "yes", "size": 1, "eldest": 41, "people": [["name": "Ana", "age": 41, "pregnant": "no"]]]
        P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                          ResponseTests.submission("life-order-json-0001", p.v, answers: changed)), .idempotencyConflict)

        // Expired and closed: the closure is reported, never 1001; replays still answer.
        try f.expire()
        let xml = try p.collect.submit(try p.instance("uuid:life-order-0002"))
        #expect(xml.status == 409 && xml.header("surveyd-error-code") == "1023", "\(xml.text)")
        #expect(OpenRosaTests.message(xml).contains("closed"))
        let json = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                     ResponseTests.submission("life-order-json-0002", p.v, answers: FormLogicTests.goodAnswers))
        P.expectProblem(json, .surveyClosed)
        #expect(json.json?["detail"]?.stringValue?.contains("closed") == true)
        #expect(try p.collect.submit(try p.instance("uuid:life-order-0001")).status == 202)
        let replay = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                       ResponseTests.submission("life-order-json-0001", p.v, answers: FormLogicTests.goodAnswers))
        #expect(replay.status == 200 && replay.header("idempotent-replayed") == "true")
        try f.renew()
        #expect(try traces() == before)
    }

    @Test func changingTheStateIsAnAdminsGatedWrite() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        P.expectProblem(try setState(f, v.surveyId, "finished"), .validationFailed)
        P.expectProblem(try setState(f, v.surveyId, "closed", token: f.collectorToken), .forbidden)
        P.expectProblem(try setState(f, "srv_nope", "closed"), .notFound)
        try f.expire()
        P.expectProblem(try setState(f, v.surveyId, "closed"), .subscriptionExpired)
        try f.renew()
        let first = try setState(f, v.surveyId, "closed", key: "close-survey-0001")
        #expect(first.status == 200 && first.json?["state"] == "closed", "\(first.text)")
        let again = try setState(f, v.surveyId, "closed", key: "close-survey-0001")
        #expect(again.header("idempotent-replayed") == "true" && again.json == first.json)
        P.expectProblem(try setState(f, v.surveyId, "open", key: "close-survey-0001"), .idempotencyConflict)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'survey.state'") == 1)
    }

    @Test func theConsoleShowsAndChangesTheState() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        let admin = try ConsoleAdminTests.Session(f, token: f.adminToken)
        let page = try admin.get("/console/orgs/\(f.orgId)/surveys/\(v.surveyId)")
        #expect(page.text.contains("State: open"), "\(page.text.prefix(2000))")
        let closed = try admin.post("/console/orgs/\(f.orgId)/surveys/\(v.surveyId)/state", ["state": "closed"])
        #expect(closed.status == 200, "\(closed.status)")
        #expect(closed.text.contains("State: closed") && closed.text.contains("The survey is now closed"), "\(closed.text.prefix(3000))")
        #expect(try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(v.surveyId)", token: f.adminToken).json?["state"] == "closed")
        let bad = try admin.post("/console/orgs/\(f.orgId)/surveys/\(v.surveyId)/state", ["state": "gone"])
        #expect(bad.status == 422)
        #expect(bad.text.contains("open, closing or closed"))
    }
}
