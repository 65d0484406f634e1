/// A reader over JSON text's bytes, for the few shapes the CSV writer reads itself: it moves
/// through a value without building one. Every method answers false (or nil) on text that is
/// not JSON, leaving the caller to fall back to the full parser.
struct JSONBytes {
    let bytes: UnsafeBufferPointer<UInt8>
    private(set) var offset = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private mutating func skipSpace() {
        while offset < bytes.count, bytes[offset] == 32 || bytes[offset] == 9 || bytes[offset] == 10 || bytes[offset] == 13 { offset += 1 }
    }

    var atEnd: Bool { mutating get { skipSpace(); return offset == bytes.count } }

    /// The next byte after any whitespace, not taken.
    var peek: UInt8? { mutating get { skipSpace(); return offset < bytes.count ? bytes[offset] : nil } }

    mutating func take(_ b: UInt8) -> Bool {
        guard peek == b else { return false }
        offset += 1
        return true
    }

    mutating func takeNull() -> Bool { word("null") }

    private mutating func word(_ w: StaticString) -> Bool {
        guard peek != nil, offset + w.utf8CodeUnitCount <= bytes.count else { return false }
        for i in 0..<w.utf8CodeUnitCount where bytes[offset + i] != w.utf8Start[i] { return false }
        offset += w.utf8CodeUnitCount
        return true
    }

    /// A string, its escapes decoded, appended to `out` as UTF-8.
    mutating func string(into out: inout [UInt8]) -> Bool {
        var quoting = false
        return string(into: &out, quoting: &quoting)
    }

    /// A string, its escapes decoded, appended to `out` as UTF-8; `quoting` set when the decoded
    /// text holds a byte a CSV field must be quoted for (comma, quote, CR, LF) — found in the
    /// same pass, so a text cell is read once.
    mutating func string(into out: inout [UInt8], quoting: inout Bool) -> Bool {
        var escaped = false
        return string(into: &out, quoting: &quoting, escaped: &escaped)
    }

