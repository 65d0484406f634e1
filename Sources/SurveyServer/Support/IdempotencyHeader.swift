import Synchronization
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The API's `Idempotency-Key` header, turned into the operations' `IdempotencyKey` and back:
/// the key scoped to this route, the request compared by its digest, the answer kept as the
/// client saw it and replayed with `Idempotent-Replayed: true`.
enum IdempotencyHeader {
    /// The header checked for its format only (writes keyed by a client id of their own).
    static func checkFormat(_ head: RequestHead) throws {
        if let raw = head.header("idempotency-key") { _ = try IdempotencyKey<Done>.normalized(raw) }
    }

    /// What a retry is compared by: canonical JSON when the body is JSON, else the bytes.
    static func digest(_ body: [UInt8]) -> String {
        if body.isEmpty { return "empty" }
        if let json = try? JSONParser.parse(body) { return "sha256:" + Digest.sha256Hex(CanonicalJSON.encode(json)) }
        return "sha256-raw:" + Digest.sha256Hex(body)
    }

    /// A request's digest: a form (`multipart/form-data`) by its parts — each field's name and
    /// value, each file's field name, file name, type and SHA-256 — else by its body.
    static func digest(_ request: HTTPRequest) -> String {
        guard Router.isMultipartForm(request.header("Content-Type")) else { return digest(request.body) }
        var all = Digest(.sha256)
        for (name, value) in request.form.pairs { all.update(Array("field\u{0}\(name)\u{0}\(value)\u{0}".utf8)) }
        for (name, file) in request.form.fileParts {
            var one = Digest(.sha256)
            do { try file.read { one.update($0) } } catch { return "unreadable" }
            all.update(Array("file\u{0}\(name)\u{0}\(file.fileName)\u{0}\(file.contentType)\u{0}\(Hex.encode(one.finalize()))\u{0}".utf8))
        }
        return "sha256-form:" + Hex.encode(all.finalize())
    }

    static func replay(_ a: StoredAnswer) -> HTTPResponse {
        // A 204 (a revocation, a deactivation) is replayed as itself: there is no body to repeat.
        if a.status == 204 { return .replayed(HTTPResponse(status: 204)) }
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        if let l = a.location { headers.append(("Location", l)) }
        return .replayed(HTTPResponse(status: 200, headers: headers, body: a.body))
    }
}

/// One keyed request's answer: the key handed to the operation, and the answer built once — the
/// first answer and the one kept for replays are the same bytes (a subscription's `serverTime`
/// included).
final class KeyedAnswer<Value: Sendable>: Sendable {
    private let render: @Sendable (Value) throws -> HTTPResponse
    private final class Rendered: Sendable { let answer = Mutex<HTTPResponse?>(nil) }
    private let rendered = Rendered()
    /// nil without an `Idempotency-Key` header; its format is checked by the operation, in the
    /// contract's order.
    let key: IdempotencyKey<Value>?

    init(_ request: HTTPRequest, _ render: @escaping @Sendable (Value) throws -> HTTPResponse) {
        self.render = render
        guard let raw = request.header("idempotency-key") else { key = nil; return }
        let rendered = self.rendered
        key = IdempotencyKey(raw: raw, method: request.method, route: request.route, digest: IdempotencyHeader.digest(request)) { value in
            let r = try render(value)
            rendered.answer.withLock { $0 = r }
            return KeptAnswer(status: r.status, location: r.headers.first { $0.0 == "Location" }?.1, body: r.body)
        }
    }

    /// The written value rendered (as kept, when it was), or the kept answer replayed.
    func answer(_ outcome: KeyedOutcome<Value>) throws -> HTTPResponse {
        switch outcome {
        case .written(let v): return try rendered.answer.withLock { $0 } ?? render(v)
        case .replayed(let kept): return IdempotencyHeader.replay(kept)
        }
    }
}
