import Foundation
import Testing
import SurveyDomain
import SurveyServer
@testable import SurveyStorage

/// A replay answers the receipt as it was; keys on every write, user management and
/// operator writes included; a no-op writes nothing; a removed role counts on resubmission too.
@Suite struct ReplayAndKeyTests {
    typealias P = FoundationTests

    /// Returned, resubmitted with a new version: a replay of the original submission still
    /// answers the receipt of its acceptance (version 1, submitted, revision 1), not today's state.
    @Test func aResponseReplayAnswersTheOriginalReceipt() throws {
        let w = try ReviewTests.World()
        let f = w.f
        let original = ResponseTests.submission("review-0001", w.v, extra: ["fieldTaskId": .string(w.taskId)])
        let first = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, original)
        #expect(first.status == 200)
        let receipt = try #require(first.json)
        #expect(receipt["revision"]?.intValue == 1)
        #expect(receipt["reviewState"]?.stringValue == "submitted")

        #expect(try w.review("startReview", 1).status == 200)
        #expect(try w.review("returnForCorrection", 2, comment: "size looks wrong").status == 200)
        let v2 = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(w.v.surveyId)/versions", token: f.adminToken, ["definition": Fixture.definition.with(title: "Household v2")])
        let v2Id = try #require(v2.json?["surveyVersionId"]?.stringValue)
        let resubmitted = try f.client.post("/v1/orgs/\(f.orgId)/responses/\(w.responseId)/resubmit", token: f.collectorToken,
                                            ["expectedRevision": 3, "surveyVersionId": .string(v2Id),
                                             "contentHash": .string(v2.json?["contentHash"]?.stringValue ?? ""), "answers": ["size": 5]])
        #expect(resubmitted.status == 200, "\(resubmitted.text)")
        #expect(resubmitted.json?["revision"]?.intValue == 4)

