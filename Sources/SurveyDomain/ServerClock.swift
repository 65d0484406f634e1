import Synchronization

/// Server time, which decides every expiry (subscriptions, resumable uploads, console sessions).
/// Injected, so that a test moves time instead of sleeping or writing dates in the past.
public protocol ServerClock: Sendable {
    func nowMillis() -> Int64
}

/// The real clock (CLOCK_REALTIME).
public struct SystemClock: ServerClock {
    public init() {}
    public func nowMillis() -> Int64 { Timestamp.nowMillis() }
}

/// A clock that moves only when told to (tests).
public final class ManualClock: ServerClock {
    private let now: Mutex<Int64>
    public init(startingAt millis: Int64 = Timestamp.nowMillis()) { now = Mutex(millis) }
    public func nowMillis() -> Int64 { now.withLock { $0 } }
    public func advance(byMillis delta: Int64) { now.withLock { $0 += delta } }
}
