import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// Idempotency-Key on every survey-domain write: the replay lookup (step 3), then validation
/// (step 4), then the gate (5–6) with the answer stored in the write's own transaction.
/// Requests with the same key take turns, so a second one waits for the first and gets its
/// answer; a caller may have at most `limit` keyed requests in flight (1030 past it).
final class KeyedWrites: @unchecked Sendable {
    // @unchecked: the two collections are guarded by `cond`.
    private let cond = NSCondition()
    private var inFlight: Set<String> = []
    private var perCaller: [String: Int] = [:]
    let limit: Int

    init(limit: Int) { self.limit = limit }

    private static func slot(_ s: IdempotencyScope) -> String {
        [s.orgId, s.caller, s.method, s.route, s.target, s.key].joined(separator: "\u{0}")
    }

    func enter(_ s: IdempotencyScope) throws {
        cond.lock()
        defer { cond.unlock() }
        guard perCaller[s.caller, default: 0] < limit else {
            throw ApiError(.tooManyPendingRequests, "You have \(limit) keyed requests in flight; retry later.", retryAfterSeconds: 1)
        }
        perCaller[s.caller, default: 0] += 1
        let slot = Self.slot(s)
        while inFlight.contains(slot) { cond.wait() }
        inFlight.insert(slot)
    }

    func leave(_ s: IdempotencyScope) {
        cond.lock()
        inFlight.remove(Self.slot(s))
        perCaller[s.caller, default: 1] -= 1
        if perCaller[s.caller] == 0 { perCaller[s.caller] = nil }
        cond.broadcast()
        cond.unlock()
    }

    /// The Idempotency-Key header, bare or quoted; 1032 when it breaks the identifier format.
    static func key(_ request: HTTPRequest) throws -> String? { try key(request.head) }

    static func key(_ head: RequestHead) throws -> String? {
        guard let raw = head.header("idempotency-key") else { return nil }
        guard let key = ClientIdentifier.normalize(headerValue: raw) else {
            throw ApiError(.invalidIdentifier, "Idempotency-Key must be 8–128 characters of A-Z a-z 0-9 _ - : . (optionally quoted).")
        }
        return key
    }

    /// What is kept of a successful answer under its key.
    static func stored(_ response: HTTPResponse, _ scope: IdempotencyScope, withoutSecrets: Bool = false) -> StoredAnswer {
        StoredAnswer(status: response.status, location: response.headers.first { $0.0 == "Location" }?.1,
                     body: withoutSecrets ? Self.withoutSecrets(response.body) : response.body, requestDigest: scope.digest)
    }

    /// An answer as it is kept for replays: a new token is shown once, never stored in the clear,
    /// so it is left out (`tokenOmitted: true` tells a client that retried to make a new one).
    static func withoutSecrets(_ body: [UInt8]) -> [UInt8] {
        guard case .object(var o)? = try? JSONParser.parse(body), o["token"] != nil else { return body }
        o["token"] = nil
        o["tokenOmitted"] = .bool(true)
        return CanonicalJSON.encode(.object(o))
    }

    /// The digest a replay is compared by: canonical JSON when the body is JSON, else the bytes.
    static func digest(_ body: [UInt8]) -> String {
        if body.isEmpty { return "empty" }
        if let json = try? JSONParser.parse(body) { return "sha256:" + Digest.sha256Hex(CanonicalJSON.encode(json)) }
        return "sha256-raw:" + Digest.sha256Hex(body)
    }

    static func replayResponse(_ a: StoredAnswer) -> HTTPResponse {
        // A 204 (a revocation, a deactivation) is replayed as itself: there is no body to repeat.
        if a.status == 204 { return .replayed(HTTPResponse(status: 204)) }
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        if let l = a.location { headers.append(("Location", l)) }
        return .replayed(HTTPResponse(status: 200, headers: headers, body: a.body))
    }

