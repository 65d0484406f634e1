/// Parses the tokens with XPath 1.0's precedence:
/// or < and < equality < relational < additive < multiplicative < unary < primary.
/// Binary operators are read by one loop with a stack of pending operands (operator
/// precedence parsing), unary minus by a loop too; recursion happens only at '(' (a group or a
/// call's arguments), the depth is checked before it, and the frames on that path are kept
/// small (messages are built in functions of their own), so the stack used is bounded whatever
/// the input.
struct Parser {
    private let scalars: [Unicode.Scalar]
    private let tokens: [Token]
    private var index = 0

    // What the expression names and uses, collected on the way.
    private(set) var references: [String] = []
    private(set) var fields: [String] = []
    /// `pulldata` calls' files and columns, each once, in order of first appearance.
    private(set) var lookups: [Lookup] = []
    private var seenLookups: [Lookup: Int] = [:]
    /// Each name's slot: its index in `references`.
    private var seenReferences: [String: Int] = [:]
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
        if peek.kind == .end { throw failure(.empty, peek) }
        let node = try parseExpression(depth: 0)
        if peek.kind != .end { throw failure(peek.kind == .closeParen ? .strayClose : .expectedOperator, peek) }
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

    /// The binary operator at the current token, with its level (or 1, and 2, equality 3,
    /// relational 4, additive 5, multiplicative 6); nil when the token is not one.
    private func binaryOperator() -> (level: Int, op: Node.BinaryOperator?)? {
        let op: Node.BinaryOperator
        switch peek.kind {
        case .name("or"): return (1, nil)
        case .name("and"): return (2, nil)
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
        default: return nil
        }
        return (op.level, op)
    }

    // MARK: - Binary operators

    /// A left part of one level whose last operator waits for its right operand.
    private struct Pending {
        let level: Int
        var first: Node
        /// Levels 1 and 2: the operands after the first.
        var items: [Node] = []
        /// Levels 3 to 6: the links so far, and the operator waiting.
        var links: [Node.Link] = []
        var op: Node.BinaryOperator?

        /// Starts a level with `first`; a parenthesized node of the same level folds the same
        /// way, so it is merged (`(a - b) - c` is `a - b - c`).
        init(level: Int, first: Node, op: Node.BinaryOperator?) {
            self.level = level
            self.first = first
            self.op = op
            switch first {
            case .or(let list) where level == 1, .and(let list) where level == 2:
                if let head = list.first {
                    self.first = head
                    items = Array(list.dropFirst())
                }
            case .chain(let head, let rest) where first.level == level:
                self.first = head
                links = rest
            default:
                break
            }
        }

        mutating func take(_ operand: Node) {
            if level <= 2 {
                items.append(operand)
            } else if let op {
                links.append(Node.Link(op: op, operand: operand))
            }
        }

        var node: Node {
            switch level {
            case 1: return .or([first] + items)
            case 2: return .and([first] + items)
            default: return .chain(first, links)
            }
        }
    }

