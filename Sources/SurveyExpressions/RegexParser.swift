/// Parses a java.util.regex pattern (the subset `RegexProgram` describes) into a `RegexNode`.
/// Recursion happens only at '(' and is bounded by `ExpressionLimits.maxDepth`, checked first.
struct RegexParser {
    private let p: [Unicode.Scalar]
    private var i = 0

    init(_ pattern: [Unicode.Scalar]) {
        p = pattern
    }

    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        let j = i &+ ahead
        return j < p.count ? p[j] : nil
    }

    mutating func parse() throws(RegexError) -> RegexNode {
        let node = try alternation(depth: 0)
        if i < p.count {
            throw RegexError("unmatched ')'", at: i)
        }
        return node
    }

    private mutating func alternation(depth: Int) throws(RegexError) -> RegexNode {
        var branches = [try sequence(depth: depth)]
        while peek() == "|" {
            i += 1
            branches.append(try sequence(depth: depth))
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private mutating func sequence(depth: Int) throws(RegexError) -> RegexNode {
        var items: [RegexNode] = []
        func append(_ node: RegexNode) {
            switch node {
            case .empty: break
            case .concat(let inner): items.append(contentsOf: inner)
            default: items.append(node)
            }
        }
        while let c = peek(), c != "|", c != ")" {
            let start = i
            var atom: RegexNode
            if c == "\\", peek(1) == "Q" {
                // \Q...\E: literal; a quantifier after it applies to its last character only.
                i += 2
                var quoted: [Unicode.Scalar] = []
                while let q = peek(), !(q == "\\" && peek(1) == "E") {
                    quoted.append(q)
                    i += 1
                }
                if peek() == "\\" { i += 2 }
                guard let last = quoted.popLast() else { continue }
                for q in quoted { append(.scalar(q)) }
                atom = .scalar(last)
            } else {
                atom = try self.atom(depth: depth)
            }
            atom = try quantifiers(on: atom, start: start)
            append(atom)
        }
        if items.isEmpty { return .empty }
        return items.count == 1 ? items[0] : .concat(items)
    }

    private mutating func quantifiers(on atom: RegexNode, start: Int) throws(RegexError) -> RegexNode {
        guard let c = peek() else { return atom }
        let at = i
        var min = 0
        var max: Int?
        switch c {
        case "*": i += 1
        case "+": i += 1; min = 1
        case "?": i += 1; max = 1
        case "{":
            guard let (m, n) = try counted() else {
                throw RegexError("'{' does not start a repetition {m}, {m,} or {m,n}; write \\{ for the character", at: at)
            }
            min = m
            max = n
        default:
            return atom
        }
        if peek() == "?" {
            i += 1  // lazy: the same strings match
        } else if peek() == "+" {
            throw RegexError("possessive quantifier is not supported", at: i)
        }
        if let next = peek(), next == "*" || next == "+" || next == "?" || next == "{" {
            throw RegexError("'\(next)' repeats a repetition; group it first", at: i)
        }
        if case .empty = atom { return .empty }
        if max == 0 { return .empty }
        if min == 1 && max == 1 { return atom }
        return .repetition(atom, min: min, max: max)
    }

    /// `{m}`, `{m,}`, `{m,n}` at `i`; nil (and `i` unchanged) when the brace is not one.
    private mutating func counted() throws(RegexError) -> (Int, Int?)? {
        let open = i
        var j = i + 1
        func number() -> Int? {
            var value = 0
            var any = false
            while j < p.count, Lexer.isDigit(p[j]) {
                value = Swift.min(value * 10 + Int(p[j].value - 0x30), 1_000_000)
                j += 1
                any = true
            }
            return any ? value : nil
        }
        guard let m = number() else { return nil }
        var n: Int? = m
        if j < p.count, p[j] == "," {
            j += 1
            n = number()
        }
        guard j < p.count, p[j] == "}" else { return nil }
        i = j + 1
        let limit = ExpressionLimits.maxRegexRepetition
        guard m <= limit, (n ?? 0) <= limit else {
            throw RegexError("the repetition is larger than \(limit)", at: open, isLimit: true)
        }
        if let n, n < m {
            throw RegexError("the repetition has its maximum below its minimum", at: open)
        }
        return (m, n)
    }

    private mutating func atom(depth: Int) throws(RegexError) -> RegexNode {
        let start = i
        guard let c = peek() else { return .empty }
        switch c {
        case "(":
            guard depth < ExpressionLimits.maxDepth else {
                throw RegexError("groups nest deeper than \(ExpressionLimits.maxDepth)", at: start, isLimit: true)
            }
            i += 1
            if peek() == "?" {
                if peek(1) == ":" {
                    i += 2
                } else if peek(1) == "<", let n = peek(2), n != "=", n != "!" {
                    // A named group (?<name>X) captures, which matters not for a yes/no match.
                    i += 2
                    while let q = peek(), q != ">" {
                        guard Lexer.isNameChar(q) else { throw RegexError("bad group name", at: i) }
                        i += 1
                    }
                    guard peek() == ">" else { throw RegexError("'(' is never closed", at: start) }
                    i += 1
                } else {
                    throw RegexError("'(?': lookaround, atomic groups and inline flags are not supported", at: start)
                }
            }
            let inner = try alternation(depth: depth + 1)
            guard peek() == ")" else { throw RegexError("'(' is never closed", at: start) }
            i += 1
            return inner
        case "[":
            return .set(try characterClass())
        case ".":
            i += 1
            return .set(ScalarSet(items: [.property(.notLineTerminator, negated: false)], negated: false))
        case "^":
            i += 1
            return .assert(.start)
        case "$":
            i += 1
            return .assert(.endBeforeTerminator)
        case "\\":
            return try escape(inClass: false)
        case "*", "+", "?":
            throw RegexError("'\(c)' repeats nothing; write \\\(c) for the character", at: start)
        case "{":
            if (try counted()) != nil {
                throw RegexError("the repetition has nothing before it to repeat", at: start)
            }
            throw RegexError("'{' does not start a repetition {m}, {m,} or {m,n}; write \\{ for the character", at: start)
        default:
            i += 1
            return .scalar(c)
        }
    }

    // MARK: - Escapes

    /// After a backslash at `i`: a node (outside a class) — a scalar, a set or an assertion.
    private mutating func escape(inClass: Bool) throws(RegexError) -> RegexNode {
        let start = i
        i += 1
        guard let c = peek() else { throw RegexError("the pattern ends with '\\'", at: start) }
        i += 1
        func shorthand(_ property: ScalarSet.Property, _ negated: Bool) -> RegexNode {
            .set(ScalarSet(items: [.property(property, negated: false)], negated: negated))
        }
        switch c {
        case "d": return shorthand(.digit, false)
        case "D": return shorthand(.digit, true)
        case "w": return shorthand(.word, false)
        case "W": return shorthand(.word, true)
        case "s": return shorthand(.space, false)
        case "S": return shorthand(.space, true)
        case "h": return shorthand(.horizontalSpace, false)
        case "H": return shorthand(.horizontalSpace, true)
        case "v": return shorthand(.verticalSpace, false)
        case "V": return shorthand(.verticalSpace, true)
        case "p", "P":
            let property = try self.property(start: start)
            return .set(ScalarSet(items: [.property(property, negated: false)], negated: c == "P"))
        case "b" where !inClass: return .assert(.wordBoundary)
        case "B" where !inClass: return .assert(.notWordBoundary)
        case "A" where !inClass: return .assert(.start)
        case "z" where !inClass: return .assert(.end)
        case "Z" where !inClass: return .assert(.endBeforeTerminator)
        default:
            i = start
            return .scalar(try escapedScalar())
        }
    }

    /// A backslash escape that stands for one scalar (`\t`, `\x41`, `\.`), at `i`.
    private mutating func escapedScalar() throws(RegexError) -> Unicode.Scalar {
        let start = i
        i += 1
        guard let c = peek() else { throw RegexError("the pattern ends with '\\'", at: start) }
        i += 1
        switch c {
        case "t": return "\t"
        case "n": return "\n"
        case "r": return "\r"
        case "f": return "\u{0C}"
        case "a": return "\u{07}"
        case "e": return "\u{1B}"
        case "0":
            // \0n, \0nn, \0mnn (m <= 3)
            var value: UInt32 = 0
            var count = 0
            while count < 3, let d = peek(), d.value >= 0x30, d.value <= 0x37 {
                if count == 2 && value > 0o37 { break }
                value = value * 8 + (d.value - 0x30)
                i += 1
                count += 1
            }
            guard count > 0, let s = Unicode.Scalar(value) else { throw RegexError("bad octal escape", at: start) }
            return s
        case "x":
            if peek() == "{" {
                i += 1
                var value: UInt32 = 0
                var count = 0
                while let d = peek(), let h = RegexParser.hex(d) {
                    value = Swift.min(value * 16 + h, 0x11_0000)
                    i += 1
                    count += 1
                }
                guard count > 0, peek() == "}", let s = Unicode.Scalar(value) else {
                    throw RegexError("bad \\x{...} escape", at: start)
                }
                i += 1
                return s
            }
            guard let v = hexDigits(2), let s = Unicode.Scalar(v) else { throw RegexError("bad \\x escape", at: start) }
            return s
        case "u":
            guard let v = hexDigits(4) else { throw RegexError("bad \\u escape", at: start) }
            if v >= 0xD800 && v <= 0xDBFF, peek() == "\\", peek(1) == "u" {
                let save = i
                i += 2
                if let low = hexDigits(4), low >= 0xDC00, low <= 0xDFFF,
                   let s = Unicode.Scalar(0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)) {
                    return s
                }
                i = save
            }
            guard let s = Unicode.Scalar(v) else { throw RegexError("\\u escape is a lone surrogate", at: start) }
            return s
        case "c":
            guard let x = peek(), x.value < 0x80, let s = Unicode.Scalar(x.value ^ 0x40) else {
                throw RegexError("bad \\c escape", at: start)
            }
            i += 1
            return s
        case "1"..."9", "k":
            throw RegexError("backreference is not supported", at: start)
        default:
            let v = c.value
            if (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A) {
                throw RegexError("unknown or unsupported escape '\\\(c)'", at: start)
            }
            return c
        }
    }

    private static func hex(_ c: Unicode.Scalar) -> UInt32? {
        switch c.value {
        case 0x30...0x39: return c.value - 0x30
        case 0x41...0x46: return c.value - 0x41 + 10
        case 0x61...0x66: return c.value - 0x61 + 10
        default: return nil
        }
    }

    private mutating func hexDigits(_ n: Int) -> UInt32? {
        var value: UInt32 = 0
        for k in 0..<n {
            guard let c = peek(k), let h = RegexParser.hex(c) else { return nil }
            value = value * 16 + h
        }
        i += n
        return value
    }

    /// `\pL`, `\p{Name}` after `\p` (i is past the letter p).
    private mutating func property(start: Int) throws(RegexError) -> ScalarSet.Property {
        var name = ""
        if peek() == "{" {
            i += 1
            while let c = peek(), c != "}" {
                name.unicodeScalars.append(c)
                i += 1
                if name.unicodeScalars.count > 64 { break }
            }
            guard peek() == "}" else { throw RegexError("'\\p{' is never closed", at: start) }
            i += 1
        } else if let c = peek() {
            name.unicodeScalars.append(c)
            i += 1
        }
        guard let property = ScalarSet.property(named: name) else {
            throw RegexError("unsupported property '\\p{\(name)}'", at: start)
        }
        return property
    }

    // MARK: - Classes

    private mutating func characterClass() throws(RegexError) -> ScalarSet {
        let open = i
        i += 1
        var negated = false
        if peek() == "^" {
            negated = true
            i += 1
        }
        var items: [ScalarSet.Item] = []
        var first = true
        while true {
            guard let c = peek() else { throw RegexError("'[' is never closed", at: open) }
            if c == "]" && !first {
                i += 1
                break
            }
            if c == "[" { throw RegexError("nested class is not supported; write \\[ for the character", at: i) }
            if c == "&", peek(1) == "&" { throw RegexError("class intersection '&&' is not supported", at: i) }
            first = false
            let atomStart = i
            switch try classAtom() {
            case .items(let more):
                items.append(contentsOf: more)
            case .scalar(let lo):
                if peek() == "-", let next = peek(1), next != "]" {
                    i += 1
                    guard case .scalar(let hi) = try classAtom() else {
                        throw RegexError("invalid range", at: atomStart)
                    }
                    guard lo.value <= hi.value else {
                        throw RegexError("invalid range '\(Lexer.printable(lo))-\(Lexer.printable(hi))'", at: atomStart)
                    }
                    items.append(.range(lo.value, hi.value))
                } else {
                    items.append(.range(lo.value, lo.value))
                }
            }
        }
        return ScalarSet(items: items, negated: negated)
    }

    private enum ClassAtom {
        case scalar(Unicode.Scalar)
        case items([ScalarSet.Item])
    }

    private mutating func classAtom() throws(RegexError) -> ClassAtom {
        guard let c = peek() else { throw RegexError("unclosed class", at: i) }
        guard c == "\\" else {
            i += 1
            return .scalar(c)
        }
        let start = i
        guard let e = peek(1) else { throw RegexError("the pattern ends with '\\'", at: start) }
        switch e {
        case "d", "D", "w", "W", "s", "S", "h", "H", "v", "V", "p", "P":
            guard case .set(let set) = try escape(inClass: true) else { return .items([]) }
            if set.negated {
                // \D inside a class: its one property, negated.
                return .items(set.items.map { item in
                    if case .property(let p, let n) = item { return .property(p, negated: !n) }
                    return item
                })
            }
            return .items(set.items)
        case "b", "B", "Q", "E", "A", "z", "Z":
            throw RegexError("'\\\(e)' is not supported inside a class", at: start)
        default:
            return .scalar(try escapedScalar())
        }
    }
}
