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
            case .number(let d): number(d, into: &out)
            case .timestamp(let t): out += Timestamp.format(t).utf8
            case .text(let s): field(s, into: &out, guardingFormulas: true)
            }
        }
        out += [13, 10]
    }

    /// One field, quoted only when it must be; with `guardingFormulas`, a leading `'` before a
    /// first byte a spreadsheet reads as the start of a formula. (The hot loop of an export: it
    /// scans the string's own UTF-8 bytes once, without copying them first.)
    static func field(_ s: String, into out: inout [UInt8], guardingFormulas: Bool = false) {
        var s = s
        s.withUTF8 { bytes in
            guard let first = bytes.first else { return }
            var needsQuotes = false
            for b in bytes where b == UInt8(ascii: ",") || b == UInt8(ascii: "\"") || b == 10 || b == 13 {
                needsQuotes = true
                break
            }
            if needsQuotes { out.append(UInt8(ascii: "\"")) }
            if guardingFormulas && startsFormula(first) { out.append(UInt8(ascii: "'")) }
            if needsQuotes {
                for b in bytes {
                    if b == UInt8(ascii: "\"") { out.append(b) }
                    out.append(b)
                }
                out.append(UInt8(ascii: "\""))
            } else {
                out.append(contentsOf: bytes)
            }
        }
    }

    /// Whether a spreadsheet reads a cell starting with this byte as a formula (`=`, `+`, `-`,
    /// `@`, tab, carriage return): such a text cell gets a leading `'`.
    static func startsFormula(_ first: UInt8) -> Bool {
        first == UInt8(ascii: "=") || first == UInt8(ascii: "+") || first == UInt8(ascii: "-") || first == UInt8(ascii: "@") || first == 9 || first == 13
    }

    /// Integers without a fraction, written digit by digit; other numbers as Swift's shortest
    /// round-trip form.
    static func number(_ d: Double, into out: inout [UInt8]) {
        guard d == d.rounded(), abs(d) < 1e15 else { out += String(d).utf8; return }
        var v = Int64(d)
        if v < 0 { out.append(UInt8(ascii: "-")); v = -v }
        if v == 0 { out.append(UInt8(ascii: "0")); return }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { d in
            var n = 0
            while v > 0 { d[n] = UInt8(48 + v % 10); v /= 10; n += 1 }
            for i in stride(from: n - 1, through: 0, by: -1) { out.append(d[i]) }
        }
    }
}
