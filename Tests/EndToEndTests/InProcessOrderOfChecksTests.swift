import Foundation
import Testing
import SurveyDomain
@testable import SurveyServer
@testable import SurveyStorage

/// The order of checks of a submission and of a review step, run in process: the same routes,
/// checks, gate and SQLite file as on the wire, without a socket (`App.respond`), so each case
/// takes milliseconds. Every refusal is checked to leave nothing behind.
@Suite struct InProcessOrderOfChecksTests {
    /// A data dir with an organization, its admin, a collector, a reviewer, a reviewed survey, and
    /// a second organization whose collector must never see the first's.
    final class World: @unchecked Sendable {
        // @unchecked: set up in init, read afterwards.
        let dir = NSTemporaryDirectory() + "surveyd-inproc-" + UUID().uuidString
        let clock = ManualClock()
        let app: App
        /// `project`: the organization's integer id in ODK Central's paths.
        var org = "", project = "", admin = "", collector = "", reviewer = "", stranger = "", version = "", hash = ""

        init() throws {
            var config = try TestEngine.configuration(dataDir: dir)
            config.clock = clock
            config.logRequests = false
            app = try App(config)
            let op = try AdminCommands(database: app.database).createOperator()
            func post(_ path: String, _ token: String, _ body: JSONValue) throws -> JSONValue {
                let r = app.respond(method: "POST", path: path, token: token, body: body)
                guard r.status == 201, let json = r.body else { throw TestFailure("\(path): \(r.status) \(String(describing: r.body))") }
                return json
            }
            let expires = JSONValue.string(Timestamp.format(clock.nowMillis() + 86_400_000))
            let created = try post("/v1/orgs", op, ["name": "A", "expiresAt": expires])
            org = created["orgId"]!.stringValue!
            project = String(created["projectId"]!.intValue!)
            let other = try post("/v1/orgs", op, ["name": "B", "expiresAt": expires])["orgId"]!.stringValue!
            admin = try post("/v1/orgs/\(org)/users", op, ["name": "Ada", "roles": ["admin"]])["token"]!.stringValue!
            collector = try post("/v1/orgs/\(org)/users", admin, ["name": "Cole", "roles": ["collector"]])["token"]!.stringValue!
            reviewer = try post("/v1/orgs/\(org)/users", admin, ["name": "Rae", "roles": ["reviewer"]])["token"]!.stringValue!
            stranger = try post("/v1/orgs/\(other)/users", op, ["name": "Sam", "roles": ["collector"]])["token"]!.stringValue!
            let survey = try post("/v1/orgs/\(org)/surveys", admin, ["title": "Household", "reviewRequired": true])["surveyId"]!.stringValue!
            let v = try post("/v1/orgs/\(org)/surveys/\(survey)/versions", admin, ["definition": Fixture.definition])
            version = v["surveyVersionId"]!.stringValue!
            hash = v["contentHash"]!.stringValue!
        }

        deinit {
            app.stop()
            try? FileManager.default.removeItem(atPath: dir)
        }

        func submission(_ csid: String, size: Int = 4) -> JSONValue {
            ["clientSubmissionId": .string(csid), "surveyVersionId": .string(version), "contentHash": .string(hash),
             "answers": ["size": .number(Double(size)), "source": "well"]]
        }

        func submit(_ body: JSONValue, token: String?) -> App.Answer {
            app.respond(method: "POST", path: "/v1/orgs/\(org)/responses", token: token, body: body)
        }

        /// Rows that a refusal must not have added: responses, audit entries, stored keys.
        func traces() throws -> [Int64] {
            try app.database.read { db in
                try ["responses", "audit", "idempotency_keys"].map { try db.conn.query("SELECT COUNT(*) AS n FROM \($0)").first?.int("n") ?? -1 }
            }
        }

        func expire() { clock.advance(byMillis: 2 * 86_400_000) }
    }

    static func code(_ r: App.Answer) -> Int? { r.body?["errorCode"]?.intValue }

    @Test func aSubmissionIsCheckedInTheContractsOrder() throws {
        let w = try World()
        let before = try w.traces()
        #expect(Self.code(w.submit(w.submission("order-0001"), token: nil)) == 1007)
        #expect(Self.code(w.submit(w.submission("order-0001"), token: w.stranger)) == 1005)
        #expect(Self.code(w.submit(w.submission("order-0001"), token: w.reviewer)) == 1006)
        #expect(Self.code(w.submit(w.submission("order-0001", size: 500), token: w.collector)) == 1002)
        #expect(try w.traces() == before)

        // Accepted once; the same id with another body is 1004, the same body a replay.
        #expect(w.submit(w.submission("order-0001"), token: w.collector).status == 201)
        let after = try w.traces()
        #expect(Self.code(w.submit(w.submission("order-0001", size: 5), token: w.collector)) == 1004)
        #expect(w.submit(w.submission("order-0001"), token: w.collector).status == 200)
        #expect(try w.traces() == after)

        // Expired: validation still answers as itself, the replay still answers, and only a valid
        // new submission meets the gate.
        w.expire()
        #expect(Self.code(w.submit(w.submission("order-0002", size: 500), token: w.collector)) == 1002)
        #expect(w.submit(w.submission("order-0001"), token: w.collector).status == 200)
        let refused = w.submit(w.submission("order-0002"), token: w.collector)
        #expect(Self.code(refused) == 1001)
        #expect(refused.body?["expiresAt"]?.stringValue != nil)
        #expect(try w.traces() == after)
    }

    @Test func aReviewStepIsCheckedInTheContractsOrder() throws {
        let w = try World()
        let accepted = w.submit(w.submission("review-0001"), token: w.collector)
        let responseId = try #require(accepted.body?["responseId"]?.stringValue)
        let path = "/v1/orgs/\(w.org)/responses/\(responseId)/review"
        func step(_ action: String, _ expected: Int, token: String?) -> App.Answer {
            w.app.respond(method: "POST", path: path, token: token, body: ["action": .string(action), "expectedRevision": .number(Double(expected))])
        }
        let before = try w.traces()
        #expect(Self.code(step("startReview", 1, token: nil)) == 1007)
        #expect(Self.code(step("startReview", 1, token: w.stranger)) == 1005)
        #expect(Self.code(step("startReview", 1, token: w.admin)) == 1006)
        #expect(Self.code(step("startReview", 7, token: w.reviewer)) == 1021)
        #expect(Self.code(step("approve", 1, token: w.reviewer)) == 1020)
        w.expire()
        // The state's refusals come before the gate's; a valid step meets the gate.
        #expect(Self.code(step("approve", 1, token: w.reviewer)) == 1020)
        #expect(Self.code(step("startReview", 1, token: w.reviewer)) == 1001)
        #expect(try w.traces() == before)
        w.clock.advance(byMillis: -2 * 86_400_000)
        let started = step("startReview", 1, token: w.reviewer)
        #expect(started.status == 200)
        #expect(started.body?["revision"]?.intValue == 2)
        #expect(try w.traces()[1] == before[1] + 1)
    }
}
