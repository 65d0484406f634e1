import Foundation
import Testing
import SurveyDomain
@testable import SurveyStorage

/// Responses keyed by clientSubmissionId, exactly once, refused cleanly while expired.
@Suite struct ResponseTests {
    typealias P = FoundationTests

    static func submission(_ id: String, _ v: (surveyId: String, versionId: String, contentHash: String),
                           answers: JSONValue = ["size": 4, "source": "well"], extra: [String: JSONValue] = [:]) -> JSONValue {
        var o: [String: JSONValue] = ["clientSubmissionId": .string(id), "surveyVersionId": .string(v.versionId),
                                      "contentHash": .string(v.contentHash), "answers": answers]
        for (k, val) in extra { o[k] = val }
        return .object(o)
    }

    func responseCount(_ f: Fixture) throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM responses") }

    @Test func theVerifiedSequence() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        // 1. the version is downloaded while active
        let downloaded = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(v.versionId)", token: f.collectorToken)
        #expect(downloaded.status == 200)
        #expect(downloaded.json?["contentHash"]?.stringValue == v.contentHash)
        // 2. responses captured offline: the exact bytes the app queued
        let queued = (1...3).map { i in
            CanonicalJSON.encode(Self.submission("c0ffee00-0000-4000-8000-00000000000\(i)", v,
                                                  extra: ["capturedAt": .string(Timestamp.format(Timestamp.nowMillis() - 3_600_000))]))
        }
        let auditBefore = try f.server.count("SELECT COUNT(*) AS n FROM audit")
        // 3. the subscription expires; 4–5. the sync is refused with 1001, retryable
        try f.expire()
        for body in queued {
            let r = try f.client.request("POST", "/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, body: body,
                                         headers: ["Content-Type": "application/json"])
            P.expectProblem(r, .subscriptionExpired)
            #expect(r.json?["retryable"]?.boolValue == true)
        }
        // 6. nothing was created: no response, no audit entry (beyond the expiry itself), no key consumed
        #expect(try responseCount(f) == 0)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit") == auditBefore + 1)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action LIKE 'response%'") == 0)
        // 7. renewal; 8–9. the identical payload is accepted exactly once
        try f.renew()
        var ids: [String] = []
        for body in queued {
            let r = try f.client.request("POST", "/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, body: body,
                                         headers: ["Content-Type": "application/json"])
            #expect(r.status == 201, "\(r.text)")
            #expect(r.json?["status"]?.stringValue == "accepted")
            #expect(r.json?["reviewState"]?.stringValue == "none")
            #expect(r.json?["revision"]?.intValue == 1)
            let id = try #require(r.json?["responseId"]?.stringValue)
            #expect(r.header("location") == "/v1/orgs/\(f.orgId)/responses/\(id)")
            ids.append(id)
        }
        // 10. every further retry → 200, same responseId, same receipt
        for (i, body) in queued.enumerated() {
            for _ in 0..<3 {
                let r = try f.client.request("POST", "/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, body: body,
                                             headers: ["Content-Type": "application/json"])
                #expect(r.status == 200)
                #expect(r.header("idempotent-replayed") == "true")
                #expect(r.json?["responseId"]?.stringValue == ids[i])
            }
        }
        #expect(try responseCount(f) == 3)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'response.accept'") == 3)
        // capturedAt is kept as information; receivedAt is server time.
        let stored = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(ids[0])", token: f.collectorToken)
        #expect(stored.json?["capturedAt"]?.stringValue != nil)
        #expect(stored.json?["answers"] == ["size": 4, "source": "well"])
        let metrics = MetricsText.withoutProcess(try f.client.get("/metrics", token: f.server.operatorToken).text)
        #expect(metrics.contains("surveyd_responses_accepted_total 3"))
        #expect(metrics.contains("surveyd_responses_replayed_total 9"))
        #expect(metrics.contains("surveyd_subscription_refusals_total 3"))
        #expect(metrics.contains("surveyd_sync_age_seconds_count 3"))
        // The writer's own counters: the 3 acceptances (and the fixture's writes) went through its
        // group commits, never more commits than jobs.
        func value(_ name: String) -> Int? {
            metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
        }
        let commits = try #require(value("surveyd_writer_commits_total"))
        let jobs = try #require(value("surveyd_writer_jobs_total"))
        #expect(commits >= 1 && jobs >= 3 + 1 && commits <= jobs)
    }

    @Test func reEncodedIsReplayDifferentIsConflict() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        let id = "3f2a6c1e-8b7d-4e2a-9c1b-2d3e4f5a6b7c"
        let first = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, Self.submission(id, v))
        #expect(first.status == 201)
        let responseId = try #require(first.json?["responseId"]?.stringValue)
        // Same content, other key order, whitespace and number spelling.
        let reencoded = """
        { "answers" : { "source":"well", "size" : 4.0 },
          "contentHash":"\(v.contentHash)", "surveyVersionId" : "\(v.versionId)",
          "clientSubmissionId":"\(id)" }
        """
        let replay = try f.client.request("POST", "/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                          body: Array(reencoded.utf8), headers: ["Content-Type": "application/json"])
        #expect(replay.status == 200)
        #expect(replay.header("idempotent-replayed") == "true")
        #expect(replay.json?["responseId"]?.stringValue == responseId)
        // Different answers under the same id.
        let different = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                          Self.submission(id, v, answers: ["size": 5, "source": "well"]))
        P.expectProblem(different, .idempotencyConflict)
        // Another collector with the same id: 1004, and nothing of the stored response in the body.
        let other = try f.client.post("/v1/orgs/\(f.orgId)/users", token: f.adminToken, ["name": "Other", "roles": ["collector"]])
        let otherToken = try #require(other.json?["token"]?.stringValue)
        let foreign = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: otherToken, Self.submission(id, v))
        P.expectProblem(foreign, .idempotencyConflict)
        #expect(!foreign.text.contains(responseId))
        #expect(!foreign.text.contains("well"))
        // A replay while expired is still answered.
        try f.expire()
        let expiredReplay = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, Self.submission(id, v))
        #expect(expiredReplay.status == 200)
        #expect(expiredReplay.json?["responseId"]?.stringValue == responseId)
        #expect(try responseCount(f) == 1)
    }

    @Test func validationIsReportedAsItselfNeverAs1001() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        for expired in [false, true] {
            if expired { try f.expire() }
            // Wrong contentHash → 1003.
            var bad = Self.submission("aaaaaaaa-0001", v).objectValue!
            bad["contentHash"] = .string("sha256:" + String(repeating: "0", count: 64))
            P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, .object(bad)), .surveyVersionMismatch)
            // Each answer rule → 1002 naming the path.
            let cases: [(JSONValue, String)] = [
                (["source": "well"], "answers.size"),                      // required missing
                (["size": "four"], "answers.size"),                        // wrong type
                (["size": 4.5], "answers.size"),                           // integer expected
                (["size": 51], "answers.size"),                            // over maximum
                (["size": 0], "answers.size"),                             // under minimum
                (["size": 4, "source": "lake"], "answers.source"),         // not among choices
                (["size": 4, "notes": .string(String(repeating: "x", count: 21))], "answers.notes"), // too long
                (["size": 4, "colour": "red"], "answers.colour"),          // unknown question
                (["size": 4, "photo": "not-an-object"], "answers.photo"),  // file answer shape
                ("not an object", "answers"),
            ]
            for (answers, path) in cases {
                let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, Self.submission("aaaaaaaa-0002", v, answers: answers))
                P.expectProblem(r, .validationFailed)
                let paths = r.json?["errors"]?.arrayValue?.compactMap { $0["path"]?.stringValue } ?? []
                #expect(paths.contains(path), "\(answers) → \(r.text)")
            }
            // capturedAt that is not a date-time.
            let badTime = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                            Self.submission("aaaaaaaa-0003", v, extra: ["capturedAt": "yesterday"]))
            P.expectProblem(badTime, .validationFailed)
            // Identifiers out of format → 1032.
            for badId in ["short", String(repeating: "a", count: 129), "has space 123", "slash/../../etc", "ünïcode-123"] {
                P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, Self.submission(badId, v)), .invalidIdentifier)
            }
            // Envelope fields missing or of the wrong type → 1031.
            P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                              ["clientSubmissionId": "aaaaaaaa-0004", "surveyVersionId": .string(v.versionId)]), .malformedRequest)
            P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                              ["clientSubmissionId": 12345678, "surveyVersionId": .string(v.versionId), "contentHash": "x", "answers": [:]]), .malformedRequest)
            // A file answer citing no completed upload → 1014.
            P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                              Self.submission("aaaaaaaa-0005", v, answers: ["size": 4, "photo": ["clientUploadId": "upload-0001"]])),
                            .attachmentNotUploaded)
        }
        #expect(try responseCount(f) == 0)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action LIKE 'response%'") == 0)
    }

    @Test func olderVersionsKeepAcceptingAndOtherOrgsVersionsAreNotFound() throws {
        let f = try Fixture()
        let v1 = try f.publishSurvey()
        var def2 = Fixture.definition.objectValue!
        def2["title"] = "Household v2"
        let v2r = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(v1.surveyId)/versions", token: f.adminToken, ["definition": .object(def2)])
        #expect(v2r.status == 201)
        #expect(v2r.json?["number"]?.intValue == 2)
        #expect(v2r.json?["contentHash"]?.stringValue != v1.contentHash)
        let late = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, Self.submission("late-sync-0001", v1))
        #expect(late.status == 201)
        #expect(late.json?["surveyVersionId"]?.stringValue == v1.versionId)

        // Another organization's version id and a nonexistent one: the same 404 body.
        let other = try Fixture(server: f.server)
        let foreignVersion = try other.publishSurvey()
        let foreign = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, Self.submission("foreign-0001", foreignVersion))
        let missing = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                        Self.submission("foreign-0002", (v1.surveyId, "sv_does-not-exist", foreignVersion.contentHash)))
        P.expectProblem(foreign, .notFound)
        P.expectProblem(missing, .notFound)
        #expect(foreign.body == missing.body)
        #expect(try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(foreignVersion.versionId)", token: f.collectorToken).body
                == (try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/sv_nope", token: f.collectorToken)).body)
        #expect(try responseCount(f) == 1)
    }

    @Test func orderOfChecks() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        let other = try Fixture(server: f.server)
        try f.expire()
        let invalid = Self.submission("order-0001", v, answers: ["size": "x"])
        // 1. authentication comes first, whatever else is wrong.
        P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: nil, invalid), .unauthenticated)
        // 2. tenancy: another organization's member gets 404 even while this one is expired.
        P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: other.collectorToken, invalid), .notFound)
        // 2. role: a reviewer may not submit (1006), before validation and the gate.
        P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.reviewerToken, invalid), .forbidden)
        // 4. validation before the gate.
        P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, invalid), .validationFailed)
        // 5. the gate last.
        P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, Self.submission("order-0001", v)), .subscriptionExpired)
        #expect(try responseCount(f) == 0)
    }

    /// A same-bytes replay is recognised before the body is parsed, from an id found by a scan;
    /// the stored request's SHA-256 decides, so an id the scan finds elsewhere in the body never
    /// turns a new submission into a replay, nor a replay into a new row.
    @Test func anIdElsewhereInTheBodyNeverDecidesAReplay() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        let stored = "scan-stored-0001"
        let first = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, Self.submission(stored, v))
        #expect(first.status == 201)
        let storedId = try #require(first.json?["responseId"]?.stringValue)
        // The stored id comes first in the bytes, inside another member; the submission's own is new.
        let decoy = """
        {"note":{"clientSubmissionId":"\(stored)"},"clientSubmissionId":"scan-new-0002",\
        "surveyVersionId":"\(v.versionId)","contentHash":"\(v.contentHash)","answers":{"size":4,"source":"well"}}
        """
        func post(_ text: String) throws -> Reply {
            try f.client.request("POST", "/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, body: Array(text.utf8),
                                 headers: ["Content-Type": "application/json"])
        }
        let created = try post(decoy)
        #expect(created.status == 201)
        #expect(created.json?["clientSubmissionId"]?.stringValue == "scan-new-0002")
        let newId = try #require(created.json?["responseId"]?.stringValue)
        #expect(newId != storedId)
        // The same bytes again: a replay of the new one, not of the one the scan finds.
        let again = try post(decoy)
        #expect(again.status == 200)
        #expect(again.header("idempotent-replayed") == "true")
        #expect(again.json?["responseId"]?.stringValue == newId)
        // The stored submission's exact bytes from another collector: 1004, not its receipt.
        let other = try f.client.post("/v1/orgs/\(f.orgId)/users", token: f.adminToken, ["name": "Other", "roles": ["collector"]])
        let otherToken = try #require(other.json?["token"]?.stringValue)
        let foreign = try f.client.request("POST", "/v1/orgs/\(f.orgId)/responses", token: otherToken,
                                           body: CanonicalJSON.encode(Self.submission(stored, v)), headers: ["Content-Type": "application/json"])
        P.expectProblem(foreign, .idempotencyConflict)
        #expect(!foreign.text.contains(storedId))
        #expect(try responseCount(f) == 2)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'response.accept'") == 2)
    }

    @Test func fiftyConcurrentIdenticalSubmissionsMakeOneRow() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        let body = CanonicalJSON.encode(Self.submission("concurrent-same-0001", v))
        let results = ConcurrentResults()
        DispatchQueue.concurrentPerform(iterations: 50) { _ in
            let r = try? f.client.request("POST", "/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, body: body,
                                          headers: ["Content-Type": "application/json"])
            results.add(r)
        }
        let replies = results.all
        #expect(replies.count == 50)
        #expect(replies.filter { $0.status == 201 }.count == 1)
        #expect(replies.filter { $0.status == 200 }.count == 49)
        #expect(Set(replies.compactMap { $0.json?["responseId"]?.stringValue }).count == 1)
        #expect(try responseCount(f) == 1)
    }

    @Test func fiftyConcurrentDistinctSubmissionsMakeFiftyRows() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        let results = ConcurrentResults()
        DispatchQueue.concurrentPerform(iterations: 50) { i in
            let r = try? f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, Self.submission("distinct-\(1000 + i)", v))
            results.add(r)
        }
        #expect(results.all.filter { $0.status == 201 }.count == 50)
        #expect(Set(results.all.compactMap { $0.json?["responseId"]?.stringValue }).count == 50)
        #expect(try responseCount(f) == 50)
    }

    @Test func readingByIdByClientIdAndListing() throws {
        let f = try Fixture()
        let v = try f.publishSurvey(reviewRequired: true)
        var ids: [String] = []
        for i in 0..<5 {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, Self.submission("list-000\(i)", v))
            #expect(r.json?["reviewState"]?.stringValue == "submitted")
            ids.append(try #require(r.json?["responseId"]?.stringValue))
        }
        let other = try f.client.post("/v1/orgs/\(f.orgId)/users", token: f.adminToken, ["name": "Other", "roles": ["collector"]])
        let otherToken = try #require(other.json?["token"]?.stringValue)
        // By id: the owner and reviewers, not another collector.
        #expect(try f.client.get("/v1/orgs/\(f.orgId)/responses/\(ids[0])", token: f.collectorToken).status == 200)
        #expect(try f.client.get("/v1/orgs/\(f.orgId)/responses/\(ids[0])", token: f.reviewerToken).status == 200)
        P.expectProblem(try f.client.get("/v1/orgs/\(f.orgId)/responses/\(ids[0])", token: otherToken), .notFound)
        // By clientSubmissionId: the caller's own only.
        let mine = try f.client.get("/v1/orgs/\(f.orgId)/responses?clientSubmissionId=list-0003", token: f.collectorToken)
        #expect(mine.json?["responseId"]?.stringValue == ids[3])
        P.expectProblem(try f.client.get("/v1/orgs/\(f.orgId)/responses?clientSubmissionId=list-0003", token: otherToken), .notFound)
        P.expectProblem(try f.client.get("/v1/orgs/\(f.orgId)/responses?clientSubmissionId=never-sent-1", token: f.collectorToken), .notFound)
        // Listing with a cursor, in a stable order, while expired.
        try f.expire()
        var seen: [String] = []
        var after: String? = nil
        repeat {
            let page = try f.client.get("/v1/orgs/\(f.orgId)/responses?reviewState=submitted&limit=2" + (after.map { "&after=\($0)" } ?? ""), token: f.reviewerToken)
            #expect(page.status == 200)
            seen += page.json?["items"]?.arrayValue?.compactMap { $0["responseId"]?.stringValue } ?? []
            after = page.json?["nextCursor"]?.stringValue
        } while after != nil
        #expect(seen == ids)
        #expect(try f.client.get("/v1/orgs/\(f.orgId)/responses", token: otherToken).json?["items"]?.arrayValue?.count == 0)
        #expect(try f.client.get("/v1/orgs/\(f.orgId)/responses?reviewState=approved", token: f.reviewerToken).json?["items"]?.arrayValue?.count == 0)
        P.expectProblem(try f.client.get("/v1/orgs/\(f.orgId)/responses?reviewState=bogus", token: f.reviewerToken), .validationFailed)
    }
}

/// Collects replies from concurrent threads.
final class ConcurrentResults: @unchecked Sendable {
    // @unchecked: `replies` is guarded by `lock`.
    private let lock = NSLock()
    private var replies: [Reply] = []
    func add(_ r: Reply?) { lock.lock(); if let r { replies.append(r) }; lock.unlock() }
    var all: [Reply] { lock.lock(); defer { lock.unlock() }; return replies }
}
