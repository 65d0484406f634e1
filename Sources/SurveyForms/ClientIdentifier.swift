/// Client-chosen ids (`clientSubmissionId`, `clientUploadId`, `Idempotency-Key`):
/// 8–128 characters of `[A-Za-z0-9_\-:.]`. Anything else is 400 / 1032.
public enum ClientIdentifier {
    public static let lengthRange = 8...128

    public static func isValid(_ s: String) -> Bool {
        let u = s.utf8
        return lengthRange.contains(u.count) && u.allSatisfy(isAllowed)
    }

    /// A header value as sent: surrounding spaces/tabs are dropped and one pair of enclosing
    /// double quotes is removed (the structured-field string form), so `"abc…"` and `abc…` are
    /// the same key. Returns nil when what remains is not a valid identifier.
    public static func normalize(headerValue: String) -> String? {
        var u = Substring(headerValue).utf8[...]
        while let f = u.first, f == 0x20 || f == 0x09 { u = u.dropFirst() }
        while let l = u.last, l == 0x20 || l == 0x09 { u = u.dropLast() }
        if u.count >= 2, u.first == UInt8(ascii: "\""), u.last == UInt8(ascii: "\"") {
            u = u.dropFirst().dropLast()
        }
        // Only ASCII survives the check below, so decoding these bytes cannot alter them.
        let candidate = String(decoding: u, as: UTF8.self)
        return isValid(candidate) ? candidate : nil
    }

    /// The string after the first `"key":` in raw JSON bytes, if it is a valid identifier (nil
    /// otherwise), found by a scan and not a parse: nesting, escapes and duplicate keys are not
    /// considered. Only a hint: whoever uses it must prove it by other means (the same-bytes
    /// replay compares the body's SHA-256).
    public static func scan(_ bytes: [UInt8], key: String) -> String? {
        let quotedKey = Array("\"\(key)\"".utf8)
        return bytes.withUnsafeBufferPointer { b -> String? in
            let n = b.count
            var i = 0
            while i + quotedKey.count <= n {
                guard b[i] == 0x22, b[i + 1] == quotedKey[1], b[i..<(i + quotedKey.count)].elementsEqual(quotedKey) else { i += 1; continue }
                var j = i + quotedKey.count
                while j < n, b[j] == 0x20 || b[j] == 0x09 || b[j] == 0x0A || b[j] == 0x0D { j += 1 }
                guard j < n, b[j] == UInt8(ascii: ":") else { i += 1; continue }
                j += 1
                while j < n, b[j] == 0x20 || b[j] == 0x09 || b[j] == 0x0A || b[j] == 0x0D { j += 1 }
                guard j < n, b[j] == 0x22 else { return nil }
                let start = j + 1
                var end = start
                while end < n, isAllowed(b[end]) { end += 1 }
                guard end < n, b[end] == 0x22, lengthRange.contains(end - start) else { return nil }
                return String(decoding: b[start..<end], as: UTF8.self)
            }
            return nil
        }
    }

    @inline(__always)
    static func isAllowed(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }
}
