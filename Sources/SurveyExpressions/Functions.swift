// The C library's math functions (pow, log, sin, ...): part of every platform, not a package.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(ucrt)
import ucrt
#endif

/// The built-in functions. Each follows the ODK XForms specification, and JavaRosa
/// (XPathFuncExpr) where the specification leaves a case open; a function never throws for a
/// value it does not like, it answers NaN or the empty string as XPath does.
extension Evaluator {
    /// A function of fixed arity, given its evaluated arguments (`if` and `coalesce` are jumps
    /// of the program, never called).
    mutating func call(_ function: Function, _ a: Value, _ b: Value, _ c: Value, count: Int) throws(ExpressionError) -> Value {
        switch function {
        case .today, .now, .random, .uuid, .once, .indexedRepeat, .choiceName, .digest, .area, .distance, .version, .randomize,
             .base64Decode, .checklist, .weightedChecklist:
            // Expression.evaluate refuses these before evaluating anything.
            throw ExpressionError("\(function.name)() depends on the moment and the device", offset: offset, kind: .dependsOnMoment)
        case .pulldata:
            // The parser makes every pulldata call a lookup; none reaches here.
            return .string("")
        default:
            return try strict(function, a, b, c, count: count)
        }
    }

    /// concat, join, min, max: any number of arguments, node-sets taken item by item.
    mutating func variadic(_ function: Function, _ args: ArraySlice<Value>) throws(ExpressionError) -> Value {
        var joined = Joined(separator: nil)
        var best = Double.nan
        for (i, value) in args.enumerated() {
            if function == .join && i == 0 {
                joined.separator = value.asString
            } else if function == .concat || function == .join {
                try append(value, to: &joined)
            } else {
                best = try extreme(value, best, max: function == .max)
            }
        }
        return function == .min || function == .max ? .number(best) : .string(joined.text)
    }

    /// A string being built by concat or join.
    struct Joined {
        var separator: String?
        var text = ""
        var empty = true
    }

    private mutating func append(_ value: Value, to joined: inout Joined) throws(ExpressionError) {
        for item in try items(value) {
            if !joined.empty, let separator = joined.separator { try grow(&joined.text, by: separator) }
            joined.empty = false
            try grow(&joined.text, by: item.asString)
        }
    }

    /// XPath 3.0 min/max over all items, NaN items left out as JavaRosa does (NaN when nothing
    /// is left; JavaRosa's max starts from Double.MIN_VALUE, which this does not copy).
    private mutating func extreme(_ value: Value, _ best: Double, max: Bool) throws(ExpressionError) -> Double {
        var best = best
        for item in try items(value) {
            let x = try number(item)
            if x.isNaN { continue }
            if best.isNaN || (max ? x > best : x < best) { best = x }
        }
        return best
    }

