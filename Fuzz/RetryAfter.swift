// fuzz-sources: Sources/SurveyWebhooks/RetrySchedule.swift
//
// A webhook receiver's `Retry-After` (seconds or an HTTP date) and what the dispatcher makes
// of it, plus the `--webhook-retries` schedule syntax. RetrySchedule.swift is compiled in as
// it is (SurveyWebhooks links libcurl and the storage). Property: no trap, and the next attempt
// stays within the 10 h cap.
import Foundation

private let now: Int64 = 1_796_000_000_000  // 2026-11-30T00:53:20Z

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let s = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let schedule = RetrySchedule.parse(s) {
        for attempt in 1...(schedule.delaysMillis.count + 1) {
            _ = schedule.nextAttempt(afterFailedAttempts: attempt, now: now)
        }
    }
    if let ms = RetrySchedule.retryAfterMillis(s, now: now) {
        guard let next = RetrySchedule.standard.nextAttempt(afterFailedAttempts: 1, now: now, retryAfterMillis: ms),
              next >= now, next <= now + RetrySchedule.maxRetryAfterMillis else { fatalError("Retry-After \(s): \(ms)") }
    }
    return 0
}
