import Foundation
import Synchronization
import Testing
@testable import SurveySync

/// Pure unit tests of single pieces: the backoff schedule, how answers are classified, and
/// Retry-After through the engine with a scripted transport and a hand-moved clock. (The
/// cases that need the real server run against it in the other suites.)
@Suite struct PacingTests {
    @Test func backoffStartsAt30SecondsAndDoublesToTenMinutesWithJitter() {
        var c = SyncConfiguration()
        c.random = { 0 }
        #expect((1...7).map { c.backoff(afterAttempts: $0) } == [30, 60, 120, 240, 480, 600, 600])
        c.random = { 0.5 }
        #expect(c.backoff(afterAttempts: 1) == 45)
        #expect(c.backoff(afterAttempts: 6) == 600, "jitter never goes past the cap")
    }

    @Test func answersAreClassifiedByCodeThenStatusAndRetryable() {
        func outcome(_ status: Int, _ body: String, _ headers: [String: String] = [:]) -> AttemptOutcome {
            AttemptOutcome.of(IncomingAnswer(status: status, headers: headers, body: Array(body.utf8)))
        }
        guard case .renewalRequired = outcome(402, #"{"errorCode":1001,"retryable":true}"#) else { Issue.record("1001"); return }
        guard case .signInRequired = outcome(401, #"{"errorCode":1007}"#) else { Issue.record("401"); return }
        guard case .retryLater(let after, _) = outcome(503, #"{"errorCode":1040,"retryable":true}"#, ["retry-after": "7"]), after == 7 else {
            Issue.record("503"); return
        }
        guard case .ambiguous = outcome(500, "") else { Issue.record("500"); return }
        guard case .retryLater = outcome(409, #"{"errorCode":1777,"retryable":true}"#) else { Issue.record("unknown retryable"); return }
        guard case .refused(let words, _) = outcome(409, #"{"errorCode":1888,"retryable":false,"detail":"Something new."}"#) else {
            Issue.record("unknown permanent"); return
        }
        #expect(words == ["The server refused this (HTTP 409, error 1888): Something new.. It will not be sent again automatically."])
    }

    @Test func everyRedirectIsItsOwnOutcomeNamingWhereItPointed() {
        for status in [301, 302, 303, 307, 308] {
            let answer = IncomingAnswer(status: status, headers: ["location": "https://elsewhere.example:8443/v1/x"], body: [])
            guard case .redirected(status, let location) = AttemptOutcome.of(answer) else { Issue.record("\(status)"); continue }
            #expect(AttemptOutcome.redirectTarget(location, server: "http://127.0.0.1:9") == "elsewhere.example:8443")
        }
        #expect(AttemptOutcome.redirectTarget("https://surveys.example.org/v1", server: "http://127.0.0.1:9") == "surveys.example.org")
        #expect(AttemptOutcome.redirectTarget("/sign-in", server: "http://127.0.0.1:9") == "127.0.0.1:9", "relative: the server address itself")
        #expect(AttemptOutcome.redirectTarget(nil, server: "http://127.0.0.1:9") == "")
        #expect(SyncWords.redirect(to: "") == "The server answered with a redirect; surveyd never redirects, so the server address may be wrong. Check the server address in settings.")
    }

    @Test func anUploadAddressIsUsedOnlyOnTheServersOwnSchemeHostAndPort() {
        let server = "http://127.0.0.1:9"
        func used(_ location: String, on server: String = server) -> String? { ServerAddress.onServer(location, server: server)?.absoluteString }
        #expect(used("/v1/orgs/o/uploads/resumable/u") == "http://127.0.0.1:9/v1/orgs/o/uploads/resumable/u", "a path is on the server")
        #expect(used("/v1/x", on: "https://surveys.example.org/api") == "https://surveys.example.org/api/v1/x",
                "a path goes under the address, as every request path does")
        #expect(used("http://127.0.0.1:9/v1/x") == "http://127.0.0.1:9/v1/x")
        #expect(used("HTTP://127.0.0.1:9/v1/x") != nil, "scheme and host are compared without case")
        #expect(used("https://surveys.example.org:443/v1/x", on: "https://Surveys.example.org") != nil, "the default port is the same port")
        #expect(used("http://localhost:9/v1/x") == nil, "another host, even one naming the same machine")
        #expect(used("http://127.0.0.1:10/v1/x") == nil, "another port")
        #expect(used("https://127.0.0.1:9/v1/x") == nil, "another scheme")
        #expect(used("//localhost:9/v1/x") == nil, "a scheme-relative address naming another host")
        #expect(used("http://localhost:9/v1/x", on: "not a server address") == nil)
        #expect(SyncWords.uploadElsewhere(to: "") == "The server pointed this file's upload to another address; surveyd never does that, so the server address may be wrong. Check the server address in settings.")
    }

    /// A transport that answers from a script and counts what it was asked.
    final class ScriptedTransport: HTTPTransport {
        let answers: Mutex<[IncomingAnswer]>
        let requests = Mutex(0)
        init(_ answers: [IncomingAnswer]) { self.answers = Mutex(answers) }
        func send(_ request: OutgoingRequest) async throws -> IncomingAnswer {
            requests.withLock { $0 += 1 }
            return answers.withLock { $0.isEmpty ? IncomingAnswer(status: 500, headers: [:], body: []) : $0.removeFirst() }
        }
    }

    @Test func retryAfterIsHonoured() async throws {
        let dir = try PackagePaths.temporaryDirectory("surveysync-pacing")
        defer { try? FileManager.default.removeItem(at: dir) }
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let outbox = try Outbox(at: dir.appendingPathComponent("o.sqlite"), configuration: .init(now: { clock.withLock { $0 } }))
        outbox.signIn(Session(owner: Owner(server: "http://127.0.0.1:9", organization: "org-1", user: "u-1"), token: "t"))
        let c = try outbox.captureResponse(surveyVersionId: "v", contentHash: "h", answers: ["a": 1])
        let busy = IncomingAnswer(status: 503, headers: ["retry-after": "120"], body: Array(#"{"errorCode":1040,"retryable":true}"#.utf8))
        let stored = IncomingAnswer(status: 201, headers: [:], body: Array(#"{"responseId":"r-1","reviewState":"none","revision":1}"#.utf8))
        let empty = IncomingAnswer(status: 200, headers: [:], body: Array(#"{"items":[],"nextCursor":null}"#.utf8))
        let transport = ScriptedTransport([busy, empty, empty, stored, empty])  // every pass also reads the changes feed
        let engine = SyncEngine(outbox: outbox, transport: transport)

        _ = await engine.syncNow()
        #expect(try outbox.command(c.id)?.nextAttemptAt == clock.withLock { $0 }.addingTimeInterval(120))
        #expect(try outbox.command(c.id)?.stateLabel == "Waiting to sync")
        clock.withLock { $0 = $0.addingTimeInterval(119) }
        #expect(await engine.syncNow().attempted == 0, "not before Retry-After")
        clock.withLock { $0 = $0.addingTimeInterval(1) }
        #expect(await engine.syncNow().attempted == 1)
        #expect(try outbox.command(c.id)?.stateLabel == "Completed", "a survey without review is complete on acceptance")
    }

    /// Counts how many requests are in flight at once; every write is stored (201).
    final class SlowTransport: HTTPTransport {
        let inFlight = Mutex((now: 0, most: 0, posts: 0))
        func send(_ request: OutgoingRequest) async throws -> IncomingAnswer {
            inFlight.withLock { $0.now += 1; $0.most = max($0.most, $0.now); if request.method == "POST" { $0.posts += 1 } }
            try await Task.sleep(for: .milliseconds(30))
            inFlight.withLock { $0.now -= 1 }
            if request.method == "GET" { return IncomingAnswer(status: 200, headers: [:], body: Array(#"{"items":[],"nextCursor":null}"#.utf8)) }
            return IncomingAnswer(status: 201, headers: [:], body: Array(#"{"responseId":"r","reviewState":"submitted","revision":1}"#.utf8))
        }
    }

    @Test func concurrencyIsBounded() async throws {
        let dir = try PackagePaths.temporaryDirectory("surveysync-pacing")
        defer { try? FileManager.default.removeItem(at: dir) }
        let outbox = try Outbox(at: dir.appendingPathComponent("o.sqlite"))
        outbox.signIn(Session(owner: Owner(server: "http://127.0.0.1:9", organization: "org-1", user: "u-1"), token: "t"))
        for n in 1...6 { try outbox.captureResponse(surveyVersionId: "v", contentHash: "h", answers: ["n": n]) }
        let transport = SlowTransport()
        var configuration = SyncConfiguration()
        configuration.maxConcurrentRequests = 2
        let report = await SyncEngine(outbox: outbox, transport: transport, configuration: configuration).syncNow()
        #expect(report.attempted == 6)
        #expect(transport.inFlight.withLock { $0.most } == 2)
        #expect(transport.inFlight.withLock { $0.posts } == 6)
        #expect(try outbox.commands().allSatisfy { $0.stateLabel == "Submitted" })
    }
}