    /// Every function whose arguments are all evaluated, given their values.
    @inline(never)
    private mutating func strict(_ function: Function, _ a: Value, _ b: Value, _ c: Value, count: Int) throws(ExpressionError) -> Value {
        switch function {
        // MARK: Select
        case .selected, .isSelected:
            // JavaRosa multiSelected: (" " + list + " ") contains (" " + trim(value) + " ").
            let list = a.asString
            let choice = Evaluator.javaTrim(b.asString)
            try charge(list.utf8.count &+ choice.utf8.count)
            return .boolean(TextSearch.firstOffset(of: " " + choice + " ", in: " " + list + " ") != nil)
        case .countSelected:
            let list = a.asString
            try charge(list.utf8.count)
            return .number(Double(Evaluator.choices(list).count))
        case .selectedAt:
            let list = a.asString
            let index = Evaluator.javaInt(try number(b))
            try charge(list.utf8.count)
            let choices = Evaluator.choices(list)
            return .string(index >= 0 && index < choices.count ? choices[index] : "")

        // MARK: Boolean
        case .not:
            return .boolean(!a.asBoolean)
        case .true:
            return .boolean(true)
        case .false:
            return .boolean(false)
        case .boolean:
            return .boolean(a.asBoolean)
        case .booleanFromString:
            // JavaRosa boolStr: "true" in any case, or "1".
            let text = a.asString
            return .boolean(text == "1" || (text.utf8.count == 4 && text.lowercased() == "true"))
        case .regex:
            let pattern = b.asString
            try charge(pattern.utf8.count)
            let program: RegexProgram
            do {
                program = try RegexProgram(pattern)
            } catch {
                throw ExpressionError("regex pattern from a value: \(error.message) at \(error.offset) in the pattern",
                                      offset: offset, kind: error.isLimit ? .limit : .evaluation)
            }
            return .boolean(try match(program, a.asString))

        // MARK: String
        case .string:
            return .string(a.asString)
        case .stringLength:
            let text = count == 0 ? current.asString : a.asString
            try charge(text.utf8.count)
            return .number(Double(TextSearch.scalarCount(text)))
        case .contains:
            let (text, part) = (a.asString, b.asString)
            try charge(text.utf8.count &+ part.utf8.count)
            return .boolean(TextSearch.firstOffset(of: part, in: text) != nil)
        case .startsWith:
            let part = b.asString
            try charge(part.utf8.count)
            return .boolean(TextSearch.hasPrefix(a.asString, part))
        case .endsWith:
            let part = b.asString
            try charge(part.utf8.count)
            return .boolean(TextSearch.hasSuffix(a.asString, part))
        case .substr:
            return .string(try substr(a, b, count > 2 ? c : nil))
        case .substringBefore, .substringAfter:
            let (text, part) = (a.asString, b.asString)
            try charge(text.utf8.count &+ part.utf8.count)
            guard let at = TextSearch.firstOffset(of: part, in: text) else { return .string("") }
            let bytes = text.utf8
            let cut = bytes.index(bytes.startIndex, offsetBy: function == .substringBefore ? at : at + part.utf8.count)
            return .string(function == .substringBefore ? String(text[..<cut]) : String(text[cut...]))
        case .normalizeSpace:
            let text = count == 0 ? current.asString : a.asString
            try charge(text.utf8.count)
            return .string(Evaluator.normalizeSpace(text))
        case .translate:
            return .string(try translate(a.asString, b.asString, c.asString))

        // MARK: Number
        case .number:
            return .number(try number(a))
        case .int:
            return .number(Evaluator.truncate(try number(a)))
        case .round:
            let x = try number(a)
            let places = count > 1 ? Evaluator.javaInt(try number(b)) : 0
            return .number(Evaluator.round(x, places: places))
        case .floor:
            return .number(try number(a).rounded(.down))
        case .ceiling:
            return .number(try number(a).rounded(.up))
        case .abs:
            return .number(Swift.abs(try number(a)))
        case .pow:
            return .number(Evaluator.power(try number(a), try number(b)))
        case .sqrt:
            return .number(try number(a).squareRoot())
        case .exp:
            return .number(Evaluator.math(.exp, try number(a)))
        case .exp10:
            return .number(Evaluator.power(10, try number(a)))
        case .log:
            return .number(Evaluator.math(.log, try number(a)))
        case .log10:
            return .number(Evaluator.math(.log10, try number(a)))
        case .pi:
            return .number(Double.pi)
        case .sin:
            return .number(Evaluator.math(.sin, try number(a)))
        case .cos:
            return .number(Evaluator.math(.cos, try number(a)))
        case .tan:
            return .number(Evaluator.math(.tan, try number(a)))
        case .asin:
            return .number(Evaluator.math(.asin, try number(a)))
        case .acos:
            return .number(Evaluator.math(.acos, try number(a)))
        case .atan:
            return .number(Evaluator.math(.atan, try number(a)))
        case .atan2:
            return .number(Evaluator.arcTangent(try number(a), try number(b)))

        // MARK: Node-set
        case .count:
            return .number(Double(try items(a).count))
        case .countNonEmpty:
            var n = 0
            for item in try items(a) where !item.asString.isEmpty { n += 1 }
            return .number(Double(n))
        case .sum:
            // JavaRosa sum: items that are not numbers (empty answers) are left out.
            var total = 0.0
            for item in try items(a) {
                let x = try number(item)
                if !x.isNaN { total += x }
            }
            return .number(total)
        case .position:
            return .number(Double(position))

        // MARK: Date
        case .date:
            return Evaluator.toDate(a, keepTime: false)
        case .dateTime:
            return Evaluator.toDate(a, keepTime: true)
        case .decimalDateTime:
            switch Evaluator.toDate(a, keepTime: true) {
            case .date(let days): return .number(days)
            case .string(let text) where text.isEmpty: return .string("")
            default: return .number(.nan)
            }
        case .formatDate, .formatDateTime:
            let pattern = b.asString
            try charge(pattern.utf8.count)
            guard case .date(let days) = Evaluator.toDate(a, keepTime: true),
                  let text = CivilDate.format(days: days, pattern: pattern) else { return .string("") }
            var out = ""
            try grow(&out, by: text)
            return .string(out)

        // Handled by `call`.
        case .if, .coalesce, .concat, .join, .min, .max, .today, .now, .random, .uuid, .once, .pulldata,
             .indexedRepeat, .choiceName, .digest, .area, .distance, .version, .randomize, .base64Decode, .checklist, .weightedChecklist:
            return .string("")
        }
    }

