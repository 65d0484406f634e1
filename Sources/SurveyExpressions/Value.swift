/// A value of the expression language: XPath 1.0's string, number, boolean and node-set, plus
/// the date of the ODK XForms specification.
///
/// A node-set is the list of values a reference from outside a repeat to a question inside it
/// stands for; its items are the answers' values (nested node-sets are read as flattened).
public enum Value: Sendable, Equatable {
    case string(String)
    case number(Double)
    case boolean(Bool)
    /// Days since 1970-01-01T00:00Z: whole for a date, fractional for a date and time.
    case date(days: Double)
    case nodes([Value])

    /// XPath's `boolean()`: a non-empty string, a number neither zero nor NaN, a non-empty
    /// node-set; a date is true (JavaRosa XPathFuncExpr.toBoolean).
    public var asBoolean: Bool {
        switch self {
        case .string(let s): return !s.isEmpty
        case .number(let d): return d != 0 && !d.isNaN
        case .boolean(let b): return b
        case .date: return true
        case .nodes(let items): return !items.isEmpty
        }
    }

    /// XPath's `number()` with the ODK extension that a date or date-time string is its days
    /// since 1970-01-01. A node-set is its first item's number (NaN when empty).
    public var asNumber: Double {
        switch Value.firstItem(self) {
        case .string(let s): return Value.number(from: s)
        case .number(let d): return d
        case .boolean(let b): return b ? 1 : 0
        case .date(let days): return days
        case .nodes, nil: return .nan
        }
    }

    /// XPath's `string()`: numbers without exponent (`1`, `0.5`, `NaN`, `Infinity`), booleans
    /// `true`/`false`, a date as `YYYY-MM-DD` (with a time, `YYYY-MM-DDTHH:MM:SS.sssZ`), a
    /// node-set as its first item (empty when empty).
    public var asString: String {
        switch Value.firstItem(self) {
        case .string(let s): return s
        case .number(let d): return Value.format(d)
        case .boolean(let b): return b ? "true" : "false"
        case .date(let days): return CivilDate.format(days: days)
        case .nodes, nil: return ""
        }
    }

