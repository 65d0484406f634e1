/// One token of XLSForm's expression syntax, with its offset in Unicode scalars.
struct Token: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case number(Double)
        case string(String)
        /// `${name}`
        case reference(String)
        /// A name: a function's, an operator's (`and or div mod`) or a choice column's.
        case name(String)
        case dot, dotDot, openParen, closeParen, comma
        case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual, plus, minus, star
        case end
    }

    let kind: Kind
    let offset: Int
    /// Where the token ends, for the diagnostics that quote it.
    let length: Int
}

/// Splits a source into tokens. Works on Unicode scalars, so offsets are XPath's characters;
/// refuses what the language does not have (paths, predicates, unions, variables) with a
/// sentence saying so.
struct Lexer {
    private let scalars: [Unicode.Scalar]
    private var i = 0

    init(_ scalars: [Unicode.Scalar]) {
        self.scalars = scalars
    }

    static func tokens(_ scalars: [Unicode.Scalar]) throws(ExpressionError) -> [Token] {
        var lexer = Lexer(scalars)
        var out: [Token] = []
        while true {
            let token = try lexer.next()
            out.append(token)
            if token.kind == .end { return out }
        }
    }

    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        let j = i &+ ahead
        return j < scalars.count ? scalars[j] : nil
    }

    private mutating func next() throws(ExpressionError) -> Token {
        while let c = peek(), c == " " || c == "\t" || c == "\n" || c == "\r" { i += 1 }
        let start = i
        guard let c = peek() else { return Token(kind: .end, offset: start, length: 0) }
        func token(_ kind: Token.Kind, _ length: Int) -> Token {
            i = start + length
            return Token(kind: kind, offset: start, length: length)
        }
        switch c {
        case "(": return token(.openParen, 1)
        case ")": return token(.closeParen, 1)
        case ",": return token(.comma, 1)
        case "=": return token(.equal, 1)
        case "+": return token(.plus, 1)
        case "-": return token(.minus, 1)
        case "*": return token(.star, 1)
        case "<": return peek(1) == "=" ? token(.lessOrEqual, 2) : token(.less, 1)
        case ">": return peek(1) == "=" ? token(.greaterOrEqual, 2) : token(.greater, 1)
        case "!":
            guard peek(1) == "=" else { throw ExpressionError("unexpected '!' at offset \(start); 'not equal' is '!=' and negation is not(...)", offset: start) }
            return token(.notEqual, 2)
        case "'", "\"": return try string(quote: c)
        case "$":
            guard peek(1) == "{" else {
                throw ExpressionError("unexpected '$' at offset \(start); a reference is written ${name}", offset: start)
            }
            return try reference()
        case ".":
            if peek(1) == "." { return token(.dotDot, 2) }
            if let d = peek(1), Lexer.isDigit(d) { return try number() }
            return token(.dot, 1)
        case "/":
            throw ExpressionError("unexpected '/' at offset \(start); paths are not supported, refer to a question as ${name}", offset: start)
        case "[", "]":
            throw ExpressionError("unexpected '\(c)' at offset \(start); predicates are not supported", offset: start)
        case "|":
            throw ExpressionError("unexpected '|' at offset \(start); node-set union is not supported", offset: start)
        case "@":
            throw ExpressionError("unexpected '@' at offset \(start); attributes are not supported", offset: start)
        case "\u{2018}", "\u{2019}", "\u{201C}", "\u{201D}":
            throw ExpressionError("curly quote '\(c)' at offset \(start); quote text with ' or \"", offset: start)
        default:
            if Lexer.isDigit(c) { return try number() }
            if Lexer.isNameStart(c) { return try name() }
            throw ExpressionError("unexpected character '\(Lexer.printable(c))' at offset \(start)", offset: start)
        }
    }

    private mutating func string(quote: Unicode.Scalar) throws(ExpressionError) -> Token {
        let start = i
        i += 1
        var text = String.UnicodeScalarView()
        while let c = peek() {
            i += 1
            if c == quote {
                return Token(kind: .string(String(text)), offset: start, length: i - start)
            }
            text.append(c)
        }
        throw ExpressionError("the string starting with \(quote) at offset \(start) is never closed", offset: start)
    }

    /// XPath's Number: Digits ('.' Digits?)? | '.' Digits. No exponent, no sign.
    private mutating func number() throws(ExpressionError) -> Token {
        let start = i
        var text = ""
        while let c = peek(), Lexer.isDigit(c) {
            text.unicodeScalars.append(c)
            i += 1
        }
        if peek() == ".", peek(1) != "." {
            text += "."
            i += 1
            while let c = peek(), Lexer.isDigit(c) {
                text.unicodeScalars.append(c)
                i += 1
            }
        }
        if text.hasPrefix(".") { text = "0" + text }
        guard let value = Double(text), value.isFinite else {
            throw ExpressionError("the number at offset \(start) is too large", offset: start)
        }
        return Token(kind: .number(value), offset: start, length: i - start)
    }

    /// `${name}`: an XLSForm name (a letter or '_', then letters, digits, '_', '-', '.').
    private mutating func reference() throws(ExpressionError) -> Token {
        let start = i
        i += 2
        var name = ""
        while let c = peek(), c != "}" {
            guard name.isEmpty ? Lexer.isNameStart(c) : Lexer.isNameChar(c) else {
                if c == "'" || c == "\"" || c == "(" || c == ")" || c == " " || c == "$" || c == "," {
                    break
                }
                throw ExpressionError("'\(Lexer.printable(c))' at offset \(i) cannot be part of a name in ${...}", offset: i)
            }
            name.unicodeScalars.append(c)
            i += 1
        }
        guard peek() == "}" else {
            throw ExpressionError("'${' at offset \(start) is never closed", offset: start)
        }
        guard !name.isEmpty else {
            throw ExpressionError("'${}' at offset \(start) names no question", offset: start)
        }
        i += 1
        return Token(kind: .reference(name), offset: start, length: i - start)
    }

    /// An NCName, or a QName `prefix:local` (so `jr:itext(...)` reads as one unknown function).
    private mutating func name() throws(ExpressionError) -> Token {
        let start = i
        var text = ""
        while let c = peek(), Lexer.isNameChar(c) {
            text.unicodeScalars.append(c)
            i += 1
        }
        if peek() == ":" {
            if peek(1) == ":" {
                throw ExpressionError("unexpected '::' at offset \(i); axes are not supported", offset: i)
            }
            if let c = peek(1), Lexer.isNameStart(c) {
                text += ":"
                i += 1
                while let c = peek(), Lexer.isNameChar(c) {
                    text.unicodeScalars.append(c)
                    i += 1
                }
            }
        }
        return Token(kind: .name(text), offset: start, length: i - start)
    }

    static func isDigit(_ c: Unicode.Scalar) -> Bool {
        c.value >= 0x30 && c.value <= 0x39
    }

    static func isNameStart(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x41...0x5A, 0x61...0x7A, 0x5F: return true
        case 0..<0x80: return false
        default: return c.properties.isAlphabetic
        }
    }

    static func isNameChar(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x41...0x5A, 0x61...0x7A, 0x5F, 0x30...0x39, 0x2D, 0x2E: return true
        case 0..<0x80: return false
        default:
            let p = c.properties
            return p.isAlphabetic || p.generalCategory == .decimalNumber || p.generalCategory == .nonspacingMark
                || p.generalCategory == .spacingMark
        }
    }

    /// A scalar as it can be shown inside quotes in a message: controls as \u{..}.
    static func printable(_ c: Unicode.Scalar) -> String {
        if c.value < 0x20 || c.value == 0x7F || (c.value >= 0x80 && c.value < 0xA0) {
            return "\\u{" + String(c.value, radix: 16, uppercase: true) + "}"
        }
        return String(c)
    }
}