    /// Appends within `ExpressionLimits.maxStringBytes`.
    private mutating func grow(_ out: inout String, by piece: String) throws(ExpressionError) {
        let n = piece.utf8.count
        guard out.utf8.count &+ n <= ExpressionLimits.maxStringBytes else {
            throw ExpressionError("the string built would be longer than \(ExpressionLimits.maxStringBytes) bytes",
                                  offset: offset, kind: .limit)
        }
        try charge(n)
        out += piece
    }

    mutating func match(_ program: RegexProgram, _ text: String) throws(ExpressionError) -> Bool {
        var budget = ExpressionLimits.maxEvaluationSteps - steps
        guard let matched = program.matches(text, entire: true, budget: &budget) else {
            throw ExpressionError("regex() takes more than \(ExpressionLimits.maxEvaluationSteps) steps", offset: offset, kind: .limit)
        }
        try charge(ExpressionLimits.maxEvaluationSteps - steps - budget)
        return matched
    }

    // MARK: - Strings

    /// Java's String.trim(): every character up to U+0020 off both ends.
    static func javaTrim(_ s: String) -> String {
        let scalars = s.unicodeScalars
        guard let first = scalars.firstIndex(where: { $0.value > 0x20 }),
              let last = scalars.lastIndex(where: { $0.value > 0x20 }) else { return "" }
        return String(scalars[first...last])
    }

    /// The choices of a select_multiple answer: split on spaces, empty pieces dropped
    /// (JavaRosa DateUtils.split with combineMultipleDelimiters).
    /// Split on the scalar U+0020, not on Characters: a space followed by a combining mark is
    /// one Character but still separates two choices.
    static func choices(_ list: String) -> [String] {
        list.unicodeScalars.split(separator: " ", omittingEmptySubsequences: true).map { String($0) }
    }

    /// XPath whitespace (and Java's \s: also VT and FF) trimmed, and each run of it made one space.
    static func normalizeSpace(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for c in s.unicodeScalars {
            switch c {
            case " ", "\t", "\n", "\r", "\u{0B}", "\u{0C}":
                pendingSpace = !out.isEmpty
            default:
                if pendingSpace { out.append(" ") }
                pendingSpace = false
                out.append(c)
            }
        }
        return String(out)
    }

    /// ODK's substr(value, start, end?): 0-based, end exclusive, negative counts from the end,
    /// both clamped into the string (JavaRosa XPathFuncExpr.substring), in code points.
    private mutating func substr(_ value: Value, _ startArgument: Value, _ endArgument: Value?) throws(ExpressionError) -> String {
        let s = value.asString
        let startValue = Evaluator.javaInt(Evaluator.truncate(try number(startArgument)))
        var endValue: Int?
        if let endArgument { endValue = Evaluator.javaInt(Evaluator.truncate(try number(endArgument))) }
        try charge(s.utf8.count)
        let scalars = s.unicodeScalars
        let length = scalars.count
        var start = startValue
        var end = endValue ?? length
        if start < 0 { start = length + start }
        if end < 0 { end = length + end }
        start = Swift.min(Swift.max(0, start), length)
        end = Swift.min(Swift.max(0, end), length)
        guard start < end else { return "" }
        let from = scalars.index(scalars.startIndex, offsetBy: start)
        let to = scalars.index(from, offsetBy: end - start)
        return String(scalars[from..<to])
    }

    /// XPath's translate: each code point found in `from` becomes the one at the same place in
    /// `to`, or is dropped when `to` is shorter; the first occurrence in `from` counts.
    private mutating func translate(_ s: String, _ fromText: String, _ toText: String) throws(ExpressionError) -> String {
        let from = Array(fromText.unicodeScalars)
        let to = Array(toText.unicodeScalars)
        try charge(s.utf8.count &+ from.count &+ to.count)
        var map: [Unicode.Scalar: Unicode.Scalar?] = [:]
        for (i, c) in from.enumerated() where map[c] == nil {
            map[c] = i < to.count ? .some(to[i]) : .some(nil)
        }
        var out = String.UnicodeScalarView()
        var bytes = 0
        for c in s.unicodeScalars {
            let replacement: Unicode.Scalar?
            if let mapped = map[c] { replacement = mapped } else { replacement = c }
            guard let r = replacement else { continue }
            bytes &+= UTF8.width(r)
            guard bytes <= ExpressionLimits.maxStringBytes else {
                throw ExpressionError("the string built would be longer than \(ExpressionLimits.maxStringBytes) bytes",
                                      offset: offset, kind: .limit)
            }
            out.append(r)
        }
        return String(out)
    }