    /// Operands and binary operators, left-associative within a level.
    private mutating func parseExpression(depth: Int) throws(ExpressionError) -> Node {
        var stack: [Pending] = []
        var operand = try parseUnary(depth: depth)
        while true {
            let next = binaryOperator()
            let level = next?.level ?? 0
            // Levels above the next operator's are complete: the operand is their last.
            while var top = stack.last, top.level > level {
                stack.removeLast()
                top.take(operand)
                operand = top.node
            }
            guard let next else { return operand }
            _ = advance()
            if var top = stack.last, top.level == level {
                top.take(operand)
                top.op = next.op
                stack[stack.count - 1] = top
            } else {
                stack.append(Pending(level: level, first: operand, op: next.op))
            }
            operand = try parseUnary(depth: depth)
        }
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

    // MARK: - Primaries

    private mutating func parsePrimary(depth: Int) throws(ExpressionError) -> Node {
        let token = advance()
        switch token.kind {
        case .number(let d):
            return .literal(.number(d))
        case .string(let s):
            return .literal(.string(s))
        case .reference(let name):
            if let slot = seenReferences[name] { return .reference(name, slot: slot) }
            seenReferences[name] = references.count
            references.append(name)
            return .reference(name, slot: references.count - 1)
        case .dot:
            usesCurrent = true
            return .current
        case .openParen:
            guard depth < ExpressionLimits.maxDepth else { throw failure(.tooDeep, token) }
            let inner = try parseExpression(depth: depth + 1)
            try close(token)
            return inner
        case .name(let name):
            if peek.kind == .openParen { return try parseCall(name: name, at: token, depth: depth) }
            if seenFields.insert(name).inserted { fields.append(name) }
            return .field(name)
        case .dotDot:
            throw failure(.parentOutsidePosition, token)
        case .star:
            throw failure(.leadingStar, token)
        default:
            throw failure(.expectedOperand, token)
        }
    }

    /// Expects the ')' matching `open`.
    private mutating func close(_ open: Token) throws(ExpressionError) {
        switch peek.kind {
        case .closeParen: _ = advance()
        case .end: throw failure(.neverClosed, open)
        default: throw failure(.expectedClose, peek)
        }
    }

    private mutating func parseCall(name: String, at nameToken: Token, depth: Int) throws(ExpressionError) -> Node {
        guard let function = Function.byName[name] else { throw failure(.unknownFunction(name), nameToken) }
        let open = advance()
        guard depth < ExpressionLimits.maxDepth else { throw failure(.tooDeep, open) }
        var args: [Node] = []
        if peek.kind == .closeParen {
            _ = advance()
        } else {
            while true {
                if function == .position, peek.kind == .dotDot {
                    _ = advance()
                    args.append(.parent)
                } else {
                    args.append(try parseExpression(depth: depth + 1))
                }
                if peek.kind == .comma {
                    _ = advance()
                    continue
                }
                try close(open)
                break
            }
        }
        return try resolve(function, args, at: nameToken)
    }

    /// Checks a call's arguments and notes what it uses; compiles a literal regex pattern.
    @inline(never)
    private mutating func resolve(_ function: Function, _ args: [Node], at nameToken: Token) throws(ExpressionError) -> Node {
        let (lo, hi) = function.arity
        if args.count < lo || (hi.map { args.count > $0 } ?? false) {
            throw failure(.arity(function, args.count), nameToken)
        }
        switch function {
        case .position:
            if let arg = args.first, arg != .parent { throw failure(.positionArgument, nameToken) }
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
        let at = Node.SourceOffset(value: nameToken.offset)
        if function == .pulldata {
            // The file and columns are known when the form is published, so they must be written out.
            guard args.count == 4, case .literal(.string(let file)) = args[0], case .literal(.string(let column)) = args[1],
                  case .literal(.string(let keyColumn)) = args[2] else { throw failure(.lookupNames, nameToken) }
            let lookup = Lookup(file: file, column: column, keyColumn: keyColumn)
            let slot: Int
            if let known = seenLookups[lookup] {
                slot = known
            } else {
                slot = lookups.count
                lookups.append(lookup)
                seenLookups[lookup] = slot
            }
            return .lookup(lookup, key: args[3], slot: slot, at: at)
        }
        if function == .regex, args.count == 2, case .literal(.string(let pattern)) = args[1] {
            // Compiled once here; a pattern that does not compile is the definition's error.
            do {
                return .regex(args[0], pattern: pattern, program: try RegexProgram(pattern), at: at)
            } catch {
                throw failure(.regex(error), nameToken)
            }
        }
        return .call(function, args, at: at)
    }

    // MARK: - Errors

    private enum Problem {
        case empty, strayClose, expectedOperator, expectedOperand, expectedClose, neverClosed, tooDeep
        case parentOutsidePosition, leadingStar, positionArgument, lookupNames
        case unknownFunction(String)
        case arity(Function, Int)
        case regex(RegexError)
    }

    /// The error for `problem` at `token`. Out of line, so the parsing functions on the
    /// recursive path do not carry the messages' temporaries in their frames.
    @inline(never)
    private func failure(_ problem: Problem, _ token: Token) -> ExpressionError {
        let at = token.offset
        switch problem {
        case .empty:
            return ExpressionError("the expression is empty", offset: at)
        case .strayClose:
            return ExpressionError("unexpected ')' at offset \(at); it closes no '('", offset: at)
        case .expectedOperator:
            return ExpressionError("expected an operator at offset \(at), found \(describe(token))", offset: at)
        case .expectedOperand:
            return ExpressionError("expected an operand at offset \(at), found \(describe(token))", offset: at)
        case .expectedClose:
            return ExpressionError("expected ')' or an operator at offset \(at), found \(describe(token))", offset: at)
        case .neverClosed:
            return ExpressionError("'(' at offset \(at) is never closed", offset: at)
        case .tooDeep:
            return ExpressionError("the expression nests deeper than \(ExpressionLimits.maxDepth) levels at offset \(at)",
                                   offset: at, kind: .limit)
        case .parentOutsidePosition:
            return ExpressionError("'..' at offset \(at) is only supported as position(..)", offset: at)
        case .leadingStar:
            return ExpressionError("unexpected '*' at offset \(at); a multiplication needs a left operand", offset: at)
        case .positionArgument:
            return ExpressionError("position() takes no argument or '..'", offset: at)
        case .lookupNames:
            return ExpressionError("pulldata() takes its file and columns as quoted text: pulldata('file', 'column', 'key column', key)", offset: at)
        case .unknownFunction(let name):
            return ExpressionError("unknown function '\(name)'", offset: at)
        case .arity(let function, let count):
            return ExpressionError(function.arityMessage(got: count), offset: at)
        case .regex(let error):
            let offset = patternOffset(error.offset)
            return ExpressionError("regex pattern: \(error.message) at offset \(offset)", offset: offset,
                                   kind: error.isLimit ? .limit : .syntax)
        }
    }

    /// The token as written, shortened, in quotes; or "the end of the expression".
    private func describe(_ token: Token) -> String {
        if token.kind == .end { return "the end of the expression" }
        let end = Swift.min(token.offset + token.length, scalars.count)
        guard token.offset < end else { return "'?'" }
        var text = String(String.UnicodeScalarView(scalars[token.offset..<Swift.min(end, token.offset + 24)]))
        if end > token.offset + 24 { text += "..." }
        return "'" + text + "'"
    }

    /// The source offset of a scalar of a literal regex pattern: the literal is the token before
    /// the call's ')' (the index is past it); its text starts after the opening quote.
    private func patternOffset(_ inPattern: Int) -> Int {
        let literal = index - 2
        guard literal >= 0, literal < tokens.count, case .string = tokens[literal].kind else { return 0 }
        return tokens[literal].offset + 1 + inPattern
    }
}
