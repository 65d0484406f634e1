/// Recursive descent over the tokens, one function per XPath 1.0 precedence level:
/// or < and < equality < relational < additive < multiplicative < unary < primary.
/// Recursion happens only at '(' (a group or a call's arguments), and the depth is checked
/// before it, so the stack used is bounded whatever the input.
struct Parser {
    private let scalars: [Unicode.Scalar]
    private let tokens: [Token]
    private var index = 0

    // What the expression names and uses, collected on the way.
    private(set) var references: [String] = []
    private(set) var fields: [String] = []
    private var seenReferences: Set<String> = []
    private var seenFields: Set<String> = []
    private(set) var usesCurrent = false
    private(set) var usesPosition = false
    /// The first function call that depends on the moment: its name and offset.
    private(set) var momentCall: (name: String, offset: Int)?

    init(scalars: [Unicode.Scalar]) throws(ExpressionError) {
        self.scalars = scalars
        self.tokens = try Lexer.tokens(scalars)
    }

    mutating func parse() throws(ExpressionError) -> Node {
        if peek.kind == .end {
            throw ExpressionError("the expression is empty", offset: peek.offset)
        }
        let node = try parseOr(depth: 0)
        if peek.kind != .end {
            if peek.kind == .closeParen {
                throw ExpressionError("unexpected ')' at offset \(peek.offset); it closes no '('", offset: peek.offset)
            }
            throw ExpressionError("expected an operator at offset \(peek.offset), found \(describe(peek))", offset: peek.offset)
        }
        return node
    }

    // MARK: - Tokens

    private var peek: Token {
        // The token list always ends with .end and the index never passes it.
        tokens[Swift.min(index, tokens.count - 1)]
    }

    private mutating func advance() -> Token {
        let t = peek
        if index < tokens.count - 1 { index += 1 }
        return t
    }

    /// The token as written, shortened, in quotes; or "the end".
    private func describe(_ token: Token) -> String {
        if token.kind == .end { return "the end of the expression" }
        let end = Swift.min(token.offset + token.length, scalars.count)
        guard token.offset < end else { return "'?'" }
        var text = String(String.UnicodeScalarView(scalars[token.offset..<Swift.min(end, token.offset + 24)]))
        if end > token.offset + 24 { text += "..." }
        return "'" + text + "'"
    }

    /// An operator name (`and or div mod`) where an operator may stand.
    private func isOperatorName(_ name: String) -> Bool {
        if case .name(let n) = peek.kind { return n == name }
        return false
    }

    // MARK: - Levels

    private mutating func parseOr(depth: Int) throws(ExpressionError) -> Node {
        let first = try parseAnd(depth: depth)
        guard isOperatorName("or") else { return first }
        var items: [Node]
        if case .or(let inner) = first { items = inner } else { items = [first] }
        while isOperatorName("or") {
            _ = advance()
            items.append(try parseAnd(depth: depth))
        }
        return .or(items)
    }

    private mutating func parseAnd(depth: Int) throws(ExpressionError) -> Node {
        let first = try parseChain(level: 3, depth: depth)
        guard isOperatorName("and") else { return first }
        var items: [Node]
        if case .and(let inner) = first { items = inner } else { items = [first] }
        while isOperatorName("and") {
            _ = advance()
            items.append(try parseChain(level: 3, depth: depth))
        }
        return .and(items)
    }

    /// The operator at the current token if it belongs to `level`.
    private func binaryOperator(level: Int) -> Node.BinaryOperator? {
        let op: Node.BinaryOperator?
        switch peek.kind {
        case .equal: op = .equal
        case .notEqual: op = .notEqual
        case .less: op = .less
        case .lessOrEqual: op = .lessOrEqual
        case .greater: op = .greater
        case .greaterOrEqual: op = .greaterOrEqual
        case .plus: op = .plus
        case .minus: op = .minus
        case .star: op = .times
        case .name("div"): op = .div
        case .name("mod"): op = .mod
        default: op = nil
        }
        guard let op, op.level == level else { return nil }
        return op
    }

    /// Levels 3 (equality) to 6 (multiplicative), each a left-associative flat chain.
    private mutating func parseChain(level: Int, depth: Int) throws(ExpressionError) -> Node {
        let first = level == 6 ? try parseUnary(depth: depth) : try parseChain(level: level + 1, depth: depth)
        guard binaryOperator(level: level) != nil else { return first }
        var head = first
        var links: [Node.Link] = []
        // A parenthesized chain of the same level on the left folds the same way: merge it.
        if case .chain(let innerFirst, let innerLinks) = first, first.level == level {
            head = innerFirst
            links = innerLinks
        }
        while let op = binaryOperator(level: level) {
            _ = advance()
            let operand = level == 6 ? try parseUnary(depth: depth) : try parseChain(level: level + 1, depth: depth)
            links.append(Node.Link(op: op, operand: operand))
        }
        return .chain(head, links)
    }

