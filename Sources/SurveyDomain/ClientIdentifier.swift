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
