import Foundation
import Testing
import SurveyDomain
import SurveyOperations
import SurveyServer
import SurveyWebhooks
@testable import SurveyStorage

/// Webhooks: the transactional outbox, signed deliveries in order, retries with the payload as
/// of the event, 410, rotation, the SSRF guard and the gate — against a real server and a real
/// receiver on loopback.
@Suite struct WebhookTests {
    struct World {
        let f: Fixture
        let receiver: WebhookReceiver
        let v: (surveyId: String, versionId: String, contentHash: String)

        init(allowPrivate: Bool = true, schedule: [Int64] = [200, 200, 200, 200, 200]) throws {
            f = try Fixture(server: try TestServer {
                $0.webhooksAllowPrivate = allowPrivate
                $0.webhookRetrySchedule = RetrySchedule(delaysMillis: schedule)
            })
            receiver = try WebhookReceiver()
            v = try f.publishSurvey(reviewRequired: true)
        }

        /// Creates a webhook; returns its id and secret.
        func webhook(_ url: String, events: [String] = Webhooks.eventTypes, key: String? = nil) throws -> (id: String, secret: String) {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/webhooks", token: f.adminToken,
                                      ["url": .string(url), "events": .array(events.map { .string($0) })],
                                      headers: key.map { ["Idempotency-Key": $0] } ?? [:])
            guard r.status == 201, let id = r.json?["webhookId"]?.stringValue, let secret = r.json?["secret"]?.stringValue else {
                throw TestFailure("webhook: \(r.status) \(r.text)")
            }
            return (id, secret)
        }

