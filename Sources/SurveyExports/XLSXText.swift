/// A text answer as a workbook cell holds it, which differs from the text in two ways:
///
/// - Characters XML 1.0 forbids are written as the `_xHHHH_` escapes of OOXML (ECMA-376,
///   ST_Xstring), which Excel and LibreOffice read back as the character: NUL (a C string would
///   end there), U+FFFE and U+FFFF here; the other C0 controls but tab and line feed libxlsxwriter
///   escapes itself. A `_` that begins something shaped like an escape is escaped too
///   (`_x005F_`), as Excel does, so that text typed as `_x0041_` reads back as typed.
/// - A cell holds at most 32,767 characters: libxlsxwriter counts code points (it refuses a
///   longer string, `LXW_STR_MAX`), Excel counts UTF-16 units. A longer text is cut between
///   characters, within both limits, and ends with a marker saying so; the CSV holds it whole.
enum XLSXText {
    static let limit = 32_767

    static func cell(_ text: String) -> String {
        // Bytes never undercount code points or UTF-16 units; without NUL, `_` or 0xEF (the
        // lead byte of U+FFFE and U+FFFF) nothing needs escaping.
        let utf8 = text.utf8
        if utf8.count <= limit, !utf8.contains(where: { $0 == 0 || $0 == UInt8(ascii: "_") || $0 == 0xEF }) { return text }
        let all = Array(text.unicodeScalars)
        var units = 0, escapes = 0
        for k in all.indices {
            if escaped(all, k) != nil { escapes += 1 }
            units += UTF16.width(all[k])
        }
        var written = all.count + 6 * escapes  // an escape is seven code points for one
        if written <= limit && units <= limit {
            if escapes == 0 { return text }  // a `_` or U+Fxxx that needs nothing
            var out = String.UnicodeScalarView()
            for k in all.indices { append(all, k, to: &out) }
            return String(out)
        }
        var out = String.UnicodeScalarView()
        let marker = "… [cut: \(all.count) characters in all; the CSV has the whole text]"
        let budget = limit - max(marker.unicodeScalars.count, marker.utf16.count)
        written = 0
        units = 0
        var k = 0
        for character in text {
            let n = character.unicodeScalars.count
            var length = 0, cost = 0
            for j in k..<(k + n) {
                length += escaped(all, j) == nil ? 1 : 7
                cost += UTF16.width(all[j])
            }
            if written + length <= budget && units + cost <= budget {
                for j in k..<(k + n) { append(all, j, to: &out) }
                written += length
                units += cost
                k += n
                continue
            }
            // A cluster this long (marks stacked by the thousand) is split between its code
            // points rather than left out whole; an ordinary one is left out whole.
            if n > 32 {
                for j in k..<(k + n) {
                    let l = escaped(all, j) == nil ? 1 : 7, c = UTF16.width(all[j])
                    guard written + l <= budget && units + c <= budget else { break }
                    append(all, j, to: &out)
                    written += l
                    units += c
                }
            }
            break
        }
        out.append(contentsOf: marker.unicodeScalars)
        return String(out)
    }

    /// `s[k]` when it is written as its `_xHHHH_` escape (seven code points), nil when as itself.
    private static func escaped(_ s: [Unicode.Scalar], _ k: Int) -> UInt32? {
        let v = s[k].value
        switch v {
        case 0, 0xFFFE, 0xFFFF: return v
        case 0x5F where looksEscaped(s, k): return v
        default: return nil
        }
    }

    private static func append(_ s: [Unicode.Scalar], _ k: Int, to out: inout String.UnicodeScalarView) {
        guard let v = escaped(s, k) else { return out.append(s[k]) }
        let hex = String(v, radix: 16, uppercase: true)
        out.append(contentsOf: ("_x" + String(repeating: "0", count: 4 - hex.count) + hex + "_").unicodeScalars)
    }

    /// `_xHHHH_` starts at `k`: a reader would take it for an escape.
    private static func looksEscaped(_ s: [Unicode.Scalar], _ k: Int) -> Bool {
        guard k + 6 < s.count, s[k + 1] == "x", s[k + 6] == "_" else { return false }
        return s[(k + 2)...(k + 5)].allSatisfy { $0.properties.isASCIIHexDigit }
    }
}
