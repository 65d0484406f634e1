import Foundation
import Testing
import SurveyDomain
@testable import SurveyStorage

/// The webhook outbox survives kill -9. A real `surveyd` process with 1,000
/// undelivered events (the receiver answers 500) is killed; after the restart every event is
/// delivered, and none twice to a receiver that answered 2xx (counted by `webhook-id`).
@Suite(.serialized) struct WebhookCrashTests {
    @Test func kill9WithAThousandUndeliveredEventsLosesNoneAndDoublesNone() throws {
        let receiver = try WebhookReceiver()
        receiver.standing(WebhookReceiver.Answer(status: 500))
        let server = ServerProcess()
        let schedule = ["--webhooks-allow-private", "--webhook-retry-schedule", Array(repeating: "300ms", count: 200).joined(separator: ",")]
        try server.start(extra: schedule)
        let seed = try server.seed()
        let hook = try server.client.post("/v1/orgs/\(seed.orgId)/webhooks", token: seed.adminToken,
                                          ["url": .string(receiver.url()), "events": ["response.accepted"]])
        #expect(hook.status == 201)
        let webhookId = try #require(hook.json?["webhookId"]?.stringValue)

        var accepted: [String] = []
        for i in 0..<1000 {
            let r = try server.client.post("/v1/orgs/\(seed.orgId)/responses", token: seed.collectorToken,
                                           ["clientSubmissionId": .string(String(format: "crash-%05d", i)), "surveyVersionId": .string(seed.versionId),
                                            "contentHash": .string(seed.contentHash), "answers": ["n": .number(Double(i))]])
            #expect(r.status == 201)
            if let id = r.json?["responseId"]?.stringValue { accepted.append(id) }
        }
        // The head of the queue keeps failing; kill the server while it does.
        #expect(receiver.wait(seconds: 10) { $0.count >= 3 })
        server.kill9()
        // Events not yet done with: behind the webhook's cursor in the audit log.
        func pending() throws -> Int64 {
            try TestEngine.Reader(dataDir: server.dataDir).query("""
                SELECT COUNT(*) AS n FROM audit a JOIN webhooks w ON w.org_id = a.org_id WHERE a.seq > w.cursor AND a.action = 'response.accept'
                """).first?.int("n") ?? -1
        }
        #expect(try pending() == 1000)

        receiver.standing(WebhookReceiver.Answer(status: 200))
        try server.start(extra: schedule)
        #expect(receiver.wait(seconds: 120) { $0.filter { $0.status == 200 }.count >= 1000 })
        // Anything sent twice would be sent before the dispatcher next finds nothing to send.
        #expect(try Self.waitForIdleWebhooks(server, operatorToken: seed.operatorToken))
        let ok = receiver.calls.filter { $0.status == 200 }
        #expect(ok.count == 1000)
        #expect(Set(ok.map(\.id)).count == 1000)
        #expect(ok.compactMap { $0.json?["data"]?["responseId"]?.stringValue } == accepted)
        #expect(try pending() == 0)
        let listed = try server.client.get("/v1/orgs/\(seed.orgId)/webhooks/\(webhookId)/deliveries?limit=500", token: seed.adminToken)
        #expect(listed.json?["items"]?.arrayValue?.allSatisfy { $0["status"]?.stringValue == "succeeded" } == true)
        #expect(server.terminate() == 0)
        let check = try ServerProcess.command(["check", "--data-dir", server.dataDir] + TestEngine.urlArguments(dataDir: server.dataDir))
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
    }

    /// `surveyd_webhook_idle_looks_total` of the server's `/metrics`.
    static func idleLooks(_ server: ServerProcess, operatorToken: String) throws -> Int {
        let metrics = MetricsText.withoutProcess(try server.client.get("/metrics", token: operatorToken).text)
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("surveyd_webhook_idle_looks_total ") }
        guard let value = line?.split(separator: " ").last.flatMap({ Int($0) }) else { throw TestFailure("no idle looks in /metrics") }
        return value
    }

    /// True once a look at the outbox that began after this call found nothing to send (two
    /// more idle looks: the second began after the first ended); false after 10 s.
    static func waitForIdleWebhooks(_ server: ServerProcess, operatorToken: String) throws -> Bool {
        let start = try idleLooks(server, operatorToken: operatorToken)
        let deadline = Date(timeIntervalSinceNow: 10)
        while try idleLooks(server, operatorToken: operatorToken) < start + 2 {
            guard Date() < deadline else { return false }
            usleep(20_000)
        }
        return true
    }
}
