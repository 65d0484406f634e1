import SurveyDomain
import SurveyStorage

/// How a door asks for a write to be idempotent (the `Idempotency-Key` of the API). The key is
/// scoped to the organization, the caller, the door's name for the operation (`method` and
/// `route`) and its target; the first answer is kept in the write's own transaction and a retry
/// gets it back, marked as a replay.
public struct IdempotencyKey<Value: Sendable>: Sendable {
    /// The key as the client sent it, bare or quoted; 1032 when it breaks the identifier format.
    public let raw: String
    public let method: String
    public let route: String
    /// What a retry is compared by: a different request under the same key is 1004.
    public let digest: String
    /// The door's answer to a written value, as it is kept for replays.
    public let answer: @Sendable (Value) throws -> KeptAnswer

    public init(raw: String, method: String, route: String, digest: String, answer: @escaping @Sendable (Value) throws -> KeptAnswer) {
        self.raw = raw; self.method = method; self.route = route; self.digest = digest; self.answer = answer
    }

    /// The key's format: 1032 unless 8–128 characters of the identifier alphabet.
    public static func normalized(_ raw: String) throws -> String {
        guard let key = ClientIdentifier.normalize(headerValue: raw) else {
            throw ApiError(.invalidIdentifier, "Idempotency-Key must be 8–128 characters of A-Z a-z 0-9 _ - : . (optionally quoted).")
        }
        return key
    }

    func scope(orgId: String, caller: String, target: String) throws -> IdempotencyScope {
        IdempotencyScope(orgId: orgId, caller: caller, method: method, route: route, target: target, key: try Self.normalized(raw), digest: digest)
    }
}

/// A door's answer as it is kept under a key.
public struct KeptAnswer: Sendable {
    public let status: Int
    public let location: String?
    public let body: [UInt8]
    public init(status: Int, location: String?, body: [UInt8]) { self.status = status; self.location = location; self.body = body }
}

/// What a keyed write did.
public enum KeyedOutcome<Value: Sendable>: Sendable {
    case written(Value)
    /// A retry: the answer kept under the key the first time (nothing was done again).
    case replayed(StoredAnswer)
}

/// For operations whose answer has no content (a revocation, a deactivation).
public struct Done: Sendable {
    public init() {}
}

extension KeyedOutcome {
    /// The value of a write made without a key (a console form): it cannot be a replay.
    public func unkeyed() throws -> Value {
        guard case .written(let v) = self else { throw ApiError(.internalError, "A write without a key answered a replay.") }
        return v
    }
}
