import Foundation

/// When a failed delivery is tried again: after the n-th failed attempt, the n-th delay (with
/// ±10 % jitter, so receivers that went down together are not hit together when they come
/// back); past the last delay the delivery is abandoned. A receiver's `Retry-After` replaces
/// the delay (at most 10 h).
public struct RetrySchedule: Sendable, Equatable {
    public let delaysMillis: [Int64]

    public init(delaysMillis: [Int64]) { self.delaysMillis = delaysMillis }

    /// About 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then every 10 h: 3.6 days in all, 3.2 at the
    /// least the jitter can make it.
    public static let standard = RetrySchedule(delaysMillis: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000]
                                                   + Array(repeating: 36_000_000, count: 8))
    public static let maxRetryAfterMillis: Int64 = 36_000_000

    /// "5s,5m,30m,2h": numbers with a unit (ms, s, m, h), comma-separated; nil if unreadable.
    public static func parse(_ text: String) -> RetrySchedule? {
        var delays: [Int64] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let p = part.trimmingCharacters(in: .whitespaces)
            let units: [(String, Int64)] = [("ms", 1), ("s", 1_000), ("m", 60_000), ("h", 3_600_000)]
            guard let (suffix, scale) = units.first(where: { p.hasSuffix($0.0) }),
                  let n = Int64(p.dropLast(suffix.count)), n >= 0, n <= 100_000_000 else { return nil }
            delays.append(n * scale)
        }
        return delays.isEmpty ? nil : RetrySchedule(delaysMillis: delays)
    }

    /// When to try again after `failedAttempts` attempts have failed, or nil: abandon.
    public func nextAttempt(afterFailedAttempts failedAttempts: Int, now: Int64, retryAfterMillis: Int64? = nil) -> Int64? {
        guard failedAttempts >= 1, failedAttempts <= delaysMillis.count else { return nil }
        if let retryAfterMillis { return now + min(max(retryAfterMillis, 0), Self.maxRetryAfterMillis) }
        let delay = Double(delaysMillis[failedAttempts - 1]) * Double.random(in: 0.9...1.1)
        return now + Int64(delay)
    }

    /// `Retry-After` as seconds or an HTTP date, in milliseconds from `now`, never more than
    /// `maxRetryAfterMillis` (a receiver's value is untrusted: a huge one must not overflow).
    public static func retryAfterMillis(_ value: String, now: Int64) -> Int64? {
        let v = value.trimmingCharacters(in: .whitespaces)
        if v.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), !v.isEmpty {
            // Digits only (RFC 9110 delay-seconds); more digits than an Int64 holds is "very long".
            guard let seconds = Int64(v), seconds <= maxRetryAfterMillis / 1_000 else { return maxRetryAfterMillis }
            return seconds * 1_000
        }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = f.date(from: v) else { return nil }
        let millis = date.timeIntervalSince1970 * 1_000 - Double(now)
        guard millis.isFinite else { return nil }
        return Int64(min(max(millis, 0), Double(maxRetryAfterMillis)))
    }
}
