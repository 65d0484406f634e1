import Testing
@testable import SurveyDomain
@testable import SurveyForms

/// Only real RFC 3339 date-times are accepted, and only years 0001–9999 are rendered.
@Suite struct TimestampTests {
    @Test func impossibleDatesAndOffsetsAreRefused() {
        for bad in ["2024-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2024-06-31T00:00:00Z",
                    "2024-01-01T24:00:00Z", "2024-01-01T23:60:00Z", "2024-01-01T23:59:60Z",
                    "2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00-00:60", "2024-01-01T00:00:00+99:99",
                    "0000-06-01T00:00:00Z", "0001-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01"] {
            #expect(Timestamp.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func realDatesAtTheEdgesAreAccepted() {
        #expect(Timestamp.parse("2000-02-29T00:00:00Z") != nil)
        #expect(Timestamp.parse("2024-02-29T23:59:59.999Z") != nil)
        #expect(Timestamp.parse("2024-01-01T00:00:00+23:59") == Timestamp.parse("2023-12-31T00:01:00Z"))
        #expect(Timestamp.parse("0001-01-01T00:00:00Z") == Timestamp.minMillis)
        #expect(Timestamp.parse("9999-12-31T23:59:59.999Z") == Timestamp.maxMillis)
    }

    @Test func formattingStaysWithinFourDigitYears() {
        #expect(Timestamp.format(Timestamp.minMillis) == "0001-01-01T00:00:00.000Z")
        #expect(Timestamp.format(Timestamp.maxMillis) == "9999-12-31T23:59:59.999Z")
        #expect(Timestamp.format(Timestamp.minMillis - 3_600_000) == "0001-01-01T00:00:00.000Z")
        #expect(Timestamp.format(.max) == "9999-12-31T23:59:59.999Z")
        for s in ["2024-02-29T12:34:56.789Z", "1970-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z"] {
            #expect(Timestamp.format(Timestamp.parse(s)!) == s)
        }
    }
}
