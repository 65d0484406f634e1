import Foundation
import SurveyDomain
import SurveyStorage

/// Requests with the same idempotency key take turns, so a second one waits for the first and
/// gets its answer; a caller may have at most `limit` keyed requests in flight (1030 past it) —
/// in this process, and with `shared` (PostgreSQL) across every process of the database.
public final class KeyTurns: @unchecked Sendable {
    // @unchecked: the three collections are guarded by `cond`.
    private let cond = NSCondition()
    private var inFlight: Set<String> = []
    private var perCaller: [String: Int] = [:]
    private var claims: [String: String] = [:]
    private var waiting = 0
    private let shared: KeyedInFlight?
    public let limit: Int

    public init(limit: Int, shared: KeyedInFlight? = nil) {
        self.limit = limit
        self.shared = shared
    }

    private func refusal() -> ApiError {
        ApiError(.tooManyPendingRequests, "You have \(limit) keyed requests in flight; retry later.", retryAfterSeconds: 1)
    }

    private static func slot(_ s: IdempotencyScope) -> String {
        [s.orgId, s.caller, s.method, s.route, s.target, s.key].joined(separator: "\u{0}")
    }

    /// Keyed requests in this process holding their key's turn, and those waiting for a key
    /// another request holds (what is in flight at once, for tests to wait on).
    public var occupancy: (holding: Int, waiting: Int) {
        cond.lock()
        defer { cond.unlock() }
        return (inFlight.count, waiting)
    }

    func enter(_ s: IdempotencyScope) throws {
        cond.lock()
        guard perCaller[s.caller, default: 0] < limit else {
            cond.unlock()
            throw refusal()
        }
        perCaller[s.caller, default: 0] += 1
        let slot = Self.slot(s)
        if inFlight.contains(slot) {
            waiting += 1
            while inFlight.contains(slot) { cond.wait() }
            waiting -= 1
        }
        inFlight.insert(slot)
        cond.unlock()
        guard let shared else { return }
        // Counted across processes too, outside the lock (it is a write to the database).
        let claim: String?
        do { claim = try shared.claim(caller: s.caller, limit: limit) } catch {
            leave(s)
            throw error
        }
        guard let claim else {
            leave(s)
            throw refusal()
        }
        cond.lock()
        claims[slot] = claim
        cond.unlock()
    }

    func leave(_ s: IdempotencyScope) {
        cond.lock()
        let claim = claims.removeValue(forKey: Self.slot(s))
        inFlight.remove(Self.slot(s))
        perCaller[s.caller, default: 1] -= 1
        if perCaller[s.caller] == 0 { perCaller[s.caller] = nil }
        cond.broadcast()
        cond.unlock()
        if let claim { shared?.release(claim) }
    }
}
