import Foundation
import Synchronization

/// Failed sign-ins counted per account (email) and per address: after `limit` failures within
/// `window`, further attempts are refused until the window has passed — whether or not the
/// password would be right, so guessing gains nothing. Memory only: a restart forgets, which
/// costs an attacker a restart they cannot cause.
public final class SignInThrottle: Sendable {
    public let limit: Int
    public let windowMillis: Int64
    private let failures = Mutex<[String: [Int64]]>([:])

    public init(limit: Int = 10, windowMillis: Int64 = 15 * 60 * 1000) {
        self.limit = limit
        self.windowMillis = windowMillis
    }

    /// Seconds until `keys` may try again, or nil when they may now.
    public func retryAfter(_ keys: [String], now: Int64) -> Int? {
        failures.withLock { f in
            var wait: Int64 = 0
            for k in keys {
                let recent = (f[k] ?? []).filter { $0 > now - windowMillis }
                f[k] = recent.isEmpty ? nil : recent
                if recent.count >= limit, let oldest = recent.first { wait = max(wait, oldest + windowMillis - now) }
            }
            return wait > 0 ? Int((wait + 999) / 1000) : nil
        }
    }

    public func fail(_ keys: [String], now: Int64) {
        failures.withLock { f in
            if f.count > 100_000 { f.removeAll() }  // a flood of addresses must not grow memory without bound
            for k in keys { f[k, default: []].append(now) }
        }
    }
}
