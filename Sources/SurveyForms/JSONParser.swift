// Over 300 lines on purpose: one byte-level parser whose hot loops (strings, numbers, UTF-8)
// are tuned together; split, they would hide how a body is read in one pass.

/// Why a body is not acceptable JSON. `offset` is the byte offset where the problem was found.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let offset: Int
    public let message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "\(message) at byte \(offset)" }
}

/// A strict RFC 8259 parser: validated UTF-8, no comments, no trailing garbage, no duplicate
/// keys, no lone surrogates, nesting at most `maxDepth`, numbers must be finite doubles.
public enum JSONParser {
    /// Containers (arrays + objects) may nest this deep; one more is an error.
    public static let maxDepth = 64

    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { parse(buffer: $0) }.get()
    }

    public static func parse(_ bytes: ArraySlice<UInt8>) throws(JSONParseError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { parse(buffer: $0) }.get()
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSONValue {
        try parse(buffer: UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                              count: bytes.count)).get()
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        var text = text
        return try text.withUTF8 { parse(buffer: $0) }.get()
    }

    /// Any byte collection; contiguous storage is used in place, anything else is copied once.
    public static func parse<C: Collection<UInt8>>(_ bytes: C) throws(JSONParseError) -> JSONValue {
        if let r = bytes.withContiguousStorageIfAvailable({ parse(buffer: $0) }) { return try r.get() }
        return try parse(Array(bytes))
    }

    // Results rather than throws across the closure keep the typed error intact.
    static func parse(buffer: UnsafeBufferPointer<UInt8>) -> Result<JSONValue, JSONParseError> {
        var p = Parser(p: buffer)
        do throws(JSONParseError) {
            p.skipWhitespace()
            let v = try p.value()
            p.skipWhitespace()
            guard p.i == buffer.count else { throw p.error("unexpected data after the JSON value") }
            return .success(v)
        } catch {
            return .failure(error)
        }
    }
}

private enum ASCII {
    static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), slash = UInt8(ascii: "/")
    static let lbrace = UInt8(ascii: "{"), rbrace = UInt8(ascii: "}")
    static let lbracket = UInt8(ascii: "["), rbracket = UInt8(ascii: "]")
    static let comma = UInt8(ascii: ","), colon = UInt8(ascii: ":")
    static let minus = UInt8(ascii: "-"), plus = UInt8(ascii: "+"), dot = UInt8(ascii: ".")
    static let zero = UInt8(ascii: "0"), nine = UInt8(ascii: "9")
    static let e = UInt8(ascii: "e"), E = UInt8(ascii: "E")
}

/// Exact powers of ten: with a mantissa <= 2^53 one IEEE multiply/divide is correctly rounded.
private let exactPowersOfTen: [Double] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
]

private struct Parser {
    let p: UnsafeBufferPointer<UInt8>
    var i = 0
    var depth = 0
    // Scratch stacks shared by all nesting levels: each container appends above its parent's
    // entries and copies its own out at the end, so growing buffers are allocated once per parse.
    var itemStack: [JSONValue] = []
    var memberStack: [Member] = []

    /// A struct, not a tuple: an array of tuples is torn down through the runtime's generic
    /// tuple witness, an array of structs through code written for them.
    struct Member {
        let key: String
        let value: JSONValue
        let offset: Int
    }

    init(p: UnsafeBufferPointer<UInt8>) { self.p = p }

