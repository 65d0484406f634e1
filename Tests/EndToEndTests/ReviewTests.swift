import Foundation
import Testing
import SurveyDomain
import SurveyServer
@testable import SurveyStorage

/// Field tasks, the review workflow, Idempotency-Key, history and the changes feed.
@Suite struct ReviewTests {
    typealias P = FoundationTests

    struct World {
        let f: Fixture
        let v: (surveyId: String, versionId: String, contentHash: String)
        let taskId: String
        let responseId: String

        init(configure: (inout App.Configuration) -> Void = { _ in }) throws {
            f = try Fixture(server: try TestServer(configure: configure))
            v = try f.publishSurvey(reviewRequired: true)
            let t = try f.client.post("/v1/orgs/\(f.orgId)/tasks", token: f.adminToken,
                                      ["title": "Visit household 12", "surveyId": .string(v.surveyId), "assigneeUserId": .string(f.collectorId),
                                       "dueAt": "2030-01-01T00:00:00Z", "notes": "blue door"])
            guard t.status == 201, let taskId = t.json?["taskId"]?.stringValue else { throw TestFailure("task: \(t.status) \(t.text)") }
            #expect(t.json?["state"]?.stringValue == "open")
            self.taskId = taskId
            let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                      ResponseTests.submission("review-0001", v, extra: ["fieldTaskId": .string(taskId)]))
            guard r.status == 201, let id = r.json?["responseId"]?.stringValue else { throw TestFailure("response: \(r.status) \(r.text)") }
            #expect(r.json?["fieldTaskId"]?.stringValue == taskId)
            responseId = id
        }

        func review(_ action: String, _ expected: Int, comment: String? = nil, token: String? = nil, key: String? = nil) throws -> Reply {
            var body: [String: JSONValue] = ["action": .string(action), "expectedRevision": .number(Double(expected))]
            if let comment { body["comment"] = .string(comment) }
            return try f.client.post("/v1/orgs/\(f.orgId)/responses/\(responseId)/review", token: token ?? f.reviewerToken, .object(body),
                                     headers: key.map { ["Idempotency-Key": $0] } ?? [:])
        }

        func resubmit(_ expected: Int, answers: JSONValue = ["size": 5, "source": "piped"], token: String? = nil) throws -> Reply {
            try f.client.post("/v1/orgs/\(f.orgId)/responses/\(responseId)/resubmit", token: token ?? f.collectorToken,
                              ["expectedRevision": .number(Double(expected)), "surveyVersionId": .string(v.versionId),
                               "contentHash": .string(v.contentHash), "answers": answers])
        }

        /// Everything a refusal must leave untouched, read through the API and the database.
        struct Snapshot: Equatable {
            let state: String?
            let revision: Int?
            let history: Int
            let dbRow: [String]
            let task: [String]
            let audit: Int64
            let keys: Int64
        }