    /// The same, with `escaped` set when the string held an escape (its decoded text is then not
    /// its JSON form).
    mutating func string(into out: inout [UInt8], quoting: inout Bool, escaped: inout Bool) -> Bool {
        guard take(UInt8(ascii: "\"")) else { return false }
        var run = offset
        while offset < bytes.count {
            skipPlain()
            guard offset < bytes.count else { break }
            let b = bytes[offset]
            switch b {
            case UInt8(ascii: "\""):
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<offset]))
                offset += 1
                return true
            case UInt8(ascii: ","):
                quoting = true
                offset += 1
                continue
            case 0..<0x20:
                return false
            case UInt8(ascii: "\\"):
                break
            default:
                offset += 1
                continue
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<offset]))
            escaped = true
            offset += 1
            guard offset < bytes.count else { return false }
            let e = bytes[offset]
            offset += 1
            switch e {
            case UInt8(ascii: "\""): out.append(e); quoting = true
            case UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "b"): out.append(8)
            case UInt8(ascii: "f"): out.append(12)
            case UInt8(ascii: "n"): out.append(10); quoting = true
            case UInt8(ascii: "r"): out.append(13); quoting = true
            case UInt8(ascii: "t"): out.append(9)
            case UInt8(ascii: "u"):
                guard var scalar = hex4() else { return false }
                if (0xD800..<0xDC00).contains(scalar) {
                    guard word("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return false }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let s = Unicode.Scalar(scalar) else { return false }
                if s == "," || s == "\"" || s == "\n" || s == "\r" { quoting = true }
                out += String(Character(s)).utf8
            default: return false
            }
            run = offset
        }
        return false
    }

    /// A string's key without escapes, as its bytes in place (nil: not a string, or escaped —
    /// read it with `string(into:)` instead; the offset is then unchanged).
    mutating func plainString() -> Slice<UnsafeBufferPointer<UInt8>>? {
        let start = offset
        guard take(UInt8(ascii: "\"")) else { return nil }
        let from = offset
        while offset < bytes.count {
            skipPlain()
            guard offset < bytes.count else { break }
            switch bytes[offset] {
            case UInt8(ascii: "\""):
                offset += 1
                return bytes[from..<(offset - 1)]
            case UInt8(ascii: ","): offset += 1
            default: offset = start; return nil  // an escape or a control byte
            }
        }
        offset = start
        return nil
    }

    /// Past the bytes that need no attention inside a string, eight at a time: everything but a
    /// quote, a backslash, a comma and the control bytes (SWAR: a byte-wise "has zero" and
    /// "has less than" on a 64-bit word).
    private mutating func skipPlain() {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        guard let base = bytes.baseAddress else { return }
        while offset + 8 <= bytes.count {
            let v = UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self)
            func has(_ c: UInt8) -> Bool { let x = v ^ (ones &* UInt64(c)); return (x &- ones) & ~x & highs != 0 }
            let control = (v &- ones &* 0x20) & ~v & highs != 0
            if control || has(UInt8(ascii: "\"")) || has(UInt8(ascii: "\\")) || has(UInt8(ascii: ",")) { break }
            offset += 8
        }
        while offset < bytes.count {
            let b = bytes[offset]
            if b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b == UInt8(ascii: ",") { return }
            offset += 1
        }
    }

    private mutating func hex4() -> UInt32? {
        guard offset + 4 <= bytes.count else { return nil }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[offset]
            let d: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
            default: return nil
            }
            v = v << 4 | UInt32(d)
            offset += 1
        }
        return v
    }

    /// A number's literal, as written (JSON's grammar).
    mutating func number() -> Slice<UnsafeBufferPointer<UInt8>>? {
        guard let first = peek, first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return nil }
        let start = offset
        func digits() -> Int {
            let s = offset
            while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) { offset += 1 }
            return offset - s
        }
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        guard digits() > 0 else { offset = start; return nil }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            guard digits() > 0 else { offset = start; return nil }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard digits() > 0 else { offset = start; return nil }
        }
        return bytes[start..<offset]
    }

    /// Past a string, checked as `string(into:)` checks it but copied nowhere (skipped values
    /// are most of what a repeat's rows or a response's row pass over).
    mutating func skipString() -> Bool {
        guard peek == UInt8(ascii: "\"") else { return false }
        let start = offset
        offset += 1
        while offset < bytes.count {
            skipPlain()
            guard offset < bytes.count else { break }
            switch bytes[offset] {
            case UInt8(ascii: "\""):
                offset += 1
                return true
            case 0..<0x20:
                return false
            case UInt8(ascii: "\\"):
                offset += 1
                guard offset < bytes.count else { return false }
                let e = bytes[offset]
                offset += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                     UInt8(ascii: "r"), UInt8(ascii: "t"):
                    continue
                case UInt8(ascii: "u"):
                    // Read again by the decoding reader, which checks a \u escape in full
                    // (surrogate pairs too); a string with one is rare.
                    offset = start
                    var sink: [UInt8] = []
                    return string(into: &sink)
                default: return false
                }
            default:
                offset += 1  // a comma
            }
        }
        return false
    }

    /// Past one value of any kind.
    mutating func skipValue() -> Bool {
        guard let b = peek else { return false }
        switch b {
        case UInt8(ascii: "\""):
            return skipString()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let close = b == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            offset += 1
            if take(close) { return true }
            repeat {
                if b == UInt8(ascii: "{") {
                    guard skipString(), take(UInt8(ascii: ":")) else { return false }
                }
                guard skipValue() else { return false }
            } while take(UInt8(ascii: ","))
            return take(close)
        case UInt8(ascii: "t"): return word("true")
        case UInt8(ascii: "f"): return word("false")
        case UInt8(ascii: "n"): return word("null")
        default: return number() != nil
        }
    }
}
