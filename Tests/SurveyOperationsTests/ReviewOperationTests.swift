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

    /// A response returned for correction, at revision 3.
    static func returned(_ w: World, _ csid: String) throws -> ResponseRecord {
        let r = try accepted(w, csid)
        let reviews = w.ops.reviews
        _ = try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user) {
            ReviewRequest(action: "startReview", expectedRevision: 1, comment: nil) }.written
        return try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user) {
            ReviewRequest(action: "returnForCorrection", expectedRevision: 2, comment: "Count the children too.") }.written
    }

    /// A correction names the version it was made on: one this organization has, of the
    /// response's own survey, with the hash the collector's copy has. Each refusal leaves the
    /// response as the reviewer returned it.
    @Test func aResubmissionIsRefusedForAVersionItCannotTake() throws {
        let w = try World()
        let r = try Self.returned(w, "ops-rev-0003")
        let otherSurvey = try w.ops.surveys.create(orgId: w.org, by: w.admin.user) { .init(title: "Latrines", reviewRequired: false) }.written
        let otherVersion = try w.ops.surveys.publish(orgId: w.org, surveyId: otherSurvey.surveyId, by: w.admin.user) {
            FormSources.Published(definition: World.definition) }.written
        let reviews = w.ops.reviews
        func resubmit(_ version: String, _ hash: String) throws -> KeyedOutcome<ResponseRecord> {
            try reviews.resubmit(orgId: w.org, responseId: r.responseId, by: w.collector.user) {
                Resubmission(expectedRevision: 3, surveyVersionId: version, contentHash: hash, answers: ["size": 6, "source": "well"])
            }
        }
        let before = try w.traces()

        #expect(refusal { try resubmit("sv_nothing", w.version.contentHash) } == 1005)
        let otherSurveys = refusalError { try resubmit(otherVersion.surveyVersionId, otherVersion.contentHash) }
        #expect(otherSurveys?.code == .validationFailed)
        #expect(otherSurveys?.detail == "The version is of another survey.")
        #expect(otherSurveys?.errors == [FieldError(path: "surveyVersionId", message: "not a version of survey \(w.survey)")])
        let mismatch = refusalError { try resubmit(w.version.surveyVersionId, "sha256:0000") }
        #expect(mismatch?.code == .surveyVersionMismatch)
        #expect(mismatch?.detail == "contentHash does not match survey version \(w.version.surveyVersionId).")
        #expect(try w.traces() == before)
        let unchanged = try #require(try w.database.read { try $0.response(orgId: w.org, responseId: r.responseId) })
        #expect(unchanged.reviewState == .returned && unchanged.revision == 3)

        // On its own version the same correction is taken.
        let corrected = try resubmit(w.version.surveyVersionId, w.version.contentHash).written
        #expect(corrected.reviewState == .submitted && corrected.revision == 4)
    }

    /// Two responses for one field task: approving the first completes the task, so the second
    /// cannot be approved (1022) and stays where it was.
    @Test func approvingAResponseWhoseTaskIsAlreadyCompletedIsRefused() throws {
        let w = try World()
        let task = try w.ops.tasks.create(orgId: w.org, by: w.admin.user) {
            .init(title: "Visit block 4", surveyId: w.survey, assigneeUserId: w.collector.user.userId, notes: nil, dueAt: nil) }.written
        func submitForTask(_ csid: String) throws -> ResponseRecord {
            let document = CanonicalJSON.encode(["clientSubmissionId": .string(csid), "surveyVersionId": .string(w.version.surveyVersionId),
                                                 "contentHash": .string(w.version.contentHash), "fieldTaskId": .string(task.taskId),
                                                 "answers": ["size": 3, "source": "river"]])
            guard case .accepted(let r) = try SubmissionOperationTests.submit(w, token: w.collector.token, document) else {
                throw TestFailure("not accepted")
            }
            return r
        }
        let first = try submitForTask("ops-task-0001"), second = try submitForTask("ops-task-0002")
        let reviews = w.ops.reviews
        for r in [first, second] {
            _ = try reviews.review(orgId: w.org, responseId: r.responseId, by: w.reviewer.user) {
                ReviewRequest(action: "startReview", expectedRevision: 1, comment: nil) }.written
        }
        let approve = ReviewRequest(action: "approve", expectedRevision: 2, comment: nil)
        #expect(try reviews.review(orgId: w.org, responseId: first.responseId, by: w.reviewer.user) { approve }.written.reviewState == .approved)
        let completed = try #require(try w.database.read { try $0.task(orgId: w.org, taskId: task.taskId) })
        #expect(completed.state == .completed && completed.responseId == first.responseId)
        let before = try w.traces()

        let e = refusalError { try reviews.review(orgId: w.org, responseId: second.responseId, by: w.reviewer.user) { approve } }
        #expect(e?.code == .taskAlreadyCompleted)
        #expect(e?.detail == "The field task \(task.taskId) is already completed.")
        #expect(try w.traces() == before)
        let still = try #require(try w.database.read { try $0.response(orgId: w.org, responseId: second.responseId) })
        #expect(still.reviewState == .inReview && still.revision == 2)
        #expect(try w.database.read { try $0.task(orgId: w.org, taskId: task.taskId) }?.responseId == first.responseId)
        // The task is checked before the subscription (the contract's order): expired, it is still 1022.
        w.expire()
        #expect(refusal { try reviews.review(orgId: w.org, responseId: second.responseId, by: w.reviewer.user) { approve } } == 1022)
        #expect(try w.traces() == before)
    }
}
