/// The proleptic Gregorian calendar in UTC, for the date values of the language: days since
/// 1970-01-01 from and to `YYYY-MM-DD[THH:MM[:SS[.fff]][Z|±HH:MM]]`, and `format-date`.
/// Integer arithmetic only on values already bounded to years 0001-9999, so nothing overflows.
enum CivilDate {
    /// 0001-01-01 and 9999-12-31 as days since 1970-01-01.
    static let minDays = -719_162
    static let maxDays = 2_932_896

    /// Hinnant's days_from_civil.
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Hinnant's civil_from_days; `days` must lie within minDays...maxDays.
    static func civil(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// A day and the milliseconds into it, or nil when `days` is not a representable instant.
    static func split(_ days: Double) -> (day: Int, millis: Int)? {
        guard days.isFinite, days >= Double(minDays), days < Double(maxDays + 1) else { return nil }
        let whole = days.rounded(.down)
        var day = Int(whole)
        var millis = Int(((days - whole) * 86_400_000).rounded())
        if millis >= 86_400_000 {
            day += 1
            millis -= 86_400_000
        }
        guard day <= maxDays else { return nil }
        return (day, millis)
    }

    /// `YYYY-MM-DD` for a whole day, `YYYY-MM-DDTHH:MM:SS.sssZ` otherwise; a value outside years
    /// 0001-9999 (or NaN) is written as the number it is.
    static func format(days: Double) -> String {
        guard let (day, millis) = split(days) else { return Value.format(days) }
        let (y, m, d) = civil(day)
        var out = pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2)
        if millis != 0 || days != days.rounded(.down) {
            out += "T" + pad(millis / 3_600_000, 2) + ":" + pad(millis / 60_000 % 60, 2) + ":"
                + pad(millis / 1000 % 60, 2) + "." + pad(millis % 1000, 3) + "Z"
        }
        return out
    }

    private static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    // MARK: - Parsing

    /// Days since 1970-01-01 of an ISO 8601 date or date-time as XForms writes them; a time
    /// without an offset is read as UTC. nil when the text is not one, or not a calendar day.
    static func days(fromISO text: ArraySlice<UInt8>) -> Double? {
        var p = Reader(bytes: text)
        guard let year = p.digits(4), p.take("-"), let month = p.digits(2), p.take("-"), let day = p.digits(2),
              (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month), year >= 1
        else { return nil }
        let date = Double(days(year: year, month: month, day: day))
        if p.atEnd { return date }
        guard p.take("T"), let hour = p.digits(2), p.take(":"), let minute = p.digits(2), hour < 24, minute < 60
        else { return nil }
        var seconds = Double(hour * 3600 + minute * 60)
        if p.take(":") {
            guard let second = p.digits(2), second < 60 else { return nil }
            seconds += Double(second)
            if p.take(".") {
                var scale = 0.1
                var any = false
                while let digit = p.digit() {
                    seconds += Double(digit) * scale
                    scale /= 10
                    any = true
                }
                guard any else { return nil }
            }
        }
        if p.take("Z") {
            // UTC
        } else if let sign = p.sign() {
            guard let oh = p.digits(2), oh <= 18 else { return nil }
            var om = 0
            if p.take(":") {
                guard let m = p.digits(2) else { return nil }
                om = m
            } else if let m = p.digits(2) {
                om = m
            }
            guard om < 60 else { return nil }
            seconds -= Double(sign * (oh * 3600 + om * 60))
        }
        guard p.atEnd else { return nil }
        return date + seconds / 86_400
    }

    private struct Reader {
        var bytes: ArraySlice<UInt8>
        var atEnd: Bool { bytes.isEmpty }

        mutating func take(_ c: Unicode.Scalar) -> Bool {
            guard let b = bytes.first, b == UInt8(ascii: c) else { return false }
            bytes = bytes.dropFirst()
            return true
        }

        mutating func digit() -> Int? {
            guard let b = bytes.first, b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") else { return nil }
            bytes = bytes.dropFirst()
            return Int(b - UInt8(ascii: "0"))
        }

        mutating func digits(_ n: Int) -> Int? {
            var value = 0
            for _ in 0..<n {
                guard let d = digit() else { return nil }
                value = value * 10 + d
            }
            return value
        }

        mutating func sign() -> Int? {
            if take("+") { return 1 }
            if take("-") { return -1 }
            return nil
        }
    }

    // MARK: - format-date

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    /// The ODK specification's `format-date`/`format-date-time` identifiers (`%Y %y %m %n %b %d
    /// %e %a %H %h %M %S %3`), in UTC, English names; any other `%x` is kept as written.
    static func format(days: Double, pattern: String) -> String? {
        guard let (day, millis) = split(days) else { return nil }
        let (y, m, d) = civil(day)
        var out = ""
        var iterator = pattern.unicodeScalars.makeIterator()
        while let c = iterator.next() {
            guard c == "%" else {
                out.unicodeScalars.append(c)
                continue
            }
            guard let f = iterator.next() else {
                out += "%"
                break
            }
            switch f {
            case "Y": out += pad(y, 4)
            case "y": out += pad(y % 100, 2)
            case "m": out += pad(m, 2)
            case "n": out += String(m)
            case "b": out += months[m - 1]
            case "d": out += pad(d, 2)
            case "e": out += String(d)
            case "a": out += weekdays[((day % 7) + 11) % 7]
            case "H": out += pad(millis / 3_600_000, 2)
            case "h": out += String(millis / 3_600_000)
            case "M": out += pad(millis / 60_000 % 60, 2)
            case "S": out += pad(millis / 1000 % 60, 2)
            case "3": out += pad(millis % 1000, 3)
            default:
                out += "%"
                out.unicodeScalars.append(f)
            }
        }
        return out
    }
}
