// fuzz-sources: Sources/SurveyWebhooks/RetrySchedule.swift
//
// A webhook receiver's `Retry-After` (seconds or an HTTP date) and what the dispatcher makes
// of it, plus the `--webhook-retries` schedule syntax. RetrySchedule.swift is compiled in as
// it is (SurveyWebhooks links libcurl and the storage). Property: no trap, and the next attempt
// stays within the 10 h cap.
import Foundation

private let now: Int64 = 1_796_000_000_000  // 2026-12-02

/// Set FUZZ_SKIP_KNOWN_TRAPS=1 to leave out the two kinds of value that trap in RetrySchedule.swift
/// until it is fixed, so that everything else is still fuzzed: whole seconds beyond
/// Int64.max / 1000 (`seconds * 1_000`), and non-ASCII text, which DateFormatter.date(from:)
/// traps on when its parse ends inside a character ("Mon\u{301}, 01 Jan 2026 00:00:00 GMT").
private let skipKnownTraps = ProcessInfo.processInfo.environment["FUZZ_SKIP_KNOWN_TRAPS"] == "1"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let s = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let schedule = RetrySchedule.parse(s) {
        for attempt in 1...(schedule.delaysMillis.count + 1) {
            _ = schedule.nextAttempt(afterFailedAttempts: attempt, now: now)
        }
    }
    if skipKnownTraps {
        let v = s.trimmingCharacters(in: .whitespaces)
        if let n = Int64(v), n > Int64.max / 1000 || n < Int64.min / 1000 { return 0 }
        if !v.utf8.allSatisfy({ $0 < 0x80 }) { return 0 }
    }
    if let ms = RetrySchedule.retryAfterMillis(s, now: now) {
        guard let next = RetrySchedule.standard.nextAttempt(afterFailedAttempts: 1, now: now, retryAfterMillis: ms),
              next >= now, next <= now + RetrySchedule.maxRetryAfterMillis else { fatalError("Retry-After \(s): \(ms)") }
    }
    return 0
}
