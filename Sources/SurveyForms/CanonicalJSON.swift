/// RFC 8785 JSON Canonicalization Scheme: object keys sorted by UTF-16 code units, no
/// whitespace, minimal string escaping, numbers in ECMAScript `Number.prototype.toString` form.
/// Equal documents encode to identical bytes, which is what digests and replays compare.
public enum CanonicalJSON {
    public static func encode(_ v: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        encode(v, into: &out)
        return out
    }

    public static func string(_ v: JSONValue) -> String {
        String(decoding: encode(v), as: UTF8.self)
    }

    /// The canonical form of the object `members` plus one more member, `key`, whose value is
    /// already canonical bytes: a document and one of its parts encoded once, not twice.
    public static func encode(_ members: [String: JSONValue], adding key: String, encoded: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encoded.count + 256)
        // nil stands for `key`'s value, which is already encoded.
        var ordered: [(String, JSONValue?)] = members.filter { $0.key != key }.map { ($0.key, $0.value) }
        ordered.append((key, nil))
        ordered.sort { utf16Precedes($0.0, $1.0) }
        appendObject(ordered, to: &out, key: { $0.0 }) { member, out in
            if let value = member.1 { encode(value, into: &out) } else { out.append(contentsOf: encoded) }
        }
        return out
    }

    /// The canonical form of an object given as pairs (keys unique): for objects built in code,
    /// such as a log line, without hashing every key into a dictionary first.
    public static func encodeObject(_ members: [(String, JSONValue)]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        appendObject(members.sorted { utf16Precedes($0.0, $1.0) }, to: &out, key: { $0.0 }) { encode($0.1, into: &$1) }
        return out
    }

    /// `{"key":value,...}` for members already in canonical key order; `value` appends the
    /// canonical form of a member's value.
    @inline(__always)
    private static func appendObject<C: Collection>(_ ordered: C, to out: inout [UInt8], key: (C.Element) -> String,
                                                    value: (C.Element, inout [UInt8]) -> Void) {
        out.append(UInt8(ascii: "{"))
        var first = true
        for member in ordered {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            appendString(key(member), to: &out)
            out.append(UInt8(ascii: ":"))
            value(member, &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Appends the canonical form of `v` to `out`.
    public static func encode(_ v: JSONValue, into out: inout [UInt8]) {
        switch v {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let d): appendNumber(d, to: &out)
        case .string(let s): appendString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (k, item) in items.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                encode(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            let order = SortKey.order(members)
            appendObject(order, to: &out, key: { members[$0.index].key }) { encode(members[$0.index].value, into: &$1) }
        }
    }

    /// A member's place in key order, sorted without touching the strings in most comparisons:
    /// `high` and `low` hold a key's first 16 UTF-8 bytes big-endian (zero-padded), which order
    /// like the keys themselves when both are ASCII there and differ; anything else (equal
    /// prefixes, a byte above 0x7F) is decided by `utf16Precedes`. Sixteen bytes: a form's ids
    /// share long stems (`household_1`, `household_12`). Trivial values: no retain/release per swap.
    struct SortKey {
        let high: UInt64
        let low: UInt64
        let asciiPrefix: Bool
        let index: Dictionary<String, JSONValue>.Index

        static func order(_ members: [String: JSONValue]) -> [SortKey] {
            var keys: [SortKey] = []
            keys.reserveCapacity(members.count)
            let names = members.keys
            for i in members.indices {
                // The key alone (not the member, whose value would be copied), read in place.
                var key = names[i]
                let (high, low, top) = key.withUTF8 { bytes -> (UInt64, UInt64, UInt8) in
                    var high: UInt64 = 0, low: UInt64 = 0, top: UInt8 = 0
                    for k in 0..<8 {
                        let b = k < bytes.count ? bytes[k] : 0
                        let c = k + 8 < bytes.count ? bytes[k + 8] : 0
                        high = high << 8 | UInt64(b)
                        low = low << 8 | UInt64(c)
                        top |= b | c
                    }
                    return (high, low, top)
                }
                keys.append(SortKey(high: high, low: low, asciiPrefix: top < 0x80, index: i))
            }
            keys.sort { a, b in
                if a.asciiPrefix && b.asciiPrefix {
                    if a.high != b.high { return a.high < b.high }
                    if a.low != b.low { return a.low < b.low }
                }
                return utf16Precedes(members[a.index].key, members[b.index].key)
            }
            return keys
        }
    }

    /// JCS key order: UTF-16 code units. UTF-8 byte order is code point order, which agrees
    /// with it unless the first difference is between two non-ASCII characters (a character
    /// above U+FFFF sorts below U+E000...U+FFFF in UTF-16); only then compare UTF-16 views.
    static func utf16Precedes(_ a: String, _ b: String) -> Bool {
        let byBytes: Bool?? = a.utf8.withContiguousStorageIfAvailable { pa in
            b.utf8.withContiguousStorageIfAvailable { pb -> Bool? in
                for k in 0..<min(pa.count, pb.count) where pa[k] != pb[k] {
                    if pa[k] < 0x80 || pb[k] < 0x80 { return pa[k] < pb[k] }
                    return nil
                }
                return pa.count < pb.count
            } ?? nil
        }
        // nil at either level: no contiguous UTF-8 (bridged string) or not decidable bytewise.
        return (byBytes ?? nil) ?? a.utf16.lexicographicallyPrecedes(b.utf16)
    }

    /// A number as ECMAScript prints it (e.g. `1e+21`, `1e-7`, `0.000001`, `-0` → `0`).
    /// Non-finite values cannot come from JSON; they are written as `null` rather than trapping.
    public static func number(_ d: Double) -> String {
        var out: [UInt8] = []
        appendNumber(d, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Decimal digits without going through a String (most numbers in answers are integers).
    static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 20 digits at most, kept off the heap
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buf in
            repeat {
                buf[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for k in stride(from: count - 1, through: 0, by: -1) { out.append(buf[k]) }
        }
    }

    static func appendNumber(_ d: Double, to out: inout [UInt8]) {
        guard d.isFinite else { out.append(contentsOf: "null".utf8); return }
        if d == 0 { out.append(UInt8(ascii: "0")); return }
        // Integers below 2^53 are their own shortest round-trip digits.
        if d.rounded(.towardZero) == d && d.magnitude < 9_007_199_254_740_992 {
            appendInteger(Int64(d), to: &out)
            return
        }
        if d < 0 { out.append(UInt8(ascii: "-")) }

        // Swift's description yields the shortest round-trip digits, in one of the forms
        // "123.45", "0.00012", "1.2345e+20", "1e-07"; take the digits and the exponent from it.
        var digits: [UInt8] = []
        var intDigits = 0, exponent = 0, seenPoint = false, inExponent = false, expNegative = false
        for c in d.magnitude.description.utf8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if inExponent {
                    exponent = exponent * 10 + Int(c - UInt8(ascii: "0"))
                } else {
                    digits.append(c)
                    if !seenPoint { intDigits += 1 }
                }
            case UInt8(ascii: "."): seenPoint = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"): inExponent = true
            case UInt8(ascii: "-"): expNegative = true
            default: break // "+"
            }
        }
        // value = 0.d1d2...dk × 10^n
        var n = intDigits + (expNegative ? -exponent : exponent)
        let leadingZeros = digits.prefix { $0 == UInt8(ascii: "0") }.count
        digits.removeFirst(leadingZeros)
        n -= leadingZeros
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        let k = digits.count

        if k <= n && n <= 21 {
            out.append(contentsOf: digits)
            out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: n - k))
        } else if 0 < n && n <= 21 {
            out.append(contentsOf: digits[0..<n])
            out.append(UInt8(ascii: "."))
            out.append(contentsOf: digits[n...])
        } else if -6 < n && n <= 0 {
            out.append(contentsOf: "0.".utf8)
            out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: -n))
            out.append(contentsOf: digits)
        } else {
            out.append(digits[0])
            if k > 1 {
                out.append(UInt8(ascii: "."))
                out.append(contentsOf: digits[1...])
            }
            out.append(UInt8(ascii: "e"))
            out.append(UInt8(ascii: n - 1 < 0 ? "-" : "+"))
            out.append(contentsOf: String((n - 1).magnitude).utf8)
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            // Nothing to escape, the usual case: one copy of the whole.
            if !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                out.append(contentsOf: bytes)
                return
            }
            var runStart = 0
            for i in bytes.indices {
                let b = bytes[i]
                guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
                // Copy the run of literal bytes before this one in a single append.
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                runStart = i + 1
                out.append(UInt8(ascii: "\\"))
                switch b {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(b)
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x09: out.append(UInt8(ascii: "t"))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                default:
                    out.append(contentsOf: "u00".utf8)
                    out.append(hexDigits[Int(b >> 4)])
                    out.append(hexDigits[Int(b & 0xF)])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }
}
