import Foundation
import Synchronization
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

    /// Runs a submission through the JSON door to its end, the refusal thrown.
    static func submit(_ w: World, token: String?, _ document: [UInt8], key: String? = nil) throws -> SubmissionOutcome {
        let outcome = outcome(w, JSONSubmissionDoor(bearerToken: token, idempotencyKey: key, body: document))
        if case .refused(let e) = outcome { throw e }
        return outcome
    }

    /// The one outcome of a submission from `door`, waited for.
    static func outcome(_ w: World, _ door: some SubmissionDoor) -> SubmissionOutcome {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<SubmissionOutcome?>(nil)
        w.ops.submissions.submit(orgId: w.org, from: door) { o in
            result.withLock { $0 = o }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 } ?? .refused(TestFailure("no outcome"))
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

    /// A door that is not the JSON API: it resolves its caller itself and hands over a typed
    /// submission, as the OpenRosa door maps an instance onto one.
    struct TypedDoor: SubmissionDoor {
        let caller: Caller
        let submission: Submission
        func caller(in db: ReadContext, operations: Operations) throws -> Caller { caller }
        func arrival(in db: ReadContext, orgId: String, submitter: UserRecord, operations: Operations) throws -> SubmissionArrival {
            .submission(submission, stored: .notLookedUp)
        }
    }

    static func typed(_ w: World, _ caller: Caller, _ csid: String, size: Int = 4) throws -> TypedDoor {
        TypedDoor(caller: caller, submission: try Submission(clientSubmissionId: csid, surveyVersionId: w.version.surveyVersionId,
                                                             contentHash: w.version.contentHash,
                                                             answers: ["size": .number(Double(size)), "source": "well"]))
    }

    static func code(_ o: SubmissionOutcome) -> Int? {
        if case .refused(let e) = o { return (e as? ApiError)?.code.rawValue ?? -1 }
        return nil
    }

    /// The same submission through two doors is one operation: the same checks in the same order,
    /// the same refusals leaving nothing, and exactly once across the doors — the typed door's
    /// resend of what the JSON door stored is its replay, different content under the id is 1004.
    @Test func twoDoorsReachOneOperationWithIdenticalOutcomes() throws {
        let w = try World()
        let collector = Caller.user(w.collector.user, tokenId: w.collector.tokenId)
        let reviewer = Caller.user(w.reviewer.user, tokenId: w.reviewer.tokenId)
        let json = { (token: String, csid: String, size: Int) in
            Self.outcome(w, JSONSubmissionDoor(bearerToken: token, idempotencyKey: nil, body: Self.document(w, csid, size: size)))
        }
        let before = try w.traces()
        // Refusals: role, validation — the same code from either door, nothing stored.
        #expect(Self.code(json(w.reviewer.token, "two-door-0001", 4)) == 1006)
        #expect(Self.code(Self.outcome(w, try Self.typed(w, reviewer, "two-door-0001"))) == 1006)
        #expect(Self.code(json(w.collector.token, "two-door-0001", 500)) == 1002)
        #expect(Self.code(Self.outcome(w, try Self.typed(w, collector, "two-door-0001", size: 500))) == 1002)
        #expect(try w.traces() == before)

        // Accepted through the JSON door; the typed door's same content is its replay.
        guard case .accepted(let stored) = json(w.collector.token, "two-door-0001", 4) else { throw TestFailure("not accepted") }
        guard case .replayed(let again) = Self.outcome(w, try Self.typed(w, collector, "two-door-0001")) else { throw TestFailure("not replayed") }
        #expect(again.responseId == stored.responseId)
        #expect(Self.code(Self.outcome(w, try Self.typed(w, collector, "two-door-0001", size: 5))) == 1004)
        // And the other way round: accepted through the typed door, replayed through the JSON one.
        guard case .accepted(let typedStored) = Self.outcome(w, try Self.typed(w, collector, "two-door-0002")) else { throw TestFailure("not accepted") }
        #expect(typedStored.requestSHA256.isEmpty)
        guard case .replayed(let jsonAgain) = json(w.collector.token, "two-door-0002", 4) else { throw TestFailure("not replayed") }
        #expect(jsonAgain.responseId == typedStored.responseId)
        #expect(Self.code(json(w.collector.token, "two-door-0002", 6)) == 1004)
        #expect(Self.code(Self.outcome(w, try Self.typed(w, collector, "two-door-0002", size: 6))) == 1004)

        // The gate: 1001 from both doors, nothing written, replays still answered.
        w.expire()
        let expired = try w.traces()
        #expect(Self.code(json(w.collector.token, "two-door-0003", 4)) == 1001)
        #expect(Self.code(Self.outcome(w, try Self.typed(w, collector, "two-door-0003"))) == 1001)
        #expect(try w.traces() == expired)
        guard case .replayed = Self.outcome(w, try Self.typed(w, collector, "two-door-0001")) else { throw TestFailure("not replayed") }
    }
}