    static func answer(_ stored: StoredAnswer?, digest: String) throws -> HTTPResponse? {
        guard let stored else { return nil }
        guard stored.requestDigest == digest else {
            throw ApiError(.idempotencyConflict, "This Idempotency-Key was already used for a different request.")
        }
        return replayResponse(stored)
    }
}

extension Services {
    /// Runs a gated write with the contract's steps 3–6. `prepare` validates (step 4) and returns
    /// what `write` needs; `write` runs inside the gated transaction.
    func keyedWrite<P: Sendable>(_ request: HTTPRequest, orgId: String, caller: String, target: String,
                                 prepare: () throws -> P,
                                 write: @escaping @Sendable (P, GatedTransaction) throws -> HTTPResponse) throws -> HTTPResponse {
        try withKey(request, scopeOrgId: orgId, caller: caller, target: target, prepare: prepare, unkeyed: { prepared in
            try unwrap(gate.write(orgId: orgId, actor: caller) { tx in try write(prepared, tx) })
        }, keyed: { prepared, scope in
            try unwrap(gate.write(orgId: orgId, actor: caller, replay: { db in
                try KeyedWrites.answer(try db.storedAnswer(scope), digest: scope.digest)
            }) { tx in
                let response = try write(prepared, tx)
                if (200..<300).contains(response.status) { try tx.storeAnswer(scope, KeyedWrites.stored(response, scope)) }
                return response
            })
        })
    }

    /// `keyedWrite` for the writes the contract never gates (users, tokens, roles, organizations,
    /// subscriptions): the same keys, scope, storage and rules, in a `SecurityTransaction`.
    /// `scopeOrgId` is the organization the key belongs to ("" for creating one). A secret in the
    /// answer (`token`) is not stored: its replay answers everything else, and says so.
    func keyedSecurityWrite<P: Sendable>(_ request: HTTPRequest, scopeOrgId: String, orgId: @escaping @Sendable (P) -> String,
                                         caller: String, target: String, prepare: () throws -> P,
                                         write: @escaping @Sendable (P, SecurityTransaction) throws -> HTTPResponse) throws -> HTTPResponse {
        try withKey(request, scopeOrgId: scopeOrgId, caller: caller, target: target, prepare: prepare, unkeyed: { prepared in
            try database.securityWrite(orgId: orgId(prepared), actor: caller) { tx in try write(prepared, tx) }
        }, keyed: { prepared, scope in
            try database.securityWrite(orgId: orgId(prepared), actor: caller) { tx in
                let response = try write(prepared, tx)
                // A no-op (it changed nothing) leaves no key either: its retry is the same no-op.
                if (200..<300).contains(response.status) && tx.changedSomething {
                    try tx.storeAnswer(scope, KeyedWrites.stored(response, scope, withoutSecrets: true))
                }
                return response
            }
        })
    }

    /// Steps 3–4 around a write: without a key, validate and write; with one, take the key's turn
    /// (a second request with it waits for the first), answer a stored replay (or 1004), else
    /// validate and write, storing the answer in the write's transaction (`keyed`).
    private func withKey<P: Sendable>(_ request: HTTPRequest, scopeOrgId: String, caller: String, target: String, prepare: () throws -> P,
                                      unkeyed: (P) throws -> HTTPResponse,
                                      keyed: (P, IdempotencyScope) throws -> HTTPResponse) throws -> HTTPResponse {
        guard let key = try KeyedWrites.key(request) else { return try unkeyed(try prepare()) }
        let digest = KeyedWrites.digest(request.body)
        let scope = IdempotencyScope(orgId: scopeOrgId, caller: caller, method: request.method, route: request.route, target: target,
                                     key: key, digest: digest)
        try keys.enter(scope)
        defer { keys.leave(scope) }
        if let replay = try KeyedWrites.answer(try database.read({ try $0.storedAnswer(scope) }), digest: digest) { return replay }
        return try keyed(try prepare(), scope)
    }

    private func unwrap(_ outcome: WriteGate.Outcome<HTTPResponse>) -> HTTPResponse {
        switch outcome {
        case .written(let r), .replayed(let r): r
        }
    }
}
