import Foundation
import Synchronization
import SurveyDomain
import SurveyHTTP

/// A webhook receiver on loopback (the project's own HTTP engine, a thread per connection so a
/// hanging answer holds only its own): it records every call and answers what the test scripts.
final class WebhookReceiver: Sendable {
    struct Call: Sendable {
        let path: String
        let id: String
        let timestamp: String
        let signature: String
        let body: [UInt8]
        /// What this call was answered.
        let status: Int
        var json: JSONValue? { try? JSONParser.parse(body) }
        var type: String? { json?["type"]?.stringValue }
    }

    struct Answer: Sendable {
        var status = 200
        var headers: [(String, String)] = []
        var hangSeconds: Double = 0
    }

    private struct State {
        var calls: [Call] = []
        /// Answers for the next calls, in order; then `standing`.
        var script: [Answer] = []
        var standing = Answer()
    }
    /// Shared with the route handlers (a Mutex cannot be captured itself).
    private final class Shared: Sendable { let state = Mutex(State()) }
    private let shared = Shared()
    private let server: HTTPServer

    init() throws {
        var router = Router()
        let shared = self.shared
        for path in ["/hook", "/other", "/slow"] {
            router.add("POST", path, access: "anyone", runs: .blocking) { request in
                let answer = shared.state.withLock { s -> Answer in s.script.isEmpty ? s.standing : s.script.removeFirst() }
                if answer.hangSeconds > 0 { Thread.sleep(forTimeInterval: answer.hangSeconds) }
                let call = Call(path: path, id: request.header("webhook-id") ?? "", timestamp: request.header("webhook-timestamp") ?? "",
                                signature: request.header("webhook-signature") ?? "", body: request.body, status: answer.status)
                shared.state.withLock { $0.calls.append(call) }
                return HTTPResponse(status: answer.status, headers: answer.headers)
            }
        }
        var config = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        config.pollingThreads = 0
        config.maxBodyBytes = 4 << 20
        server = HTTPServer(configuration: config, router: router, log: RequestLog(enabled: false))
        try server.start()
    }

    deinit { server.stop(grace: .seconds(1)) }

    func url(_ path: String = "/hook") -> String { "http://127.0.0.1:\(server.port)\(path)" }

    func script(_ answers: [Answer]) { shared.state.withLock { $0.script = answers } }
    func standing(_ answer: Answer) { shared.state.withLock { $0.standing = answer } }
    var calls: [Call] { shared.state.withLock { $0.calls } }

    /// Waits until `condition` holds for the calls so far (polling), or `seconds` pass.
    @discardableResult
    func wait(seconds: Double = 10, until condition: ([Call]) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if condition(calls) { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition(calls)
    }

    /// The Standard Webhooks check, written from the published scheme: base64 HMAC-SHA256 of
    /// "{id}.{timestamp}.{body}" keyed with the secret's decoded bytes, any listed "v1," entry.
    static func verifies(_ call: Call, secret: String) -> Bool {
        guard secret.hasPrefix("whsec_"), let key = Base64.decode(String(secret.dropFirst(6))) else { return false }
        let expected = "v1," + Base64.encode(HMAC.sha256(key: key, message: Array("\(call.id).\(call.timestamp).".utf8) + call.body))
        return call.signature.split(separator: " ").contains { $0 == expected }
    }
}