        func submit(_ id: String) throws -> String {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, ResponseTests.submission(id, v))
            guard r.status == 201 || r.status == 200, let rid = r.json?["responseId"]?.stringValue else { throw TestFailure("submit: \(r.status) \(r.text)") }
            return rid
        }

        func deliveries(_ webhookId: String) throws -> [JSONValue] {
            let r = try f.client.get("/v1/orgs/\(f.orgId)/webhooks/\(webhookId)/deliveries?limit=500", token: f.adminToken)
            return r.json?["items"]?.arrayValue ?? []
        }

        func waitForDeliveries(_ webhookId: String, _ condition: ([JSONValue]) -> Bool, seconds: Double = 10) throws -> [JSONValue] {
            let deadline = Date(timeIntervalSinceNow: seconds)
            while Date() < deadline {
                let d = try deliveries(webhookId)
                if condition(d) { return d }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return try deliveries(webhookId)
        }

        func rowCount(_ table: String) throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM \(table)") }

        /// True once a look at the outbox, begun after this call, found nothing to send: from
        /// then on nothing more arrives until something new is committed or a retry falls due.
        func dispatcherIdle() -> Bool { f.server.app.dispatcher.waitUntilIdle(seconds: 10) }
    }

    @Test func aCommittedEventIsDeliveredSignedOnceAndARefusedWriteNever() throws {
        let w = try World()
        let hook = try w.webhook(w.receiver.url())
        let responseId = try w.submit("wh-sub-0001")
        #expect(w.receiver.wait { $0.count == 1 })
        let call = try #require(w.receiver.calls.first)
        #expect(WebhookReceiver.verifies(call, secret: hook.secret))
        #expect(!WebhookReceiver.verifies(call, secret: "whsec_" + Base64.encode(Array(repeating: 7, count: 32))))
        #expect(call.id.hasPrefix("evt_"))
        #expect(abs((Int64(call.timestamp) ?? 0) - Timestamp.nowMillis() / 1000) <= 5)
        #expect(call.type == "response.accepted")
        // The data is the document the API answers for the response.
        let document = try w.f.client.get("/v1/orgs/\(w.f.orgId)/responses/\(responseId)", token: w.f.reviewerToken).json
        #expect(call.json?["data"] == document)
        #expect(call.json?["timestamp"]?.stringValue != nil)

        // A replay of the same submission is not a new event.
        _ = try w.submit("wh-sub-0001")
        // A refused write (expired) leaves no event and no delivery; after renewal the same
        // request is accepted once and delivered once.
        try w.f.expire()
        let refused = try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses", token: w.f.collectorToken, ResponseTests.submission("wh-sub-0002", w.v))
        #expect(refused.status == 402 && refused.json?["errorCode"]?.intValue == 1001)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'response.accept'") == 1)
        #expect(try w.deliveries(hook.id).count == 1)
        try w.f.renew()
        _ = try w.submit("wh-sub-0002")
        #expect(w.receiver.wait { $0.count == 2 })
        #expect(w.dispatcherIdle())
        #expect(w.receiver.calls.count == 2)
        #expect(Set(w.receiver.calls.map(\.id)).count == 2)
        let delivered = try w.waitForDeliveries(hook.id) { $0.allSatisfy { $0["status"]?.stringValue == "succeeded" } }
        #expect(delivered.count == 2)
        #expect(delivered.first?["lastStatusCode"]?.intValue == 200)
        #expect(delivered.first?["attempts"]?.intValue == 1)
    }

    /// A failed attempt is retried with the same webhook-id and the same bytes: the state as of
    /// the event, even after the response changed; the webhook's later events wait their turn.
    @Test func aRetryCarriesTheSameIdAndThePayloadAsOfTheEventInOrder() throws {
        let w = try World(schedule: [1_500, 200, 200])
        let hook = try w.webhook(w.receiver.url())
        w.receiver.script([WebhookReceiver.Answer(status: 500)])
        let responseId = try w.submit("wh-retry-0001")
        #expect(w.receiver.wait { $0.count == 1 })
        // The response moves on before the retry.
        let step = try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses/\(responseId)/review", token: w.f.reviewerToken,
                                       ["action": "startReview", "expectedRevision": 1])
        #expect(step.status == 200)
        #expect(w.receiver.wait { $0.count == 3 })
        let calls = w.receiver.calls
        #expect(calls.map(\.status) == [500, 200, 200])
        #expect(calls[0].id == calls[1].id)
        #expect(calls[0].body == calls[1].body)
        #expect(calls[1].json?["data"]?["reviewState"]?.stringValue == "submitted")
        #expect(calls[1].json?["data"]?["revision"]?.intValue == 1)
        // The review event came after, in commit order, with the transition.
        #expect(calls[2].type == "response.review")
        #expect(calls[2].json?["data"]?["reviewState"]?.stringValue == "in_review")
        #expect(calls[2].json?["data"]?["review"]?["action"]?.stringValue == "startReview")
        #expect(calls[2].json?["data"]?["review"]?["fromState"]?.stringValue == "submitted")
        #expect(calls.allSatisfy { WebhookReceiver.verifies($0, secret: hook.secret) })
        let d = try w.waitForDeliveries(hook.id) { $0.count == 2 && $0.allSatisfy { $0["status"]?.stringValue == "succeeded" } }
        #expect(d.first?["attempts"]?.intValue == 2)
    }

    @Test func manyEventsArriveInCommitOrderThroughFailures() throws {
        let w = try World()
        _ = try w.webhook(w.receiver.url(), events: ["response.accepted"])
        // Every fifth call fails once.
        w.receiver.script((0..<60).map { $0 % 5 == 4 ? WebhookReceiver.Answer(status: 503) : WebhookReceiver.Answer() })
        var ids: [String] = []
        for i in 0..<40 { ids.append(try w.submit(String(format: "wh-order-%04d", i))) }
        #expect(w.receiver.wait(seconds: 30) { $0.filter { $0.status == 200 }.count == 40 })
        let succeeded = w.receiver.calls.filter { $0.status == 200 }.compactMap { $0.json?["data"]?["responseId"]?.stringValue }
        #expect(succeeded == ids)
        #expect(Set(w.receiver.calls.filter { $0.status == 200 }.map(\.id)).count == 40)
    }

    /// 410 disables the webhook: nothing is sent while it is disabled; enabled again, it goes on
    /// where it stopped (a manual retry of the refused delivery first, then what came meanwhile).
    @Test func goneDisablesTheWebhookUntilItIsEnabledAgain() throws {
        let w = try World()
        let hook = try w.webhook(w.receiver.url())
        w.receiver.script([WebhookReceiver.Answer(status: 410)])
        _ = try w.submit("wh-gone-0001")
        let d = try w.waitForDeliveries(hook.id) { $0.first?["status"]?.stringValue == "failed" }
        #expect(d.first?["status"]?.stringValue == "failed")
        #expect(d.first?["lastStatusCode"]?.intValue == 410)
        let got = try w.f.client.get("/v1/orgs/\(w.f.orgId)/webhooks/\(hook.id)", token: w.f.adminToken)
        #expect(got.json?["enabled"]?.boolValue == false)
        #expect(got.json?["disabledReason"]?.stringValue == "the receiver answered 410 Gone")
        let second = try w.submit("wh-gone-0002")
        #expect(w.dispatcherIdle())
        #expect(w.receiver.calls.count == 1)
        let listed = try w.deliveries(hook.id)
        #expect(listed.map { $0["status"]?.stringValue ?? "" } == ["failed", "pending"])
        #expect(listed.last?["attempts"]?.intValue == 0)
        // A manual retry re-queues the refused delivery; enabled again, it goes first, then the
        // event that came while the webhook was disabled.
        let failedId = try #require(d.first?["deliveryId"]?.stringValue)
        let retry = try w.f.client.post("/v1/orgs/\(w.f.orgId)/webhooks/\(hook.id)/deliveries/\(failedId)/retry", token: w.f.adminToken, [:])
        #expect(retry.status == 200 && retry.json?["status"]?.stringValue == "pending")
        let enable = try w.f.client.request("PATCH", "/v1/orgs/\(w.f.orgId)/webhooks/\(hook.id)", token: w.f.adminToken, json: ["enabled": true])
        #expect(enable.status == 200 && enable.json?["enabled"]?.boolValue == true && enable.json?["disabledReason"] == nil)
        #expect(w.receiver.wait { $0.count == 3 })
        let calls = w.receiver.calls
        #expect(calls.count == 3 && calls[1].id == calls[0].id && calls[1].body == calls[0].body)
        #expect(calls.last?.json?["data"]?["responseId"]?.stringValue == second)
        let done = try w.waitForDeliveries(hook.id) { $0.allSatisfy { $0["status"]?.stringValue == "succeeded" } }
        #expect(done.count == 2)
    }

    /// A receiver's Retry-After replaces the schedule's wait; a redirect is a failure, never followed.
    @Test func retryAfterIsHonouredAndRedirectsAreNotFollowed() throws {
        let w = try World(schedule: [3_600_000, 3_600_000, 3_600_000])
        let hook = try w.webhook(w.receiver.url())
        w.receiver.script([WebhookReceiver.Answer(status: 503, headers: [("Retry-After", "1")])])
        _ = try w.submit("wh-ra-0001")
        // The schedule says an hour; the receiver asked for a second.
        #expect(w.receiver.wait(seconds: 6) { $0.count == 2 })
        #expect(w.receiver.calls.map(\.status) == [503, 200])

        w.receiver.script([WebhookReceiver.Answer(status: 302, headers: [("Location", w.receiver.url("/other"))])])
        _ = try w.submit("wh-ra-0002")
        let d = try w.waitForDeliveries(hook.id) { $0.count == 2 && $0.last?["attempts"]?.intValue == 1 }
        #expect(d.last?["status"]?.stringValue == "pending")
        #expect(d.last?["lastStatusCode"]?.intValue == 302)
        #expect(d.last?["lastError"]?.stringValue == "the receiver answered 302 (redirects are not followed)")
        #expect(w.dispatcherIdle())
        #expect(!w.receiver.calls.contains { $0.path == "/other" })
    }

    /// A receiver's Retry-After too large for any clock (seconds past Int64's millisecond range,
    /// or past Int64 itself) is capped at the longest wait: the attempt is recorded, the server
    /// keeps serving, and the retry is scheduled no later than the cap.
    @Test func aHugeRetryAfterIsCappedAndTheAttemptRecorded() throws {
        let w = try World(schedule: [1_000, 1_000, 1_000])
        for (n, value) in ["9223372036854775807", "9300000000000000", "99999999999999999999999"].enumerated() {
            // A webhook each: a pending delivery holds back the later events of its webhook.
            let hook = try w.webhook(w.receiver.url())
            w.receiver.script([WebhookReceiver.Answer(status: 503, headers: [("Retry-After", value)])])
            let sent = Timestamp.nowMillis()
            _ = try w.submit("wh-huge-ra-000\(n)")
            let d = try w.waitForDeliveries(hook.id) { $0.count == 1 && $0.last?["attempts"]?.intValue == 1 }
            let last = try #require(d.last)
            #expect(last["status"]?.stringValue == "pending")
            #expect(last["lastStatusCode"]?.intValue == 503)
            let next = try #require(last["nextAttemptAt"]?.stringValue.flatMap(Timestamp.parse))
            #expect(next >= sent + RetrySchedule.maxRetryAfterMillis - 60_000)
            #expect(next <= Timestamp.nowMillis() + RetrySchedule.maxRetryAfterMillis)
        }
        #expect(try w.f.client.get("/readyz").status == 200)
    }

    @Test func rotationSignsWithBothSecretsAndAReplayNeverShowsASecret() throws {
        let w = try World()
        let hook = try w.webhook(w.receiver.url(), key: "wh-create-key-1")
        let replay = try w.f.client.post("/v1/orgs/\(w.f.orgId)/webhooks", token: w.f.adminToken,
                                         ["url": .string(w.receiver.url()), "events": .array(Webhooks.eventTypes.map { .string($0) })],
                                         headers: ["Idempotency-Key": "wh-create-key-1"])
        #expect(replay.status == 200 && replay.header("Idempotent-Replayed") == "true")
        #expect(replay.json?["webhookId"]?.stringValue == hook.id && replay.json?["secret"] == nil && replay.json?["secretOmitted"]?.boolValue == true)
        #expect(try w.rowCount("webhooks") == 1)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE CAST(body AS TEXT) LIKE '%whsec_%'") == 0)

        let rotated = try w.f.client.post("/v1/orgs/\(w.f.orgId)/webhooks/\(hook.id)/rotate-secret", token: w.f.adminToken, [:])
        #expect(rotated.status == 200)
        let newSecret = try #require(rotated.json?["secret"]?.stringValue)
        #expect(newSecret != hook.secret && newSecret.hasPrefix("whsec_"))
        _ = try w.submit("wh-rotate-0001")
        #expect(w.receiver.wait { $0.count == 1 })
        let call = try #require(w.receiver.calls.first)
        #expect(call.signature.split(separator: " ").count == 2)
        #expect(WebhookReceiver.verifies(call, secret: newSecret))
        #expect(WebhookReceiver.verifies(call, secret: hook.secret))
    }

    /// Private, loopback and link-local targets are refused at creation and, when the server
    /// runs without --webhooks-allow-private, at delivery.
    @Test func theGuardRefusesPrivateTargetsAtCreationAndAtDelivery() throws {
        let guarded = try World(allowPrivate: false)
        for url in ["http://127.0.0.1:9/x", "http://localhost/x", "http://10.1.2.3/", "http://192.168.0.9/", "http://169.254.169.254/latest",
                    "http://[::1]:8080/", "http://[fe80::1]/", "http://100.64.0.1/", "ftp://example.com/", "not a url"] {
            let r = try guarded.f.client.post("/v1/orgs/\(guarded.f.orgId)/webhooks", token: guarded.f.adminToken,
                                              ["url": .string(url), "events": ["response.accepted"]])
            #expect(r.status == 422 && r.json?["errorCode"]?.intValue == 1002, "\(url): \(r.status)")
            #expect(r.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "url", "\(url)")
        }
        #expect(try guarded.rowCount("webhooks") == 0)
        // A name that does not resolve is accepted (its deliveries fail and are retried).
        let unresolved = try guarded.f.client.post("/v1/orgs/\(guarded.f.orgId)/webhooks", token: guarded.f.adminToken,
                                                   ["url": "https://receiver.example.com/surveyd", "events": ["response.accepted"]])
        #expect(unresolved.status == 201)

        // At delivery: a webhook made by a server that allowed loopback, served by one that does not.
        let open = try World(schedule: [3_600_000])
        let hook = try open.webhook(open.receiver.url())
        open.receiver.standing(WebhookReceiver.Answer(status: 500))
        _ = try open.submit("wh-guard-0001")
        let first = try open.waitForDeliveries(hook.id) { $0.first?["attempts"]?.intValue == 1 }
        let deliveryId = try #require(first.first?["deliveryId"]?.stringValue)
        open.f.server.stop()
        let restarted = try TestServer(dataDir: open.f.server.dataDir) { $0.webhooksAllowPrivate = false }
        let retry = try restarted.client.post("/v1/orgs/\(open.f.orgId)/webhooks/\(hook.id)/deliveries/\(deliveryId)/retry", token: open.f.adminToken, [:])
        #expect(retry.status == 200)
        let deadline = Date(timeIntervalSinceNow: 10)
        var last: JSONValue?
        repeat {
            last = try restarted.client.get("/v1/orgs/\(open.f.orgId)/webhooks/\(hook.id)/deliveries", token: open.f.adminToken)
                .json?["items"]?.arrayValue?.first
            if last?["attempts"]?.intValue == 2 { break }
            Thread.sleep(forTimeInterval: 0.05)
        } while Date() < deadline
        #expect(last?["attempts"]?.intValue == 2)
        #expect(last?["lastError"]?.stringValue?.contains("127.0.0.1") == true)
        #expect(last?["lastStatusCode"] == nil)
        #expect(open.receiver.calls.count == 1)
    }

    /// Creating, enabling and re-pointing are gated; disabling, deleting and rotating never are.
    /// Every change is audited; a refusal writes nothing.
    @Test func managementFollowsTheGate() throws {
        let w = try World()
        let hook = try w.webhook(w.receiver.url())
        let audit = { try w.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action LIKE 'webhook.%'") }
        #expect(try audit() == 1)
        try w.f.expire()
        let create = try w.f.client.post("/v1/orgs/\(w.f.orgId)/webhooks", token: w.f.adminToken,
                                         ["url": .string(w.receiver.url()), "events": ["response.accepted"]])
        #expect(create.status == 402 && create.json?["errorCode"]?.intValue == 1001)
        let repoint = try w.f.client.request("PATCH", "/v1/orgs/\(w.f.orgId)/webhooks/\(hook.id)", token: w.f.adminToken,
                                             json: ["url": .string(w.receiver.url("/other"))])
        #expect(repoint.status == 402)
        #expect(try w.rowCount("webhooks") == 1 && audit() == 1)
        let disable = try w.f.client.request("PATCH", "/v1/orgs/\(w.f.orgId)/webhooks/\(hook.id)", token: w.f.adminToken, json: ["enabled": false])
        #expect(disable.status == 200 && disable.json?["enabled"]?.boolValue == false)
        #expect(disable.json?["disabledReason"]?.stringValue == "disabled by an admin")
        let enable = try w.f.client.request("PATCH", "/v1/orgs/\(w.f.orgId)/webhooks/\(hook.id)", token: w.f.adminToken, json: ["enabled": true])
        #expect(enable.status == 402)
        let rotate = try w.f.client.post("/v1/orgs/\(w.f.orgId)/webhooks/\(hook.id)/rotate-secret", token: w.f.adminToken, [:])
        #expect(rotate.status == 200)
        #expect(try audit() == 3)
        let delete = try w.f.client.delete("/v1/orgs/\(w.f.orgId)/webhooks/\(hook.id)", token: w.f.adminToken)
        #expect(delete.status == 204)
        #expect(try w.rowCount("webhooks") == 0 && audit() == 4)
        // Not an admin, or not of this organization: nothing to see.
        let reviewer = try w.f.client.get("/v1/orgs/\(w.f.orgId)/webhooks", token: w.f.reviewerToken)
        #expect(reviewer.status == 403 && reviewer.json?["errorCode"]?.intValue == 1006)
        let gone = try w.f.client.get("/v1/orgs/\(w.f.orgId)/webhooks/\(hook.id)", token: w.f.adminToken)
        #expect(gone.status == 404)
        // Bad values are 422 at their field; wrong types 400.
        try w.f.renew()
        let bad = try w.f.client.post("/v1/orgs/\(w.f.orgId)/webhooks", token: w.f.adminToken,
                                      ["url": .string(w.receiver.url()), "events": ["response.accepted", "response.deleted"]])
        #expect(bad.status == 422 && bad.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "events[1]")
        let wrongType = try w.f.client.post("/v1/orgs/\(w.f.orgId)/webhooks", token: w.f.adminToken, ["url": 5, "events": ["response.accepted"]])
        #expect(wrongType.status == 400 && wrongType.json?["errorCode"]?.intValue == 1031)
        let kept = try w.webhook(w.receiver.url())
        let nullURL = try w.f.client.request("PATCH", "/v1/orgs/\(w.f.orgId)/webhooks/\(kept.id)", token: w.f.adminToken,
                                             json: ["url": .null, "enabled": false])
        #expect(nullURL.status == 400 && nullURL.json?["errorCode"]?.intValue == 1031)
        let unchanged = try w.f.client.get("/v1/orgs/\(w.f.orgId)/webhooks/\(kept.id)", token: w.f.adminToken)
        #expect(unchanged.json?["enabled"]?.boolValue == true && unchanged.json?["url"]?.stringValue == w.receiver.url())
    }

    /// A receiver that hangs holds one worker until the timeout; other webhooks and the API go on.
    @Test func aHangingReceiverHoldsOneWorkerNotTheServer() throws {
        let w = try World(schedule: [3_600_000])
        let slow = try w.webhook(w.receiver.url("/slow"), events: ["response.accepted"])
        let fast = try w.webhook(w.receiver.url("/other"), events: ["response.accepted"])
        w.receiver.script([WebhookReceiver.Answer(status: 200, hangSeconds: 17)])
        _ = try w.submit("wh-hang-0001")
        // The two deliveries of one event race for the first scripted answer: whichever took
        // the hanging one, the other webhook's delivery arrives at once.
        #expect(w.receiver.wait(seconds: 3) { $0.count == 1 })
        // The API answers while the receiver hangs (how fast is the benchmarks' business).
        for i in 0..<20 { _ = try w.submit(String(format: "wh-hang-%04d", i + 2)) }
        // The other webhook's 21 deliveries arrive while the first hangs: its attempt is still
        // unanswered and unrecorded (a call is recorded when it is answered).
        #expect(w.receiver.wait(seconds: 10) { $0.count >= 21 })
        #expect(try [slow.id, fast.id].allSatisfy { try w.deliveries($0).allSatisfy { $0["lastError"] == nil || $0["lastError"] == .null } })
        // Whichever webhook took the hanging answer: its attempt ends at the 15 s timeout.
        let deadline = Date(timeIntervalSinceNow: 20)
        var timedOut = false
        while !timedOut && Date() < deadline {
            timedOut = try [slow.id, fast.id].contains { id in
                try w.deliveries(id).first?["lastError"]?.stringValue?.contains("no answer within 15 s") == true
            }
            if !timedOut { Thread.sleep(forTimeInterval: 0.2) }
        }
        #expect(timedOut)
    }
}