        // The same bytes, and a re-encoding of the same content: both the original receipt.
        let sameBytes = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, original)
        let reencoded = try f.client.request("POST", "/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                             body: Array(" \(CanonicalJSON.string(original)) ".utf8), headers: ["Content-Type": "application/json"])
        for replay in [sameBytes, reencoded] {
            #expect(replay.status == 200)
            #expect(replay.header("idempotent-replayed") == "true")
            #expect(replay.json == first.json, "\(replay.text)")
            #expect(replay.json?["surveyVersionId"]?.stringValue == w.v.versionId)
        }
        // The current state is what GET is for.
        let now = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(w.responseId)", token: f.collectorToken)
        #expect(now.json?["surveyVersionId"]?.stringValue == v2Id)
        #expect(now.json?["revision"]?.intValue == 4)
    }

    @Test func aFormerCollectorCannotResubmit() throws {
        let w = try ReviewTests.World()
        #expect(try w.review("startReview", 1).status == 200)
        #expect(try w.review("returnForCorrection", 2, comment: "again").status == 200)
        let roles = try w.f.client.put("/v1/orgs/\(w.f.orgId)/users/\(w.f.collectorId)/roles", token: w.f.adminToken, ["roles": ["reviewer"]])
        #expect(roles.status == 200)
        let before = try w.snapshot()
        P.expectProblem(try w.resubmit(3), .forbidden)
        #expect(try w.snapshot() == before)
        // The role back: the same resubmission succeeds once.
        #expect(try w.f.client.put("/v1/orgs/\(w.f.orgId)/users/\(w.f.collectorId)/roles", token: w.f.adminToken, ["roles": ["collector"]]).status == 200)
        #expect(try w.resubmit(3).status == 200)
    }

    @Test func aRetriedCreateUserWithItsKeyMakesOneUser() throws {
        let f = try Fixture()
        let path = "/v1/orgs/\(f.orgId)/users"
        let users = try f.server.count("SELECT COUNT(*) AS n FROM users")
        let first = try f.client.post(path, token: f.adminToken, ["name": "Kim", "roles": ["collector"]], headers: ["Idempotency-Key": "new-user-0001"])
        #expect(first.status == 201)
        let again = try f.client.post(path, token: f.adminToken, ["name": "Kim", "roles": ["collector"]], headers: ["Idempotency-Key": "\"new-user-0001\""])
        #expect(again.status == 200)
        #expect(again.header("idempotent-replayed") == "true")
        #expect(again.json?["userId"] == first.json?["userId"])
        #expect(again.json?["tokenId"] == first.json?["tokenId"])
        // The token is shown once: never stored in the clear, so its replay leaves it out.
        #expect(again.json?["token"] == nil)
        #expect(again.json?["tokenOmitted"]?.boolValue == true)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM users") == users + 1)
        let token = try #require(first.json?["token"]?.stringValue)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE CAST(body AS TEXT) LIKE ?", [.text("%\(token)%")]) == 0)
        // Another body under the key: 1004, nothing written.
        P.expectProblem(try f.client.post(path, token: f.adminToken, ["name": "Lee", "roles": ["collector"]], headers: ["Idempotency-Key": "new-user-0001"]),
                        .idempotencyConflict)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM users") == users + 1)
        // A refused request leaves its key free.
        P.expectProblem(try f.client.post(path, token: f.adminToken, ["name": "", "roles": ["collector"]], headers: ["Idempotency-Key": "new-user-0002"]),
                        .validationFailed)
        #expect(try f.client.post(path, token: f.adminToken, ["name": "Mo", "roles": ["collector"]], headers: ["Idempotency-Key": "new-user-0002"]).status == 201)
    }

    @Test func keysOnOperatorAndOtherUserWrites() throws {
        let f = try Fixture()
        let op = f.server.operatorToken
        let orgs = try f.server.count("SELECT COUNT(*) AS n FROM orgs")
        let body: JSONValue = ["name": "Second team", "expiresAt": "2031-01-01T00:00:00Z"]
        let org1 = try f.client.post("/v1/orgs", token: op, body, headers: ["Idempotency-Key": "new-org-0001"])
        let org2 = try f.client.post("/v1/orgs", token: op, body, headers: ["Idempotency-Key": "new-org-0001"])
        #expect(org1.status == 201)
        #expect(org2.status == 200)
        #expect(org2.json == org1.json)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM orgs") == orgs + 1)

        let renew: JSONValue = ["expiresAt": "2032-01-01T00:00:00Z"]
        let sub1 = try f.client.request("PUT", "/v1/orgs/\(f.orgId)/subscription", token: op, json: renew, headers: ["Idempotency-Key": "renew-0001"])
        let sub2 = try f.client.request("PUT", "/v1/orgs/\(f.orgId)/subscription", token: op, json: renew, headers: ["Idempotency-Key": "renew-0001"])
        #expect(sub1.status == 200)
        #expect(sub2.header("idempotent-replayed") == "true")
        #expect(sub2.json == sub1.json)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'subscription.set' AND target_id = ?", [.text(f.orgId)]) == 1)

        let made = try f.client.post("/v1/orgs/\(f.orgId)/users/\(f.collectorId)/tokens", token: f.adminToken, [:], headers: ["Idempotency-Key": "token-0001"])
        let again = try f.client.post("/v1/orgs/\(f.orgId)/users/\(f.collectorId)/tokens", token: f.adminToken, [:], headers: ["Idempotency-Key": "token-0001"])
        #expect(made.status == 201)
        #expect(again.status == 200)
        #expect(again.json?["tokenId"] == made.json?["tokenId"])
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM tokens WHERE user_id = ?", [.text(f.collectorId)]) == 2)

        let tokenId = try #require(made.json?["tokenId"]?.stringValue)
        let revokePath = "/v1/orgs/\(f.orgId)/users/\(f.collectorId)/tokens/\(tokenId)"
        let r1 = try f.client.request("DELETE", revokePath, token: f.adminToken, headers: ["Idempotency-Key": "revoke-0001"])
        let r2 = try f.client.request("DELETE", revokePath, token: f.adminToken, headers: ["Idempotency-Key": "revoke-0001"])
        #expect(r1.status == 204)
        #expect(r2.status == 204)
        #expect(r2.header("idempotent-replayed") == "true")
    }

    /// Revoking a revoked token is a no-op: 204, and no second audit entry.
    @Test func revokingTwiceWritesOneAuditEntry() throws {
        let f = try Fixture()
        let made = try f.client.post("/v1/orgs/\(f.orgId)/users/\(f.collectorId)/tokens", token: f.adminToken, [:])
        let tokenId = try #require(made.json?["tokenId"]?.stringValue)
        let path = "/v1/orgs/\(f.orgId)/users/\(f.collectorId)/tokens/\(tokenId)"
        #expect(try f.client.delete(path, token: f.adminToken).status == 204)
        #expect(try f.client.delete(path, token: f.adminToken).status == 204)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'token.revoke' AND target_id = ?", [.text(tokenId)]) == 1)
        #expect(try TestEngine.check(dataDir: f.server.dataDir).ok)
    }
}

extension JSONValue {
    /// A definition with another title (a new version's content).
    func with(title: String) -> JSONValue {
        guard case .object(var o) = self else { return self }
        o["title"] = .string(title)
        return .object(o)
    }
}
