import Foundation
import Testing
import SurveyDomain
@testable import SurveyOperations
@testable import SurveyStorage

/// `Submissions.submit` on a real SQLite file, without HTTP: the contract's order of checks, each
/// refusal leaving nothing behind, exactly once, and the gate's 1001 with `expiresAt`.
@Suite struct SubmissionOperationTests {
    static func document(_ w: World, _ csid: String, size: Int = 4) -> [UInt8] {
        CanonicalJSON.encode(["clientSubmissionId": .string(csid), "surveyVersionId": .string(w.version.surveyVersionId),
                              "contentHash": .string(w.version.contentHash), "answers": ["size": .number(Double(size)), "source": "well"]])
    }

    /// Runs a submission to its end: an immediate replay, or the queued write's result.
    static func submit(_ w: World, token: String?, _ document: [UInt8], key: String? = nil) throws -> SubmissionOutcome {
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox()
        let command = SubmitResponse(orgId: w.org, bearerToken: token, idempotencyKey: key, document: document)
        if let now = try w.ops.submissions.submit(command, whenWritten: { r in result.set(r); done.signal() }) { return now }
        done.wait()
        return try result.get()
    }

    final class ResultBox: @unchecked Sendable {
        // @unchecked: written once before the semaphore is signalled, read after the wait.
        private var value: Result<SubmissionOutcome, any Error>?
        func set(_ r: Result<SubmissionOutcome, any Error>) { value = r }
        func get() throws -> SubmissionOutcome { try value!.get() }
    }

    @Test func theOrderOfChecksAndExactlyOnce() throws {
        let w = try World()
        let doc = Self.document(w, "ops-sub-0001")
        let before = try w.traces()
        #expect(refusal { try Self.submit(w, token: nil, doc) } == 1007)
        #expect(refusal { try Self.submit(w, token: "sdt_not_a_token", doc) } == 1007)
        #expect(refusal { try Self.submit(w, token: w.stranger.token, doc) } == 1005)
        #expect(refusal { try Self.submit(w, token: w.reviewer.token, doc) } == 1006)
        #expect(refusal { try Self.submit(w, token: w.collector.token, doc, key: "short") } == 1032)
        #expect(refusal { try Self.submit(w, token: w.collector.token, Array("{".utf8)) } == 1031)
        #expect(refusal { try Self.submit(w, token: w.collector.token, Self.document(w, "bad id!")) } == 1032)
        #expect(refusal { try Self.submit(w, token: w.collector.token, Self.document(w, "ops-sub-0001", size: 500)) } == 1002)
        #expect(try w.traces() == before)

        guard case .accepted(let stored) = try Self.submit(w, token: w.collector.token, doc) else { throw TestFailure("not accepted") }
        #expect(stored.submitter == w.collector.user.userId && stored.reviewState.rawValue == "submitted" && stored.revision == 1)
        let afterOne = try w.traces()
        // The same bytes, and a re-encoding of the same content: the stored response, nothing new.
        guard case .replayed(let again) = try Self.submit(w, token: w.collector.token, doc) else { throw TestFailure("not replayed") }
        #expect(again.responseId == stored.responseId)
        let reencoded = Array(String(decoding: doc, as: UTF8.self).replacingOccurrences(of: ",", with: ", ").utf8)
        guard case .replayed(let third) = try Self.submit(w, token: w.collector.token, reencoded) else { throw TestFailure("not replayed") }
        #expect(third.responseId == stored.responseId)
        // Different content under the same id: 1004, revealing nothing.
        #expect(refusal { try Self.submit(w, token: w.collector.token, Self.document(w, "ops-sub-0001", size: 5)) } == 1004)
        #expect(try w.traces() == afterOne)
    }

    @Test func anExpiredSubscriptionRefusesNewWorkAndStillAnswersReplays() throws {
        let w = try World()
        let doc = Self.document(w, "ops-sub-0002")
        guard case .accepted = try Self.submit(w, token: w.collector.token, doc) else { throw TestFailure("not accepted") }
        w.expire()
        let before = try w.traces()
        // Validation is reported as itself, never as 1001 …
        #expect(refusal { try Self.submit(w, token: w.collector.token, Self.document(w, "ops-sub-0003", size: 500)) } == 1002)
        // … a valid new submission is the gate's refusal, with the moment it expired …
        let e = refusalError { try Self.submit(w, token: w.collector.token, Self.document(w, "ops-sub-0003")) }
        #expect(e?.code == .subscriptionExpired)
        #expect(e?.extra["expiresAt"]?.stringValue != nil)
        #expect(try w.traces() == before)
        // … and the work already accepted is still answered.
        guard case .replayed = try Self.submit(w, token: w.collector.token, doc) else { throw TestFailure("not replayed") }
    }
}
