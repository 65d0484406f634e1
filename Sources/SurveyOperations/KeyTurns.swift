import Foundation
import SurveyDomain
import SurveyStorage

/// Requests with the same idempotency key take turns, so a second one waits for the first and
/// gets its answer; a caller may have at most `limit` keyed requests in flight (1030 past it).
public final class KeyTurns: @unchecked Sendable {
    // @unchecked: the two collections are guarded by `cond`.
    private let cond = NSCondition()
    private var inFlight: Set<String> = []
    private var perCaller: [String: Int] = [:]
    public let limit: Int

    public init(limit: Int) { self.limit = limit }

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
}
