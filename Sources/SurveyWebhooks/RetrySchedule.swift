import Foundation
import SurveyDomain

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
        guard let then = httpDateMillis(v) else { return nil }
        let (wait, overflow) = then.subtractingReportingOverflow(now)
        guard !overflow else { return nil }
        return min(max(wait, 0), maxRetryAfterMillis)
    }

    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// An HTTP date (RFC 9110 IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, the form senders
    /// must use) in milliseconds since the epoch: its fixed places rewritten as RFC 3339 for
    /// `Timestamp.parse`, which checks the date is real. Not Foundation's `DateFormatter`: it
    /// traps on some non-ASCII text (a parse ending inside a character, found by fuzzing), and
    /// this text comes from a receiver. Anything but ASCII of exactly that form is nil.
    static func httpDateMillis(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count == 29, b.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }),
              b[3] == UInt8(ascii: ","), b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20, b[19] == UInt8(ascii: ":"),
              b[22] == UInt8(ascii: ":"), String(decoding: b[25...], as: UTF8.self) == " GMT",
              let month = months.firstIndex(of: String(decoding: b[8..<11], as: UTF8.self)) else { return nil }
        let digits = [5, 6, 12, 13, 14, 15, 17, 18, 20, 21, 23, 24]
        guard digits.allSatisfy({ b[$0] >= 0x30 && b[$0] <= 0x39 }) else { return nil }
        let part = { (r: Range<Int>) in String(decoding: b[r], as: UTF8.self) }
        let month2 = month + 1 < 10 ? "0\(month + 1)" : "\(month + 1)"
        return Timestamp.parse("\(part(12..<16))-\(month2)-\(part(5..<7))T\(part(17..<19)):\(part(20..<22)):\(part(23..<25))Z")
    }
}
