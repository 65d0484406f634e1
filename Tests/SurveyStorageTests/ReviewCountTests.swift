import Foundation
import Testing
@testable import SurveyStorage
import SurveyDomain

/// The review desk's counts: per review state of one survey, exact up to a cap and "more than
/// the cap" beyond it, read from the index alone.
@Suite struct ReviewCountTests {
    /// One organization with two surveys; `states` are the first survey's responses, sent by
    /// Cole and Dana in turn, and the second survey has as many again, all submitted by Eve,
    /// which no count of the first may include.
    static func seeded(_ states: [ReviewState]) throws -> (Database, TempDir) {
        let dir = TempDir()
        let db = try Database(Database.Configuration(path: dir.db))
        let gate = WriteGate(database: db)
        let now = Timestamp.nowMillis()
        _ = try db.securityWrite(orgId: "org_1", actor: "op") { tx in
            try tx.createOrg(orgId: "org_1", name: "Field team", expiresAt: now + 86_400_000)
        }
        for (id, name) in [("usr_1", "Cole"), ("usr_2", "Dana"), ("usr_3", "Eve"), ("usr_4", "Finn")] {
            _ = try db.securityWrite(orgId: "org_1", actor: "op") { tx in
                try tx.createUser(userId: id, orgId: "org_1", name: name, roles: ["collector"])
            }
        }
        for survey in ["srv_1", "srv_2"] {
            _ = try gate.write(orgId: "org_1", actor: "usr_1") { tx in
                _ = try tx.createSurvey(surveyId: survey, title: survey, reviewRequired: true, createdBy: "usr_1")
                _ = try tx.publishVersion(surveyVersionId: "sv_\(survey)", surveyId: survey, contentHash: "sha256:ab", definition: "{}")
            }
        }
        let responses = states.enumerated().map { ("srv_1", $0.offset % 2 == 0 ? "usr_1" : "usr_2", $0.element) }
            + states.map { _ in ("srv_2", "usr_3", ReviewState.submitted) }
        for (i, (survey, submitter, state)) in responses.enumerated() {
            let r = ResponseRecord(responseId: "rsp_\(1000 + i)", orgId: "org_1", clientSubmissionId: "csid-\(i)", submitter: submitter,
                                   surveyId: survey, surveyVersionId: "sv_\(survey)", requestDigest: "sha256:cd",
                                   requestSHA256: Array(repeating: 7, count: 32), answers: "{}", fieldTaskId: nil, capturedAt: nil,
                                   receivedAt: now, reviewState: state, revision: 1)
            _ = try gate.write(orgId: "org_1", actor: "usr_1") { tx in try tx.insertResponse(r, facts: [1]) }
        }
        return (db, dir)
    }

    @Test func eachStateIsCountedExactlyUpToTheCapAndAsMoreBeyondIt() throws {
        let (db, dir) = try Self.seeded([.submitted, .submitted, .submitted, .approved])
        defer { db.close(); _ = dir }
        let survey = ExportFilter(orgId: "org_1", surveyId: "srv_1")
        func counts(_ cap: Int) throws -> [ReviewState: Int] { try db.read { try $0.stateCounts(survey, upTo: cap) } }
        func count(_ f: ExportFilter, _ state: ReviewState, _ cap: Int) throws -> Int { try db.read { try $0.count(f, in: state, upTo: cap) } }
        #expect(try counts(100) == [.submitted: 3, .approved: 1])
        #expect(try count(survey, .submitted, 3) == 3)
        // Above the cap: cap + 1, "more than the cap", however many there are.
        #expect(try count(survey, .submitted, 2) == 3)
        #expect(try count(survey, .submitted, 1) == 2)
        #expect(try counts(1) == [.submitted: 2, .approved: 1])
        #expect(try count(survey, .rejected, 100) == 0)
        #expect(try count(ExportFilter(orgId: "org_2", surveyId: "srv_1"), .submitted, 100) == 0)
    }

    /// Counting reads the index, not the responses (their answers and request bodies); a
    /// state's page reads that state's rows in order, without sorting the survey's.
    @Test func aCountAndAStatesPageReadTheSurveyStateIndex() throws {
        let (db, dir) = try Self.seeded([.submitted, .approved])
        defer { db.close(); _ = dir }
        var filter = ExportFilter(orgId: "org_1", surveyId: "srv_1")
        let all = filter.condition
        filter.reviewStates = [.approved]
        let approved = filter.condition
        func plan(_ sql: String, _ args: [SQLValue]) throws -> [String] {
            try db.read { r in try r.conn.query("EXPLAIN QUERY PLAN " + sql, args).map { try $0.string("detail") } }
        }
        let count = try plan("SELECT 1 FROM responses WHERE \(all.sql) AND review_state = ?", all.args + [.text("submitted")])
        #expect(count.contains { $0.contains("COVERING INDEX responses_survey_state") }, "\(count)")
        let page = try plan("SELECT response_id FROM responses WHERE \(approved.sql) ORDER BY response_id DESC LIMIT 51", approved.args)
        #expect(page.contains { $0.contains("responses_survey_state") } && !page.contains { $0.contains("TEMP B-TREE") }, "\(page)")
        #expect(try db.read { try $0.queueRows(filter, before: nil, limit: 50).map(\.responseId) } == ["rsp_1001"])
    }

    /// Who has submitted: each person once, by name, from the organization alone (not from
    /// one survey), found one index step per person.
    @Test func theSubmittersAreEveryoneWhoSubmittedToTheOrganization() throws {
        let (db, dir) = try Self.seeded([.submitted, .approved, .submitted, .returned, .submitted])
        defer { db.close(); _ = dir }
        #expect(try db.read { try $0.submitters(orgId: "org_1").map(\.name) } == ["Cole", "Dana", "Eve"])
        #expect(try db.read { try $0.submitters(orgId: "org_2") }.isEmpty)
        let plan = try db.read { r in
            try r.conn.query("EXPLAIN QUERY PLAN SELECT MIN(submitter) FROM responses WHERE org_id = ? AND submitter > ?",
                             [.text("org_1"), .text("usr_1")]).map { try $0.string("detail") }
        }
        #expect(plan.contains { $0.contains("COVERING INDEX responses_submitter") }, "\(plan)")
    }
}
