import Testing
@testable import SurveyWebhooks

/// A receiver's `Retry-After`, as seconds or an HTTP date: never a trap, never past the cap.
@Suite struct RetryAfterTests {
    static let now: Int64 = 1_796_000_000_000  // Mon, 30 Nov 2026 00:53:20 GMT

    @Test func secondsAreHonouredUpToTheCap() {
        #expect(RetrySchedule.retryAfterMillis("120", now: Self.now) == 120_000)
        #expect(RetrySchedule.retryAfterMillis(" 0 ", now: Self.now) == 0)
        for huge in ["36001", "9223372036854775807", "9300000000000000", "99999999999999999999999"] {
            #expect(RetrySchedule.retryAfterMillis(huge, now: Self.now) == RetrySchedule.maxRetryAfterMillis, "\(huge)")
        }
        #expect(RetrySchedule.retryAfterMillis("-5", now: Self.now) == nil)
    }

    @Test func anHTTPDateIsTheWaitUntilThen() {
                #expect(RetrySchedule.httpDateMillis("Mon, 30 Nov 2026 00:53:20 GMT") == 1_796_000_000_000)
        #expect(RetrySchedule.httpDateMillis("Mon, 30 Feb 2026 18:13:20 GMT") == nil)  // no such day
        #expect(RetrySchedule.retryAfterMillis("Mon, 30 Nov 2026 00:54:20 GMT", now: Self.now) == 60_000)
        #expect(RetrySchedule.retryAfterMillis("Mon, 30 Nov 2026 00:00:00 GMT", now: Self.now) == 0)  // past: at once
        #expect(RetrySchedule.retryAfterMillis("Fri, 31 Dec 9999 23:59:59 GMT", now: Self.now) == RetrySchedule.maxRetryAfterMillis)
        for bad in ["Mon, 30 Nov 2026 18:13:20 UTC", "30 Nov 2026 18:13:20 GMT", "Mon, 30 Nov 2026 18:13:20 GMT junk", "soon"] {
            #expect(RetrySchedule.retryAfterMillis(bad, now: Self.now) == nil, "\(bad)")
        }
    }

    /// Foundation's DateFormatter trapped ("Incorrect range") on these, found by fuzzing: a
    /// receiver could stop the dispatcher with one header.
    @Test func textThatStoppedTheDateParserIsRefused() {
        let found = String(decoding: [0x6D, 0xCD, 0x92, 0xBD, 0xDB] as [UInt8], as: UTF8.self)
        #expect(RetrySchedule.retryAfterMillis(found, now: Self.now) == nil)
        #expect(RetrySchedule.retryAfterMillis("Mon\u{301}, 01 Jan 2026 00:00:00 GMT", now: Self.now) == nil)
    }
}