        func snapshot() throws -> Snapshot {
            let r = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)", token: f.reviewerToken)
            let h = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)/history", token: f.reviewerToken)
            let row = try f.server.rows("SELECT review_state, revision, answers FROM responses WHERE response_id = ?", [.text(responseId)])[0]
            let task = try f.server.rows("SELECT state, completed_at, completed_by, response_id FROM tasks WHERE task_id = ?", [.text(taskId)])[0]
            return Snapshot(state: r.json?["reviewState"]?.stringValue, revision: r.json?["revision"]?.intValue,
                            history: h.json?["items"]?.arrayValue?.count ?? -1,
                            dbRow: [try row.string("review_state"), String(try row.int("revision")), try row.string("answers")],
                            task: try task.columns.names.map { "\(try task.value($0))" },
                            audit: try f.server.count("SELECT COUNT(*) AS n FROM audit"),
                            keys: try f.server.count("SELECT COUNT(*) AS n FROM idempotency_keys"))
        }
    }

    @Test func theFullChainCompletesTheTaskAtApproval() throws {
        let w = try World()
        func check(_ r: Reply, state: String, revision: Int, history: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(r.status == 200, "\(r.text)", sourceLocation: sourceLocation)
            #expect(r.json?["reviewState"]?.stringValue == state, sourceLocation: sourceLocation)
            #expect(r.json?["revision"]?.intValue == revision, sourceLocation: sourceLocation)
            let h = try w.f.client.get("/v1/orgs/\(w.f.orgId)/responses/\(w.responseId)/history", token: w.f.collectorToken)
            let items = h.json?["items"]?.arrayValue ?? []
            #expect(items.count == history, sourceLocation: sourceLocation)
            #expect(items.last?["toState"]?.stringValue == state, sourceLocation: sourceLocation)
            #expect(items.last?["revision"]?.intValue == revision, sourceLocation: sourceLocation)
            let task = try w.f.client.get("/v1/orgs/\(w.f.orgId)/tasks/\(w.taskId)", token: w.f.collectorToken)
            #expect(task.json?["state"]?.stringValue == (state == "approved" ? "completed" : "open"), sourceLocation: sourceLocation)
        }
        try check(try w.f.client.get("/v1/orgs/\(w.f.orgId)/responses/\(w.responseId)", token: w.f.collectorToken), state: "submitted", revision: 1, history: 1)
        try check(try w.review("startReview", 1), state: "in_review", revision: 2, history: 2)
        try check(try w.review("returnForCorrection", 2, comment: "size looks wrong"), state: "returned", revision: 3, history: 3)
        try check(try w.resubmit(3), state: "submitted", revision: 4, history: 4)
        try check(try w.review("startReview", 4), state: "in_review", revision: 5, history: 5)
        let approved = try w.review("approve", 5)
        try check(approved, state: "approved", revision: 6, history: 6)
        #expect(approved.json?["answers"] == ["size": 5, "source": "piped"])
        let task = try w.f.client.get("/v1/orgs/\(w.f.orgId)/tasks/\(w.taskId)", token: w.f.adminToken)
        #expect(task.json?["completedBy"]?.stringValue == w.f.collectorId)
        #expect(task.json?["responseId"]?.stringValue == w.responseId)
        let completedAt = try #require(task.json?["completedAt"]?.stringValue.flatMap(Timestamp.parse))
        #expect(abs(completedAt - Timestamp.nowMillis()) < 60_000)
        let history = try w.f.client.get("/v1/orgs/\(w.f.orgId)/responses/\(w.responseId)/history", token: w.f.collectorToken)
        #expect(history.json?["items"]?.arrayValue?[2]["comment"]?.stringValue == "size looks wrong")
        #expect(history.json?["items"]?.arrayValue?.map { $0["action"]?.stringValue ?? "" } ==
                ["response.accept", "review.startReview", "review.returnForCorrection", "response.resubmit", "review.startReview", "review.approve"])
        // In the database: completion written with the approval, every revision audited.
        let row = try w.f.server.rows("SELECT state, completed_at, completed_by, response_id FROM tasks WHERE task_id = ?", [.text(w.taskId)])[0]
        #expect(try row.string("state") == "completed" && row.optionalInt("completed_at") != nil && row.string("completed_by") == w.f.collectorId
                && row.string("response_id") == w.responseId)
        #expect(try w.f.server.count("SELECT COUNT(DISTINCT revision) AS n FROM audit WHERE target_id = ?", [.text(w.responseId)]) == 6)
    }

    @Test func everyRefusalAtEveryStepLeavesEverythingAsItWas() throws {
        let w = try World()
        let other = try Fixture(server: w.f.server)
        // (the steps of the chain, each as: refusals to try first, then the step itself)
        let steps: [(name: String, expected: Int, run: () throws -> Reply)] = [
            ("startReview", 1, { try w.review("startReview", 1) }),
            ("returnForCorrection", 2, { try w.review("returnForCorrection", 2, comment: "fix") }),
            ("resubmit", 3, { try w.resubmit(3) }),
            ("startReview", 4, { try w.review("startReview", 4) }),
            ("approve", 5, { try w.review("approve", 5) }),
        ]
        for step in steps {
            let before = try w.snapshot()
            var refusals: [(ErrorCode, () throws -> Reply)] = [
                (.notFound, { try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses/\(w.responseId)/review", token: other.reviewerToken,
                                                  ["action": "startReview", "expectedRevision": .number(Double(step.expected))] as JSONValue) }),
                (.notFound, { try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses/rsp_nope/review", token: w.f.reviewerToken,
                                                  ["action": "startReview", "expectedRevision": .number(Double(step.expected))] as JSONValue) }),
                (.staleRevision, { step.name == "resubmit" ? try w.resubmit(step.expected - 1) : try w.review(step.name, step.expected - 1, comment: "x") }),
                (.invalidTransition, { try w.review("reject", step.expected, comment: "no") }),
            ]
            if step.name == "resubmit" {
                refusals.append((.forbidden, { try w.resubmit(step.expected, token: w.f.reviewerToken) }))
                refusals[3] = (.invalidTransition, { try w.review("approve", step.expected) })
            } else {
                refusals.append((.forbidden, { try w.review(step.name, step.expected, comment: "x", token: w.f.adminToken) }))
                // From in_review, reject is allowed: startReview is the invalid one there.
                if before.state == "in_review" { refusals[3] = (.invalidTransition, { try w.review("startReview", step.expected) }) }
            }
            for (code, send) in refusals {
                let r = try send()
                P.expectProblem(r, code)
                if code == .staleRevision {
                    #expect(r.json?["revision"]?.intValue == step.expected)
                    #expect(r.json?["reviewState"]?.stringValue == before.state)
                }
                #expect(try w.snapshot() == before, "\(step.name): \(code)")
            }
            // 1001 while expired, then the step succeeds after renewal.
            try w.f.expire()
            let expiredBefore = try w.snapshot()
            P.expectProblem(try step.run(), .subscriptionExpired)
            #expect(try w.snapshot() == expiredBefore, "\(step.name): 1001")
            try w.f.renew()
            let ok = try step.run()
            #expect(ok.status == 200, "\(step.name): \(ok.text)")
            #expect(ok.json?["revision"]?.intValue == step.expected + 1)
        }
    }

    @Test func nonAssigneesLearnNothingAboutTasks() throws {
        let w = try World()
        let other = try w.f.client.post("/v1/orgs/\(w.f.orgId)/users", token: w.f.adminToken, ["name": "Other", "roles": ["collector"]])
        let otherToken = try #require(other.json?["token"]?.stringValue)
        for expired in [false, true] {
            if expired { try w.f.expire() }
            let real = try w.f.client.get("/v1/orgs/\(w.f.orgId)/tasks/\(w.taskId)", token: otherToken)
            let none = try w.f.client.get("/v1/orgs/\(w.f.orgId)/tasks/tsk_does-not-exist", token: otherToken)
            P.expectProblem(real, .notFound)
            #expect(real.body == none.body)
            let cite = try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses", token: otherToken,
                                           ResponseTests.submission("intruder-0001", w.v, extra: ["fieldTaskId": .string(w.taskId)]))
            let citeNone = try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses", token: otherToken,
                                               ResponseTests.submission("intruder-0001", w.v, extra: ["fieldTaskId": "tsk_does-not-exist"]))
            P.expectProblem(cite, .notFound)
            #expect(cite.body == citeNone.body)
            #expect(try w.f.client.get("/v1/orgs/\(w.f.orgId)/tasks", token: otherToken).json?["items"]?.arrayValue?.count == 0)
        }
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM responses") == 1)
    }

    @Test func aTaskOfASurveyWithoutReviewCompletesOnAcceptanceAndOnlyOnce() throws {
        let f = try Fixture()
        let v = try f.publishSurvey(reviewRequired: false)
        let t = try f.client.post("/v1/orgs/\(f.orgId)/tasks", token: f.adminToken,
                                  ["title": "T", "surveyId": .string(v.surveyId), "assigneeUserId": .string(f.collectorId)])
        let taskId = try #require(t.json?["taskId"]?.stringValue)
        try f.expire()
        P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                          ResponseTests.submission("task-done-0001", v, extra: ["fieldTaskId": .string(taskId)])), .subscriptionExpired)
        let untouched = try f.server.rows("SELECT state, completed_at, completed_by, response_id FROM tasks WHERE task_id = ?", [.text(taskId)])[0]
        #expect(try untouched.string("state") == "open" && untouched.value("completed_at") == .null && untouched.value("completed_by") == .null
                && untouched.value("response_id") == .null)
        try f.renew()
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("task-done-0001", v, extra: ["fieldTaskId": .string(taskId)]))
        #expect(r.status == 201)
        let task = try f.client.get("/v1/orgs/\(f.orgId)/tasks/\(taskId)", token: f.collectorToken)
        #expect(task.json?["state"]?.stringValue == "completed")
        #expect(task.json?["responseId"]?.stringValue == r.json?["responseId"]?.stringValue)
        // The replay does not complete it again; another response citing it → 1022.
        #expect(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("task-done-0001", v, extra: ["fieldTaskId": .string(taskId)])).status == 200)
        P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                          ResponseTests.submission("task-done-0002", v, extra: ["fieldTaskId": .string(taskId)])), .taskAlreadyCompleted)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'task.complete'") == 1)
    }

    @Test func idempotencyKeyReplayConflictAndRefusedKeysStayFree() throws {
        let w = try World()
        let first = try w.review("startReview", 1, key: "key-start-0001")
        #expect(first.status == 200)
        let replay = try w.review("startReview", 1, key: "\"key-start-0001\"")  // quoted form is the same key
        #expect(replay.status == 200)
        #expect(replay.header("idempotent-replayed") == "true")
        #expect(replay.body == first.body)
        #expect(try w.snapshot().revision == 2)
        P.expectProblem(try w.review("startReview", 2, key: "key-start-0001"), .idempotencyConflict)
        P.expectProblem(try w.review("returnForCorrection", 2, comment: "x", key: "bad key!"), .invalidIdentifier)
        P.expectProblem(try w.review("returnForCorrection", 2, comment: "x", key: "short"), .invalidIdentifier)
        // Refused while expired: the key stays free and the retry after renewal succeeds once.
        try w.f.expire()
        P.expectProblem(try w.review("returnForCorrection", 2, comment: "x", key: "key-return-0001"), .subscriptionExpired)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idempotency_key = 'key-return-0001'") == 0)
        try w.f.renew()
        #expect(try w.review("returnForCorrection", 2, comment: "x", key: "key-return-0001").status == 200)
        #expect(try w.review("returnForCorrection", 2, comment: "x", key: "key-return-0001").header("idempotent-replayed") == "true")
        #expect(try w.snapshot().revision == 3)
        // A replay while expired is still answered.
        try w.f.expire()
        #expect(try w.review("returnForCorrection", 2, comment: "x", key: "key-return-0001").status == 200)
        // Keys work on other writes too: creating a survey twice with one key makes one survey.
        try w.f.renew()
        let s1 = try w.f.client.post("/v1/orgs/\(w.f.orgId)/surveys", token: w.f.adminToken, ["title": "Keyed"], headers: ["Idempotency-Key": "survey-key-0001"])
        let s2 = try w.f.client.post("/v1/orgs/\(w.f.orgId)/surveys", token: w.f.adminToken, ["title": "Keyed"], headers: ["Idempotency-Key": "survey-key-0001"])
        #expect(s1.status == 201)
        #expect(s2.status == 200)
        #expect(s1.json?["surveyId"] == s2.json?["surveyId"])
        #expect(s2.header("location") == s1.header("location"))
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM surveys WHERE title = 'Keyed'") == 1)
    }

    /// Holds the writes of the server from outside so they queue up, in flight.
    typealias WriteLock = TestEngine.WriteLock

    /// Sends `n` requests at once, each on its own thread (not the shared pool, which may start
    /// them late), so that all are in flight together; wait on the group for their replies.
    static func inFlight(_ n: Int, _ send: @escaping @Sendable (Int) -> Reply?) -> (ConcurrentResults, DispatchGroup) {
        let results = ConcurrentResults()
        let group = DispatchGroup()
        for i in 0..<n {
            group.enter()
            Thread.detachNewThread {
                results.add(send(i))
                group.leave()
            }
        }
        return (results, group)
    }

    /// Waits (up to 10 s) until the server's keyed requests in flight are as `expected` says.
    static func waitForKeyedRequests(_ server: TestServer, _ expected: ((holding: Int, waiting: Int)) -> Bool) throws {
        let turns = server.app.operations.turns
        let deadline = Date().addingTimeInterval(10)
        while !expected(turns.occupancy) && Date() < deadline { usleep(2_000) }
        guard expected(turns.occupancy) else { throw TestFailure("keyed requests in flight: \(turns.occupancy)") }
    }

    @Test func twoConcurrentRequestsWithOneKeyRunTheActionOnce() throws {
        let w = try World()
        let lock = try WriteLock(w.f.server)
        let (results, group) = Self.inFlight(2) { _ in try? w.review("startReview", 1, key: "key-concurrent-0001") }
        // Both in flight at once: one holds the key's turn (its write held by the lock), the
        // other waits for it.
        try Self.waitForKeyedRequests(w.f.server) { $0.holding == 1 && $0.waiting == 1 }
        lock.release()
        group.wait()
        let replies = results.all
        #expect(replies.count == 2)
        #expect(replies.allSatisfy { $0.status == 200 })
        #expect(replies.filter { $0.header("idempotent-replayed") == "true" }.count == 1)
        #expect(Set(replies.map(\.body)).count == 1)
        #expect(try w.snapshot().revision == 2)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'review.startReview'") == 1)
    }

    @Test func pastTheInFlightLimitIs1030() throws {
        let w = try World { $0.maxKeyedInFlight = 3 }
        let lock = try WriteLock(w.f.server)
        let (results, group) = Self.inFlight(3) { i in
            try? w.f.client.post("/v1/orgs/\(w.f.orgId)/surveys", token: w.f.adminToken, ["title": .string("S\(i)")] as JSONValue,
                                 headers: ["Idempotency-Key": "limit-key-000\(i)"])
        }
        // All three hold their keys' turns, their writes held by the lock.
        try Self.waitForKeyedRequests(w.f.server) { $0.holding == 3 }
        let over = try w.f.client.post("/v1/orgs/\(w.f.orgId)/surveys", token: w.f.adminToken, ["title": "S4"], headers: ["Idempotency-Key": "limit-key-0004"])
        lock.release()
        group.wait()
        P.expectProblem(over, .tooManyPendingRequests)
        #expect(over.header("retry-after") != nil)
        #expect(results.all.filter { $0.status == 201 }.count == 3)
        // The refused key stays free.
        #expect(try w.f.client.post("/v1/orgs/\(w.f.orgId)/surveys", token: w.f.adminToken, ["title": "S4"], headers: ["Idempotency-Key": "limit-key-0004"]).status == 201)
    }

    @Test func readingStateAndHistoryWhileExpired() throws {
        let w = try World()
        #expect(try w.review("startReview", 1).status == 200)
        try w.f.expire()
        for token in [w.f.collectorToken, w.f.reviewerToken, w.f.adminToken] {
            #expect(try w.f.client.get("/v1/orgs/\(w.f.orgId)/responses/\(w.responseId)", token: token).json?["reviewState"]?.stringValue == "in_review")
            #expect(try w.f.client.get("/v1/orgs/\(w.f.orgId)/responses/\(w.responseId)/history", token: token).json?["items"]?.arrayValue?.count == 2)
            #expect(try w.f.client.get("/v1/orgs/\(w.f.orgId)/changes", token: token).status == 200)
            #expect(try w.f.client.get("/v1/orgs/\(w.f.orgId)/tasks/\(w.taskId)", token: token).status == 200)
        }
    }

    @Test func theChangesFeedShowsEveryStateInOrderFromAnyCursor() throws {
        let w = try World()
        #expect(try w.review("startReview", 1).status == 200)
        #expect(try w.review("returnForCorrection", 2, comment: "again").status == 200)
        #expect(try w.resubmit(3).status == 200)
        #expect(try w.review("startReview", 4).status == 200)
        #expect(try w.review("approve", 5).status == 200)
        // Another collector's response does not appear in this collector's feed.
        let other = try w.f.client.post("/v1/orgs/\(w.f.orgId)/users", token: w.f.adminToken, ["name": "Other", "roles": ["collector"]])
        let otherToken = try #require(other.json?["token"]?.stringValue)
        #expect(try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses", token: otherToken, ResponseTests.submission("other-0001", w.v)).status == 201)

        func feed(after: String?, limit: Int) throws -> [JSONValue] {
            var items: [JSONValue] = []
            var cursor = after
            repeat {
                let page = try w.f.client.get("/v1/orgs/\(w.f.orgId)/changes?limit=\(limit)" + (cursor.map { "&after=\($0)" } ?? ""), token: w.f.collectorToken)
                #expect(page.status == 200)
                items += page.json?["items"]?.arrayValue ?? []
                cursor = page.json?["nextCursor"]?.stringValue
            } while cursor != nil
            return items
        }
        let all = try feed(after: nil, limit: 2)
        let responseStates = all.filter { $0["kind"]?.stringValue == "response" }.compactMap { $0["reviewState"]?.stringValue }
        #expect(responseStates == ["submitted", "in_review", "returned", "submitted", "in_review", "approved"])
        #expect(all.allSatisfy { $0["id"]?.stringValue == w.responseId || $0["id"]?.stringValue == w.taskId })
        #expect(all.last?["kind"]?.stringValue == "task" && all.last?["taskState"]?.stringValue == "completed")
        // Resumable from any cursor: the rest of the feed after item i is exactly all[i+1...]
        // (a cursor is sealed afresh on every page, so items are compared without it).
        func content(_ items: [JSONValue]) -> [JSONValue] {
            items.map { item in .object((item.objectValue ?? [:]).filter { $0.key != "cursor" }) }
        }
        for i in 0..<all.count {
            let rest = try feed(after: all[i]["cursor"]?.stringValue, limit: 3)
            #expect(content(rest) == content(Array(all[(i + 1)...])))
        }
    }

    /// A changes cursor shows nothing of other organizations' activity: it is no number, two
    /// cursors of one entry differ, and only this organization's feed reads it — another
    /// organization's cursor, a changed one and a plain number are 422 / 1002 at `after`.
    @Test func changesCursorsAreSealedPerOrganization() throws {
        let w = try World()
        let page = try w.f.client.get("/v1/orgs/\(w.f.orgId)/changes?limit=1", token: w.f.collectorToken)
        let cursor = try #require(page.json?["items"]?.arrayValue?.first?["cursor"]?.stringValue)
        #expect(cursor.hasPrefix("cc1.") && cursor.count == 52 && Int64(cursor.dropFirst(4)) == nil)
        let again = try w.f.client.get("/v1/orgs/\(w.f.orgId)/changes?limit=1", token: w.f.collectorToken)
        #expect(again.json?["items"]?.arrayValue?.first?["cursor"]?.stringValue != cursor)
        #expect(try w.f.client.get("/v1/orgs/\(w.f.orgId)/changes?after=\(cursor)", token: w.f.collectorToken).status == 200)

        let other = try Fixture(server: w.f.server)
        let theirs = try other.client.get("/v1/orgs/\(other.orgId)/changes?limit=1", token: other.adminToken)
        #expect(theirs.status == 200)
        var tampered = Array(cursor)
        tampered[10] = tampered[10] == "A" ? "B" : "A"
        for bad in [String(tampered), "12", "0", "ec2." + cursor.dropFirst(4)] {
            let r = try w.f.client.get("/v1/orgs/\(w.f.orgId)/changes?after=\(bad)", token: w.f.collectorToken)
            #expect(r.status == 422 && r.json?["errorCode"]?.intValue == 1002, "\(bad): \(r.status)")
        }
        // This organization's cursor in the other's feed.
        let crossed = try other.client.get("/v1/orgs/\(other.orgId)/changes?after=\(cursor)", token: other.adminToken)
        #expect(crossed.status == 422)
    }
}