    /// Identity of values: strings code point by code point (no Unicode normalization, as the
    /// language's `=`), and NaN equals NaN, so that `==` is an equivalence. The language's `=`
    /// and its conversions are the evaluator's.
    public static func == (a: Value, b: Value) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): return TextSearch.equal(x, y)
        case (.number(let x), .number(let y)): return x == y || (x.isNaN && y.isNaN)
        case (.boolean(let x), .boolean(let y)): return x == y
        case (.date(let x), .date(let y)): return x == y || (x.isNaN && y.isNaN)
        case (.nodes(let x), .nodes(let y)): return x == y
        default: return false
        }
    }

    /// The first non-node-set item, descending into nested node-sets without recursion; nil for
    /// an empty node-set.
    static func firstItem(_ value: Value) -> Value? {
        var v = value
        while case .nodes(let items) = v {
            guard let first = items.first else { return nil }
            v = first
        }
        return v
    }

    /// An empty string, a NaN, or an empty node-set: what `coalesce` skips (JavaRosa
    /// XPathFuncExpr.isNull).
    var isNull: Bool {
        switch Value.firstItem(self) {
        case .string(let s): return s.isEmpty
        case .number(let d): return d.isNaN
        case .boolean, .date: return false
        case .nodes, nil: return true
        }
    }

    var isNodeSet: Bool {
        if case .nodes = self { return true }
        return false
    }

    var isBoolean: Bool {
        if case .boolean = self { return true }
        return false
    }

    /// A number or a date: compared as numbers.
    var isNumeric: Bool {
        switch self {
        case .number, .date: return true
        default: return false
        }
    }

    // MARK: - String to number

    /// XPath's Number grammar (`-? (Digits ('.' Digits?)? | '.' Digits)` between whitespace), with
    /// JavaRosa's reading of ',' as the decimal point (XPathFuncExpr.toNumeric), then the ODK
    /// specification's date and date-time strings; anything else is NaN.
    static func number(from s: String) -> Double {
        var bytes = ArraySlice(s.utf8)
        // Java's trim(): every character up to U+0020.
        while let b = bytes.first, b <= 0x20 { bytes = bytes.dropFirst() }
        while let b = bytes.last, b <= 0x20 { bytes = bytes.dropLast() }
        guard !bytes.isEmpty else { return .nan }
        if let d = decimal(bytes) { return d }
        return CivilDate.days(fromISO: bytes) ?? .nan
    }

    private static func decimal(_ bytes: ArraySlice<UInt8>) -> Double? {
        // Validate first, so that text which is not a number costs no copy.
        var digits = 0
        var points = 0
        for (i, b) in zip(bytes.indices, bytes) {
            if b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") {
                digits += 1
            } else if b == UInt8(ascii: ".") || b == UInt8(ascii: ",") {
                points += 1
                if points > 1 { return nil }
            } else if !(b == UInt8(ascii: "-") && i == bytes.startIndex) {
                return nil
            }
        }
        guard digits > 0 else { return nil }
        // Now in a form the standard library's correctly rounded parser accepts ("1.", ".5").
        var text = [UInt8](bytes)
        for i in text.indices where text[i] == UInt8(ascii: ",") { text[i] = UInt8(ascii: ".") }
        return Double(String(decoding: text, as: UTF8.self))
    }

    // MARK: - Number to string

    /// XPath 1.0's number-to-string: an integer without a decimal point, otherwise the shortest
    /// decimal that reads back as the same double, never with an exponent.
    static func format(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        if d == 0 { return "0" }
        if d == d.rounded(.towardZero), abs(d) < 1e15 { return String(Int64(d)) }
        let (digits, point) = shortestDigits(abs(d))
        var out = d < 0 ? "-" : ""
        if point <= 0 {
            out += "0." + String(repeating: "0", count: -point) + String(decoding: digits, as: UTF8.self)
        } else if point >= digits.count {
            out += String(decoding: digits, as: UTF8.self) + String(repeating: "0", count: point - digits.count)
        } else {
            out += String(decoding: digits[..<point], as: UTF8.self) + "." + String(decoding: digits[point...], as: UTF8.self)
        }
        return out
    }

    /// The shortest round-trip decimal digits of a finite positive double, without leading or
    /// trailing zeros, and where the decimal point goes: value = 0.d1d2d3... × 10^point.
    static func shortestDigits(_ d: Double) -> (digits: [UInt8], point: Int) {
        // `description` is the standard library's shortest round-trip form, e.g. "1.5",
        // "1e-05", "1.2345e+20".
        let text = Array(d.description.utf8)
        var mantissa = text[...]
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            mantissa = text[..<e]
            var sign = 1
            var j = e + 1
            if j < text.count, text[j] == UInt8(ascii: "-") { sign = -1; j += 1 } else if j < text.count, text[j] == UInt8(ascii: "+") { j += 1 }
            var value = 0
            while j < text.count, text[j] >= UInt8(ascii: "0"), text[j] <= UInt8(ascii: "9"), value < 10_000 {
                value = value * 10 + Int(text[j] - UInt8(ascii: "0"))
                j += 1
            }
            exponent = sign * value
        }
        var digits = [UInt8]()
        var point = 0
        var sawPoint = false
        for b in mantissa {
            if b == UInt8(ascii: ".") { sawPoint = true; continue }
            digits.append(b)
            if !sawPoint { point += 1 }
        }
        point += exponent
        while let first = digits.first, first == UInt8(ascii: "0"), digits.count > 1 {
            digits.removeFirst()
            point -= 1
        }
        while let last = digits.last, last == UInt8(ascii: "0"), digits.count > 1 { digits.removeLast() }
        return (digits, point)
    }
}
