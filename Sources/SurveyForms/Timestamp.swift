import Foundation

/// Server time in milliseconds since the epoch, rendered as RFC 3339 UTC with milliseconds.
public enum Timestamp {
    public static func nowMillis() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// `ms` is clamped to years 0001–9999, the range `parse` accepts.
    public static func format(_ ms: Int64) -> String {
        let ms = min(max(ms, minMillis), maxMillis)
        var secs = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
        let milli = Int(ms - Int64(secs) * 1000)
        var t = tm()
        gmtime_r(&secs, &t)
        // Digits by hand: String(format:) went through CFString and cost ~3 % of a request's CPU.
        var out = [UInt8](repeating: 0, count: 24)
        func put(_ v: Int, _ at: Int, _ width: Int) {
            var v = v
            for k in stride(from: at + width - 1, through: at, by: -1) { out[k] = UInt8(48 + v % 10); v /= 10 }
        }
        put(Int(t.tm_year) + 1900, 0, 4); out[4] = 45
        put(Int(t.tm_mon) + 1, 5, 2); out[7] = 45
        put(Int(t.tm_mday), 8, 2); out[10] = 84
        put(Int(t.tm_hour), 11, 2); out[13] = 58
        put(Int(t.tm_min), 14, 2); out[16] = 58
        put(Int(t.tm_sec), 17, 2); out[19] = 46
        put(milli, 20, 3); out[23] = 90
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses RFC 3339 / ISO 8601 date-times with a Z or ±hh:mm offset and optional fraction.
    public static func parse(_ s: String) -> Int64? {
        let b = Array(s.utf8)
        func num(_ i: Int, _ n: Int) -> Int? {
            guard i + n <= b.count else { return nil }
            var v = 0
            for k in i..<(i + n) { guard b[k] >= 48 && b[k] <= 57 else { return nil }; v = v * 10 + Int(b[k] - 48) }
            return v
        }
        guard b.count >= 20, let y = num(0, 4), b[4] == 45, let mo = num(5, 2), b[7] == 45, let d = num(8, 2),
              b[10] == 84 || b[10] == 116, let h = num(11, 2), b[13] == 58, let mi = num(14, 2), b[16] == 58,
              let se = num(17, 2) else { return nil }
        // A real calendar date and time of day: no 31 February, no hour 24, no second 60 (a leap
        // second cannot be told from a typo here, and accepting it shifted the time silently).
        guard (1...12).contains(mo), d >= 1, d <= daysIn(month: mo, year: y), h < 24, mi < 60, se < 60 else { return nil }
        var i = 19
        var millis = 0
        if i < b.count && b[i] == 46 {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48 && b[i] <= 57 {
                if digits < 3 { millis = millis * 10 + Int(b[i] - 48) }
                digits += 1; i += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 { for _ in digits..<3 { millis *= 10 } }
        }
        guard i < b.count else { return nil }
        var offset = 0
        if b[i] == 90 || b[i] == 122 { i += 1 } else if b[i] == 43 || b[i] == 45 {
            guard let oh = num(i + 1, 2), b.count > i + 3, b[i + 3] == 58, let om = num(i + 4, 2), oh < 24, om < 60 else { return nil }
            offset = (oh * 60 + om) * (b[i] == 45 ? -1 : 1)
            i += 6
        } else { return nil }
        guard i == b.count else { return nil }
        // days from civil (Howard Hinnant's algorithm)
        let yy = mo <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146097 + doe - 719468
        let secs = Int64(days) * 86400 + Int64(h * 3600 + mi * 60 + se) - Int64(offset * 60)
        let ms = secs * 1000 + Int64(millis)
        // Only instants whose UTC year has four digits (0001–9999) round-trip through `format`.
        guard ms >= minMillis, ms <= maxMillis else { return nil }
        return ms
    }

    /// 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
    public static let minMillis: Int64 = -62_135_596_800_000
    public static let maxMillis: Int64 = 253_402_300_799_999

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