    // MARK: - Numbers

    /// Java's (int) of a double: NaN is 0, out-of-range values saturate.
    static func javaInt(_ d: Double) -> Int {
        if d.isNaN { return 0 }
        if d >= 2_147_483_647 { return 2_147_483_647 }
        if d <= -2_147_483_648 { return -2_147_483_648 }
        return Int(d.rounded(.towardZero))
    }

    /// int(): the fractional part dropped; NaN and infinities stay (JavaRosa toInt).
    static func truncate(_ d: Double) -> Double {
        d.isFinite ? d.rounded(.towardZero) : d
    }

    /// round(x, places): JavaRosa's round, on the shortest decimal form of x (as Java's
    /// BigDecimal(Double.toString(x))): half up for positive x, half towards zero for negative
    /// (so XPath's round(-2.5) = -2); |places| > 30 is NaN. Negative places round to tens,
    /// hundreds, ... the same way.
    static func round(_ x: Double, places: Int) -> Double {
        guard x.isFinite, x != 0 else { return x }
        guard places <= 30, places >= -30 else { return .nan }
        var (digits, point) = Value.shortestDigits(Swift.abs(x))
        // Kept digits: those before position `keep`; a leading 0 absorbs a carry.
        digits.insert(UInt8(ascii: "0"), at: 0)
        point += 1
        let keep = point + places
        if keep >= digits.count { return x }
        if keep < 1 { return x < 0 ? -0.0 : 0 }
        let next = digits[keep]
        let restNonZero = digits[(keep + 1)...].contains { $0 != UInt8(ascii: "0") }
        let up = x > 0 ? next >= UInt8(ascii: "5") : (next > UInt8(ascii: "5") || (next == UInt8(ascii: "5") && restNonZero))
        var kept = Array(digits[..<keep])
        if up {
            var i = kept.count - 1
            while i >= 0 {
                if kept[i] == UInt8(ascii: "9") {
                    kept[i] = UInt8(ascii: "0")
                    i -= 1
                } else {
                    kept[i] += 1
                    break
                }
            }
        }
        // value = 0.kept × 10^point, i.e. kept × 10^(point - kept.count)
        let text = String(decoding: kept, as: UTF8.self) + "e" + String(point - kept.count)
        let magnitude = Double(text) ?? .nan
        return x < 0 ? -magnitude : magnitude
    }

    enum MathFunction { case exp, log, log10, sin, cos, tan, asin, acos, atan }

    static func math(_ f: MathFunction, _ x: Double) -> Double {
        switch f {
        case .exp: return exp(x)
        case .log: return log(x)
        case .log10: return log10(x)
        case .sin: return sin(x)
        case .cos: return cos(x)
        case .tan: return tan(x)
        case .asin: return asin(x)
        case .acos: return acos(x)
        case .atan: return atan(x)
        }
    }

    static func power(_ x: Double, _ y: Double) -> Double { pow(x, y) }

    static func arcTangent(_ y: Double, _ x: Double) -> Double { atan2(y, x) }

    // MARK: - Dates

    /// JavaRosa toDate, without its exceptions: a date stays (cut to its day unless `keepTime`),
    /// a number is days since 1970-01-01 (truncated unless `keepTime`), a date or date-time
    /// string is parsed (`date()` keeps the calendar day as written), the empty string stays
    /// empty, anything else is NaN.
    static func toDate(_ value: Value, keepTime: Bool) -> Value {
        guard let item = Value.firstItem(value) else { return .number(.nan) }
        let days: Double
        switch item {
        case .date(let d):
            days = d
        case .number(let n):
            days = keepTime ? n : truncate(n)
        case .string(let s):
            if s.isEmpty { return .string("") }
            var bytes = ArraySlice(s.utf8)
            while let b = bytes.first, b <= 0x20 { bytes = bytes.dropFirst() }
            while let b = bytes.last, b <= 0x20 { bytes = bytes.dropLast() }
            guard let parsed = CivilDate.days(fromISO: bytes) else { return .number(.nan) }
            if !keepTime, bytes.count > 10, let day = CivilDate.days(fromISO: bytes.prefix(10)) {
                return .date(days: day)
            }
            days = parsed
        case .boolean, .nodes:
            return .number(.nan)
        }
        guard days.isFinite, days >= Double(CivilDate.minDays) - 1, days <= Double(CivilDate.maxDays) + 1 else { return .number(.nan) }
        return .date(days: keepTime ? days : days.rounded(.down))
    }
}
