import Foundation

/// How the engine paces itself. The defaults are the contract's: 30 s doubling to 10 minutes with
/// jitter, Retry-After honoured, a couple of requests at a time.
public struct SyncConfiguration: Sendable {
    public var initialBackoff: TimeInterval = 30
    public var maxBackoff: TimeInterval = 600
    /// Requests in flight at once (phones on poor links do better with few).
    public var maxConcurrentRequests = 2
    /// Entity lists of the signed-in person's organization the phone keeps a copy of, by name:
    /// each pass downloads the ones that changed after sending (`Outbox.entities(in:)`).
    public var entityLists: [String] = []
    /// Bytes per tus PATCH.
    public var uploadChunkSize = 1 << 20
    /// A draw in 0..<1 for jitter; tests fix it.
    public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
    /// Called after an answer arrived and before it is recorded. For tests and demos that kill the
    /// process in exactly that gap; apps leave it nil.
    public var beforeRecordingAnswer: (@Sendable (OutboxCommand) -> Void)?

    public init() {}

    /// The wait before attempt `attempts + 1`: initialBackoff · 2^(attempts−1), capped, plus a
    /// random 0–100 % of it (capped again), so a thousand phones do not come back together.
    func backoff(afterAttempts attempts: Int) -> TimeInterval {
        let exponent = Double(max(0, min(attempts - 1, 30)))
        let base = min(maxBackoff, initialBackoff * pow(2, exponent))
        return min(maxBackoff, base * (1 + random()))
    }
}