    /// `-`* primary, without recursion: an odd count negates, an even one still converts to a
    /// number, so `--x` is kept as two negations and longer runs fold to one or two.
    private mutating func parseUnary(depth: Int) throws(ExpressionError) -> Node {
        var minuses = 0
        while peek.kind == .minus {
            _ = advance()
            minuses &+= 1
        }
        let operand = try parsePrimary(depth: depth)
        if minuses == 0 { return operand }
        // Negations already inside parentheses count too, so `-(--x)` is `-x`, as it is written
        // back: the tree is the same however the minuses were grouped.
        var base = operand
        var total = minuses
        while case .negate(let inner) = base {
            base = inner
            total &+= 1
        }
        return total % 2 == 1 ? .negate(base) : .negate(.negate(base))
    }

    private mutating func parsePrimary(depth: Int) throws(ExpressionError) -> Node {
        let token = advance()
        switch token.kind {
        case .number(let d):
            return .literal(.number(d))
        case .string(let s):
            return .literal(.string(s))
        case .reference(let name):
            if seenReferences.insert(name).inserted { references.append(name) }
            return .reference(name)
        case .dot:
            usesCurrent = true
            return .current
        case .dotDot:
            throw ExpressionError("'..' at offset \(token.offset) is only supported as position(..)", offset: token.offset)
        case .openParen:
            guard depth < ExpressionLimits.maxDepth else { throw tooDeep(token.offset) }
            let inner = try parseOr(depth: depth + 1)
            try close(token)
            return inner
        case .name(let name):
            if peek.kind == .openParen { return try parseCall(name: name, at: token, depth: depth) }
            if seenFields.insert(name).inserted { fields.append(name) }
            return .field(name)
        case .star:
            throw ExpressionError("unexpected '*' at offset \(token.offset); a multiplication needs a left operand", offset: token.offset)
        case .end:
            throw ExpressionError("expected an operand at offset \(token.offset), found the end of the expression", offset: token.offset)
        default:
            throw ExpressionError("expected an operand at offset \(token.offset), found \(describe(token))", offset: token.offset)
        }
    }

    private func tooDeep(_ offset: Int) -> ExpressionError {
        ExpressionError("the expression nests deeper than \(ExpressionLimits.maxDepth) levels at offset \(offset)",
                        offset: offset, kind: .limit)
    }

    /// Expects the ')' matching `open`.
    private mutating func close(_ open: Token) throws(ExpressionError) {
        switch peek.kind {
        case .closeParen:
            _ = advance()
        case .end:
            throw ExpressionError("'(' at offset \(open.offset) is never closed", offset: open.offset)
        default:
            throw ExpressionError("expected ')' or an operator at offset \(peek.offset), found \(describe(peek))", offset: peek.offset)
        }
    }

    private mutating func parseCall(name: String, at nameToken: Token, depth: Int) throws(ExpressionError) -> Node {
        guard let function = Function.byName[name] else {
            throw ExpressionError("unknown function '\(name)'", offset: nameToken.offset)
        }
        let open = advance()
        guard depth < ExpressionLimits.maxDepth else { throw tooDeep(open.offset) }
        var args: [Node] = []
        if peek.kind == .closeParen {
            _ = advance()
        } else {
            while true {
                if function == .position, peek.kind == .dotDot {
                    _ = advance()
                    args.append(.parent)
                } else {
                    args.append(try parseOr(depth: depth + 1))
                }
                if peek.kind == .comma {
                    _ = advance()
                    continue
                }
                try close(open)
                break
            }
        }
        let (lo, hi) = function.arity
        if args.count < lo || (hi.map { args.count > $0 } ?? false) {
            throw ExpressionError(function.arityMessage(got: args.count), offset: nameToken.offset)
        }
        switch function {
        case .position:
            if let arg = args.first, arg != .parent {
                throw ExpressionError("position() takes no argument or '..'", offset: nameToken.offset)
            }
            usesPosition = true
        case .stringLength, .normalizeSpace:
            if args.isEmpty { usesCurrent = true }
        case .once:
            usesCurrent = true
        default:
            break
        }
        if function.dependsOnMoment, momentCall == nil {
            momentCall = (function.name, nameToken.offset)
        }
        if function == .regex, args.count == 2, case .literal(.string(let pattern)) = args[1] {
            // Compiled once here; a pattern that does not compile is the definition's error.
            do {
                let program = try RegexProgram(pattern)
                return .regex(args[0], pattern: pattern, program: program, at: Node.SourceOffset(value: nameToken.offset))
            } catch {
                let at = patternOffset(args: args, patternOffset: error.offset)
                throw ExpressionError("regex pattern: \(error.message) at offset \(at)", offset: at, kind: error.isLimit ? .limit : .syntax)
            }
        }
        return .call(function, args, at: Node.SourceOffset(value: nameToken.offset))
    }

    /// The source offset of a scalar of the literal pattern: its string token's opening quote + 1.
    private func patternOffset(args: [Node], patternOffset: Int) -> Int {
        // The pattern literal is the token before the closing ')': index - 2 (index is past ')').
        let literalIndex = index - 2
        guard literalIndex >= 0, literalIndex < tokens.count, case .string = tokens[literalIndex].kind else { return 0 }
        return tokens[literalIndex].offset + 1 + patternOffset
    }
}
