/// Strict UTF-8 checks shared by the JSON parser and the text-file sniffer.
public enum UTF8Validation {
    /// Outcome of decoding one sequence that starts with a non-ASCII lead byte.
    public enum Sequence: Equatable {
        case valid(length: Int)
        /// The bytes so far are a valid start but the buffer ends before the sequence does.
        case truncated
        case invalid
    }

    /// Checks the multi-byte sequence starting at `i` (whose lead byte is >= 0x80).
    /// Rejects overlong forms, UTF-16 surrogates (ED A0..BF) and code points above U+10FFFF.
    @inlinable @inline(__always)
    public static func sequence(_ p: UnsafeBufferPointer<UInt8>, at i: Int) -> Sequence {
        let lead = p[i]
        let length: Int
        // The allowed range of the second byte depends on the lead byte (RFC 3629 table).
        var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lo = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; hi = 0x9F
        case 0xF0: length = 4; lo = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; hi = 0x8F
        default: return .invalid
        }
        var k = 1
        while k < length {
            guard i + k < p.count else { return .truncated }
            let b = p[i + k]
            if k == 1 {
                guard b >= lo && b <= hi else { return .invalid }
            } else {
                guard b & 0xC0 == 0x80 else { return .invalid }
            }
            k += 1
        }
        return .valid(length: length)
    }
}
