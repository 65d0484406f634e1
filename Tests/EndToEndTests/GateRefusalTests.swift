import Foundation
import Testing
import SurveyDomain
import SurveyServer
@testable import SurveyStorage

/// Every gated route refuses an expired organization with the gate's one 1001: `expiresAt` in the
/// body (the tus chunk path included), counted once in the metrics, and nothing written.
@Suite struct GateRefusalTests {
    typealias P = FoundationTests

    static func refusals(_ f: Fixture) throws -> Int {
        let text = MetricsText.withoutProcess(try f.client.get("/metrics", token: f.server.operatorToken).text)
        let line = text.split(separator: "\n").first { $0.hasPrefix("surveyd_subscription_refusals_total ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    @Test func everyGatedRouteAnswersTheGatesRefusal() throws {
        let w = try ReviewTests.World()
        let f = w.f
        let orgPath = "/v1/orgs/\(f.orgId)"
        // State each refusal needs to reach the gate (validation comes first): a returned
        // response to resubmit, a submitted one to review, an unfinished tus upload.
        let other = try f.client.post("\(orgPath)/responses", token: f.collectorToken, ResponseTests.submission("gate-0002", w.v))
        let otherId = try #require(other.json?["responseId"]?.stringValue)
        #expect(try w.review("startReview", 1).status == 200)
        #expect(try w.review("returnForCorrection", 2, comment: "again").status == 200)
        let t = ResumableUploadTests.Tus(s: UploadTests.Setup(f: f, v: (w.v.surveyId, w.v.versionId, w.v.contentHash)))
        let tus = try #require(try t.create("gate-tus-0001", length: 3_000).header("location"))

        let expiry = Timestamp.nowMillis() - 60_000
        try f.setExpiry(expiry)
        let before = try Self.refusals(f)
        let audit = try f.server.count("SELECT COUNT(*) AS n FROM audit")
        let tusHeaders = ["Tus-Resumable": "1.0.0"]
        let refused: [(String, Reply)] = [
            ("createSurvey", try f.client.post("\(orgPath)/surveys", token: f.adminToken, ["title": "Later"])),
            ("publishVersion", try f.client.post("\(orgPath)/surveys/\(w.v.surveyId)/versions", token: f.adminToken,
                                                 ["definition": Fixture.definition.with(title: "Later")])),
            ("submitResponse", try f.client.post("\(orgPath)/responses", token: f.collectorToken, ResponseTests.submission("gate-0003", w.v))),
            ("putUpload", try t.s.put("gate-upload-0001", Files.jpeg())),
            ("tusCreate", try t.create("gate-tus-0002", length: 3_000)),
            ("tusPatch", try t.patch(tus, offset: 0, Files.jpeg(3_000))),
            ("tusDelete", try f.client.request("DELETE", tus, token: f.collectorToken, headers: tusHeaders)),
            ("review", try f.client.post("\(orgPath)/responses/\(otherId)/review", token: f.reviewerToken,
                                         ["action": "startReview", "expectedRevision": 1])),
            ("resubmit", try w.resubmit(3)),
            ("createTask", try f.client.post("\(orgPath)/tasks", token: f.adminToken,
                                             ["title": "Later", "surveyId": .string(w.v.surveyId), "assigneeUserId": .string(f.collectorId)])),
        ]
        for (route, r) in refused {
            P.expectProblem(r, .subscriptionExpired)
            #expect(r.json?["expiresAt"]?.stringValue == Timestamp.format(expiry), "\(route): \(r.text)")
        }
        #expect(try Self.refusals(f) == before + refused.count)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit") == audit)
    }
}
