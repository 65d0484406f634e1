import SurveyDomain
import SurveyStorage

extension Operations {
    /// A gated write with the contract's steps 3–6: with a key, take the key's turn (a second
    /// request with it waits for the first), answer a kept replay (or 1004), then `prepare`
    /// (step 4: validation) and the gate (5–6), keeping the answer in the write's transaction.
    func keyedWrite<P: Sendable, V: Sendable>(orgId: String, caller: String, target: String, key: IdempotencyKey<V>?,
                                              prepare: () throws -> P,
                                              write: @escaping @Sendable (P, GatedTransaction) throws -> V) throws -> KeyedOutcome<V> {
        guard let key else {
            let prepared = try prepare()
            return .written(try gate.write(orgId: orgId, actor: caller) { tx in try write(prepared, tx) }.value)
        }
        let scope = try key.scope(orgId: orgId, caller: caller, target: target)
        try turns.enter(scope)
        defer { turns.leave(scope) }
        if let kept = try Self.kept(try database.read { try $0.storedAnswer(scope) }, scope) { return .replayed(kept) }
        guard let prepared = try preparedUnlessAnswered(prepare, scope) else { return try replayOf(scope) }
        return try gate.write(orgId: orgId, actor: caller, replay: { db in
            try Self.kept(try db.storedAnswer(scope), scope).map { KeyedOutcome<V>.replayed($0) }
        }, turn: Self.turn(scope)) { tx in
            let value = try write(prepared, tx)
            try tx.storeAnswer(scope, Self.stored(try key.answer(value), scope))
            return KeyedOutcome<V>.written(value)
        }.value
    }

    /// `keyedWrite` for the writes the contract never gates (users, tokens, roles, organizations,
    /// subscriptions): the same keys and rules, in a `SecurityTransaction`. `scopeOrgId` is the
    /// organization the key belongs to ("" for creating one). A write that changed nothing keeps
    /// no key (its retry is the same no-op); a new token is never kept in the clear.
    func keyedSecurityWrite<P: Sendable, V: Sendable>(scopeOrgId: String, orgId: @escaping @Sendable (P) -> String, caller: String,
                                                      target: String, key: IdempotencyKey<V>?, prepare: () throws -> P,
                                                      write: @escaping @Sendable (P, SecurityTransaction) throws -> V) throws -> KeyedOutcome<V> {
        guard let key else {
            let prepared = try prepare()
            return .written(try database.securityWrite(orgId: orgId(prepared), actor: caller) { tx in try write(prepared, tx) })
        }
        let scope = try key.scope(orgId: scopeOrgId, caller: caller, target: target)
        try turns.enter(scope)
        defer { turns.leave(scope) }
        if let kept = try Self.kept(try database.read { try $0.storedAnswer(scope) }, scope) { return .replayed(kept) }
        guard let prepared = try preparedUnlessAnswered(prepare, scope) else { return try replayOf(scope) }
        return try database.securityWrite(orgId: orgId(prepared), actor: caller, turn: Self.turn(scope)) { tx in
            // Another process may have answered this key while this one was on its way here.
            if let kept = try Self.kept(try tx.read.storedAnswer(scope), scope) { return KeyedOutcome<V>.replayed(kept) }
            let value = try write(prepared, tx)
            if tx.changedSomething {
                try tx.storeAnswer(scope, Self.stored(try key.answer(value), scope))
            }
            return .written(value)
        }
    }

    /// The name under which requests with one key take turns across processes (see `WriteGate.write`).
    private static func turn(_ s: IdempotencyScope) -> String {
        "idempotency\u{1}" + [s.orgId, s.caller, s.method, s.route, s.target, s.key].joined(separator: "\u{1}")
    }

    /// `prepare`, whose checks read the committed state: another process may have committed
    /// this key's action (and its answer, in the same transaction) since the look above, and the
    /// checks then refuse what is in fact a retry (the review already moved on: 1021). A refusal
    /// is therefore answered by the kept answer when there now is one.
    /// Nil: there is a kept answer now (`replayOf`).
    private func preparedUnlessAnswered<P>(_ prepare: () throws -> P, _ scope: IdempotencyScope) throws -> P? {
        do {
            return try prepare()
        } catch {
            if try database.read({ try $0.storedAnswer(scope) }) != nil { return nil }
            throw error
        }
    }

    private func replayOf<V>(_ scope: IdempotencyScope) throws -> KeyedOutcome<V> {
        guard let kept = try Self.kept(try database.read { try $0.storedAnswer(scope) }, scope) else { throw ApiError(.internalError) }
        return .replayed(kept)
    }

    /// A kept answer for this scope: its replay when the request is the same, else 1004.
    private static func kept(_ stored: StoredAnswer?, _ scope: IdempotencyScope) throws -> StoredAnswer? {
        guard let stored else { return nil }
        guard stored.requestDigest == scope.digest else {
            throw ApiError(.idempotencyConflict, "This Idempotency-Key was already used for a different request.")
        }
        return stored
    }

    private static func stored(_ a: KeptAnswer, _ scope: IdempotencyScope) -> StoredAnswer {
        StoredAnswer(status: a.status, location: a.location, body: Self.withoutSecrets(a.body),
                     requestDigest: scope.digest)
    }

    /// An answer as it is kept for replays: a new token, invitation link or webhook secret is
    /// shown once, never kept in an answer, so it is left out (`tokenOmitted`,
    /// `invitationUrlOmitted`, `secretOmitted: true` tell a client that retried to make a new one).
    static func withoutSecrets(_ body: [UInt8]) -> [UInt8] {
        let secrets = ["token", "invitationUrl", "secret"]
        guard case .object(var o)? = try? JSONParser.parse(body), secrets.contains(where: { o[$0] != nil }) else { return body }
        for secret in secrets where o[secret] != nil {
            o[secret] = nil
            o[secret + "Omitted"] = .bool(true)
        }
        return CanonicalJSON.encode(.object(o))
    }
}

extension WriteGate.Outcome {
    /// The value, whether written now or found already written.
    public var value: T {
        switch self {
        case .written(let v), .replayed(let v): v
        }
    }
}
