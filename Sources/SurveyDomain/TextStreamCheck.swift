/// Checks a whole text file (text/plain, text/csv) as it streams past: valid UTF-8 and no NUL,
/// across chunk boundaries. The signature check sees only the first bytes; this sees them all.
public struct TextStreamCheck: Sendable {
    /// The start of a multi-byte sequence cut by the end of the previous chunk (at most 3 bytes).
    private var carry: [UInt8] = []
    private var isValidSoFar = true

    public init() {}

    /// True when every byte seen is text and no sequence is left unfinished.
    public var isValidText: Bool { isValidSoFar && carry.isEmpty }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard isValidSoFar, !bytes.isEmpty else { return }
        let buf = bytes.bindMemory(to: UInt8.self)
        var i = 0
        if !carry.isEmpty {
            // Finish the cut sequence with this chunk's first bytes.
            let joined = carry + buf.prefix(4 - carry.count)
            let outcome = joined.withUnsafeBufferPointer { UTF8Validation.sequence($0, at: 0) }
            switch outcome {
            case .valid(let length):
                i = length - carry.count
                carry = []
            case .truncated:
                carry = joined  // the chunk was shorter than what the sequence still needs
                return
            case .invalid:
                isValidSoFar = false
                return
            }
        }
        while i < buf.count {
            let b = buf[i]
            if b == 0 { isValidSoFar = false; return }
            if b < 0x80 { i += 1; continue }
            switch UTF8Validation.sequence(buf, at: i) {
            case .valid(let length): i += length
            case .truncated:
                carry = Array(buf[i...])
                return
            case .invalid:
                isValidSoFar = false
                return
            }
        }
    }
}
