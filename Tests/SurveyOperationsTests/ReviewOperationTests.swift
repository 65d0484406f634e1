import Foundation
import Testing
import SurveyDomain
@testable import SurveyOperations
@testable import SurveyStorage

/// `Reviews` on a real SQLite file, without HTTP: order of checks, nothing left by a refusal,
/// the revision guard, a keyed step kept and replayed.
@Suite struct ReviewOperationTests {
    static func accepted(_ w: World, _ csid: String) throws -> ResponseRecord {
        guard case .accepted(let r) = try SubmissionOperationTests.submit(w, token: w.collector.token, SubmissionOperationTests.document(w, csid))
        else { throw TestFailure("not accepted") }
        return r
    }

    static func key(_ raw: String, _ digest: String = "sha256:step") -> IdempotencyKey<ResponseRecord> {
        IdempotencyKey(raw: raw, method: "POST", route: "review", digest: digest) { r in
            KeptAnswer(status: 200, location: nil, body: Array("revision \(r.revision)".utf8))
        }
    }

    @Test func theOrderOfChecksAndTheRevisionGuard() throws {
        let w = try World()
        let r = try Self.accepted(w, "ops-rev-0001")
        let reviews = w.ops.reviews
        let start = ReviewRequest(action: "startReview", expectedRevision: 1, comment: nil)
        let before = try w.traces()
        #expect(refusal { try reviews.review(orgId: w.org, responseId: r.responseId, by: w.stranger.user) { start } } == 1005)
        #expect(refusal { try reviews.review(orgId: w.org, responseId: "rsp_nothing", by: w.reviewer.user) { start } } == 1005)
        #expect(refusal { try reviews.review(orgId: w.org, responseId: r.responseId, by: w.collector.user) { start } } == 1006)
        #expect(refusal { try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user, key: Self.key("bad")) { start } } == 1032)
        #expect(refusal { try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user) { throw ApiError.malformed("x") } } == 1031)
        #expect(refusal { try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user) {
            ReviewRequest(action: "resubmit", expectedRevision: 1, comment: nil) } } == 1002)
        #expect(refusal { try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user) {
            ReviewRequest(action: "reject", expectedRevision: 1, comment: " ") } } == 1002)
        #expect(refusal { try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user) {
            ReviewRequest(action: "startReview", expectedRevision: 7, comment: nil) } } == 1021)
        #expect(refusal { try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user) {
            ReviewRequest(action: "approve", expectedRevision: 1, comment: nil) } } == 1020)
        #expect(try w.traces() == before)

        let moved = try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user) { start }.written
        #expect(moved.reviewState.rawValue == "in_review" && moved.revision == 2)
        // The same step on the revision it was taken from is now stale, and says where it is.
        let stale = refusalError { try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user) { start } }
        #expect(stale?.code == .staleRevision && stale?.extra["revision"]?.intValue == 2)
        let trail = try reviews.history(orgId: w.org, responseId: r.responseId, by: w.collector.user)
        #expect(trail.map(\.action) == ["response.accept", "review.startReview"])
    }

    @Test func aKeyedStepIsKeptReplayedAndRefusedWhileExpired() throws {
        let w = try World()
        let r = try Self.accepted(w, "ops-rev-0002")
        let reviews = w.ops.reviews
        let start = ReviewRequest(action: "startReview", expectedRevision: 1, comment: nil)
        #expect(try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user, key: Self.key("step-key-0001")) { start }
            .written.revision == 2)
        let afterOne = try w.traces()
        // A retry: the kept answer, the request not even decoded; another request under the key: 1004.
        let retry = try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user,
                                       key: Self.key("step-key-0001")) { throw TestFailure("decoded") }
        guard case .replayed(let kept) = retry else { throw TestFailure("not replayed") }
        #expect(kept.body == Array("revision 2".utf8))
        #expect(refusal { try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user,
                                             key: Self.key("step-key-0001", "sha256:other")) { start } } == 1004)
        #expect(try w.traces() == afterOne)

        w.expire()
        let e = refusalError { try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user, key: Self.key("step-key-0002")) {
            ReviewRequest(action: "approve", expectedRevision: 2, comment: nil) } }
        #expect(e?.code == .subscriptionExpired && e?.extra["expiresAt"]?.stringValue != nil)
        #expect(try w.traces() == afterOne)
        #expect(try w.database.read { try $0.response(orgId: w.org, responseId: r.responseId) }?.revision == 2)
    }
}
