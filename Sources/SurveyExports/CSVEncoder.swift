import SurveyDomain

/// CSV per RFC 4180: UTF-8, CRLF line ends, a field quoted when it holds a comma, a quote, CR or
/// LF (quotes doubled). A text cell that a spreadsheet would run as a formula — it begins with
/// `=`, `+`, `-`, `@`, a tab or a carriage return — is written with a leading `'`. Numbers are
/// written as numbers, times as RFC 3339 UTC.
public enum CSVEncoder {
    public static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    public static func line(_ fields: [String], into out: inout [UInt8]) {
        for (i, f) in fields.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            field(f, into: &out)
        }
        out += [13, 10]
    }

    public static func line(_ cells: [Cell], into out: inout [UInt8]) {
        for (i, c) in cells.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            switch c {
            case .empty: break
            case .number(let d): out += Array(number(d).utf8)
            case .timestamp(let t): out += Array(Timestamp.format(t).utf8)
            case .text(let s):
                if let first = s.utf8.first, [UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "@"), 9, 13].contains(first) {
                    field("'" + s, into: &out)
                } else {
                    field(s, into: &out)
                }
            }
        }
        out += [13, 10]
    }

    static func field(_ s: String, into out: inout [UInt8]) {
        let needsQuotes = s.utf8.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 10 || $0 == 13 }
        guard needsQuotes else { out += s.utf8; return }
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            if b == UInt8(ascii: "\"") { out.append(b) }
            out.append(b)
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Integers without a fraction; other numbers as Swift's shortest round-trip form.
    static func number(_ d: Double) -> String {
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        return String(d)
    }
}