    func error(_ message: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(offset: offset ?? i, message: message)
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while i < p.count {
            switch p[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    mutating func value() throws(JSONParseError) -> JSONValue {
        guard i < p.count else { throw error("unexpected end of input") }
        switch p[i] {
        case ASCII.lbrace: return try object()
        case ASCII.lbracket: return try array()
        case ASCII.quote: return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case ASCII.minus, ASCII.zero...ASCII.nine: return .number(try number())
        default: throw error("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let n = word.utf8CodeUnitCount
        let w = word.utf8Start
        guard p.count - i >= n else { throw error("invalid literal") }
        for k in 0..<n where p[i + k] != w[k] { throw error("invalid literal", at: i + k) }
        i += n
    }

    mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= JSONParser.maxDepth else { throw error("nesting deeper than \(JSONParser.maxDepth)") }
    }

    mutating func array() throws(JSONParseError) -> JSONValue {
        try enter()
        i += 1
        skipWhitespace()
        if i < p.count && p[i] == ASCII.rbracket {
            i += 1; depth -= 1
            return .array([])
        }
        let base = itemStack.count
        while true {
            skipWhitespace()
            let v = try value()
            itemStack.append(v)
            skipWhitespace()
            guard i < p.count else { throw error("unexpected end of input") }
            if p[i] == ASCII.comma { i += 1; continue }
            if p[i] == ASCII.rbracket { i += 1; break }
            throw error("expected ',' or ']'")
        }
        depth -= 1
        let items = Array(itemStack[base...])
        itemStack.removeSubrange(base...)
        return .array(items)
    }

    mutating func object() throws(JSONParseError) -> JSONValue {
        try enter()
        i += 1
        skipWhitespace()
        if i < p.count && p[i] == ASCII.rbrace {
            i += 1; depth -= 1
            return .object([:])
        }
        // Members are gathered first so the dictionary is allocated once at its final size:
        // growing it key by key rehashes every key on each resize.
        let base = memberStack.count
        while true {
            skipWhitespace()
            guard i < p.count, p[i] == ASCII.quote else { throw error("expected a string key") }
            let keyOffset = i
            let key = try string()
            skipWhitespace()
            guard i < p.count, p[i] == ASCII.colon else { throw error("expected ':'") }
            i += 1
            skipWhitespace()
            let v = try value()
            memberStack.append(Member(key: key, value: v, offset: keyOffset))
            skipWhitespace()
            guard i < p.count else { throw error("unexpected end of input") }
            if p[i] == ASCII.comma { i += 1; continue }
            if p[i] == ASCII.rbrace { i += 1; break }
            throw error("expected ',' or '}'")
        }
        var dict = [String: JSONValue](minimumCapacity: memberStack.count - base)
        for m in memberStack[base...] where dict.updateValue(m.value, forKey: m.key) != nil {
            // Swift String equality is canonical equivalence, so NFC/NFD spellings of the
            // same key also count as duplicates.
            throw error("duplicate key", at: m.offset)
        }
        memberStack.removeSubrange(base...)
        depth -= 1
        return .object(dict)
    }

    /// Starts at the opening quote. The common case (no escapes) decodes the bytes in place;
    /// only strings with escapes build a scratch buffer.
    mutating func string() throws(JSONParseError) -> String {
        i += 1
        let start = i
        while i < p.count {
            let b = p[i]
            if b == ASCII.quote {
                let s = String(decoding: UnsafeBufferPointer(rebasing: p[start..<i]), as: UTF8.self)
                i += 1
                return s
            }
            if b == ASCII.backslash { break }
            try plainByte(b)
        }
        guard i < p.count else { throw error("unterminated string") }

        var out: [UInt8] = []
        out.reserveCapacity(i - start + 16)
        out.append(contentsOf: UnsafeBufferPointer(rebasing: p[start..<i]))
        while i < p.count {
            let b = p[i]
            if b == ASCII.quote {
                i += 1
                return String(decoding: out, as: UTF8.self)
            }
            if b == ASCII.backslash {
                try escape(into: &out)
                continue
            }
            let from = i
            try plainByte(b)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: p[from..<i]))
        }
        throw error("unterminated string")
    }

    /// Consumes one unescaped character (one or more bytes), validating it.
    @inline(__always)
    mutating func plainByte(_ b: UInt8) throws(JSONParseError) {
        if b < 0x20 { throw error("control character in string") }
        if b < 0x80 { i += 1; return }
        switch UTF8Validation.sequence(p, at: i) {
        case .valid(let length): i += length
        case .truncated, .invalid: throw error("invalid UTF-8")
        }
    }

    mutating func escape(into out: inout [UInt8]) throws(JSONParseError) {
        let at = i
        i += 1
        guard i < p.count else { throw error("unterminated string") }
        let c = p[i]
        i += 1
        switch c {
        case ASCII.quote: out.append(ASCII.quote)
        case ASCII.backslash: out.append(ASCII.backslash)
        case ASCII.slash: out.append(ASCII.slash)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hex4())
            switch scalar {
            case 0xD800...0xDBFF:
                // A high surrogate must be followed at once by an escaped low surrogate.
                guard p.count - i >= 6, p[i] == ASCII.backslash, p[i + 1] == UInt8(ascii: "u") else {
                    throw error("lone surrogate", at: at)
                }
                i += 2
                let low = UInt32(try hex4())
                guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate", at: at) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            case 0xDC00...0xDFFF:
                throw error("lone surrogate", at: at)
            default:
                break
            }
            appendUTF8(scalar, to: &out)
        default:
            throw error("invalid escape", at: at)
        }
    }

    mutating func hex4() throws(JSONParseError) -> UInt16 {
        guard p.count - i >= 4 else { throw error("invalid \\u escape") }
        var v: UInt16 = 0
        for _ in 0..<4 {
            let b = p[i]
            let d: UInt8
            switch b {
            case ASCII.zero...ASCII.nine: d = b - ASCII.zero
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            v = v << 4 | UInt16(d)
            i += 1
        }
        return v
    }

    func appendUTF8(_ s: UInt32, to out: inout [UInt8]) {
        switch s {
        case 0..<0x80:
            out.append(UInt8(s))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | s >> 6)); out.append(UInt8(0x80 | s & 0x3F))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | s >> 12)); out.append(UInt8(0x80 | s >> 6 & 0x3F))
            out.append(UInt8(0x80 | s & 0x3F))
        default:
            out.append(UInt8(0xF0 | s >> 18)); out.append(UInt8(0x80 | s >> 12 & 0x3F))
            out.append(UInt8(0x80 | s >> 6 & 0x3F)); out.append(UInt8(0x80 | s & 0x3F))
        }
    }

    @inline(__always)
    func isDigit(_ k: Int) -> Bool { k < p.count && p[k] >= ASCII.zero && p[k] <= ASCII.nine }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, converted with a Clinger fast
    /// path (exact) and the standard library's correctly rounded conversion otherwise.
    mutating func number() throws(JSONParseError) -> Double {
        let start = i
        let negative = p[i] == ASCII.minus
        if negative { i += 1 }
        guard isDigit(i) else { throw error("invalid number") }

        var mantissa: UInt64 = 0
        var exact = true          // false once the digits no longer fit the mantissa
        var exponent = 0
        @inline(__always) func accumulate(_ b: UInt8) {
            if mantissa <= (UInt64.max - 9) / 10 {
                mantissa = mantissa * 10 + UInt64(b - ASCII.zero)
            } else {
                exact = false
            }
        }
        if p[i] == ASCII.zero {
            i += 1
        } else {
            while isDigit(i) { accumulate(p[i]); i += 1 }
        }
        if i < p.count && p[i] == ASCII.dot {
            i += 1
            guard isDigit(i) else { throw error("invalid number: digits expected after '.'") }
            while isDigit(i) { accumulate(p[i]); if exact { exponent -= 1 }; i += 1 }
        }
        if i < p.count && (p[i] == ASCII.e || p[i] == ASCII.E) {
            i += 1
            var expNegative = false
            if i < p.count && (p[i] == ASCII.plus || p[i] == ASCII.minus) {
                expNegative = p[i] == ASCII.minus
                i += 1
            }
            guard isDigit(i) else { throw error("invalid number: digits expected in exponent") }
            var e = 0
            while isDigit(i) {
                if e < 100_000 { e = e * 10 + Int(p[i] - ASCII.zero) }  // far past any double
                i += 1
            }
            exponent += expNegative ? -e : e
        }

        var d: Double
        if exact && mantissa == 0 {
            d = 0
        } else if exact && mantissa <= 1 << 53 && (-22...22).contains(exponent) {
            let m = Double(mantissa)
            d = exponent >= 0 ? m * exactPowersOfTen[exponent] : m / exactPowersOfTen[-exponent]
        } else {
            let text = String(decoding: UnsafeBufferPointer(rebasing: p[start..<i]), as: UTF8.self)
            guard let parsed = Double(text) else { throw error("invalid number", at: start) }
            d = parsed.magnitude
        }
        guard d.isFinite else { throw error("number out of range", at: start) }
        return negative ? -d : d
    }
}
