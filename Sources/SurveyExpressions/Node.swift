/// The parsed form of an expression. Left-associative operators of one precedence level are one
/// flat chain, and `or`/`and` one list each, so that a long `a + b + c + ...` is a wide node and
/// not a deep one: the tree is only as deep as the source's nesting (bounded by
/// `ExpressionLimits.maxDepth`), and evaluating it recurses no further.
indirect enum Node: Sendable, Equatable {
    /// A string or number literal.
    case literal(Value)
    /// `${id}`, with its slot: the name's index in the expression's `references`, so that a
    /// caller resolves it once per expression instead of by name on every evaluation.
    case reference(String, slot: Int)
    /// A bare name: a column of the choice in a `choiceFilter`.
    case field(String)
    /// `.`
    case current
    /// `..`, only as the argument of `position(..)`.
    case parent
    case negate(Node)
    case or([Node])
    case and([Node])
    /// `first op1 operand1 op2 operand2 ...`, evaluated left to right; every op of one level.
    case chain(Node, [Link])
    case call(Function, [Node], at: SourceOffset)
    /// `regex(subject, 'literal')`, its pattern compiled once at parse time.
    case regex(Node, pattern: String, program: RegexProgram, at: SourceOffset)
    /// `pulldata('file', 'column', 'keyColumn', key)`, its file and columns literals, with its
    /// slot: the index of the lookup in the expression's `lookups`.
    case lookup(Lookup, key: Node, slot: Int, at: SourceOffset)

    /// Where a call was written, for the offset of an evaluation's error. Not part of what the
    /// node means, so any two are equal: the same expression written with other spacing is the
    /// same tree.
    struct SourceOffset: Sendable, Equatable {
        let value: Int
        static func == (_: SourceOffset, _: SourceOffset) -> Bool { true }
    }

    struct Link: Sendable, Equatable {
        let op: BinaryOperator
        let operand: Node
    }

    enum BinaryOperator: String, Sendable, Equatable {
        case equal = "=", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case plus = "+", minus = "-", times = "*", div = "div", mod = "mod"

        /// XPath 1.0's precedence: equality 3, relational 4, additive 5, multiplicative 6.
        var level: Int {
            switch self {
            case .equal, .notEqual: return 3
            case .less, .lessOrEqual, .greater, .greaterOrEqual: return 4
            case .plus, .minus: return 5
            case .times, .div, .mod: return 6
            }
        }
    }

    /// XPath 1.0's precedence of the node as a whole: or 1, and 2, the chains 3-6, unary 7,
    /// everything else (primary) 8.
    var level: Int {
        switch self {
        case .or: return 1
        case .and: return 2
        case .chain(_, let links): return links.first?.op.level ?? 8
        case .negate: return 7
        default: return 8
        }
    }

    // MARK: - Canonical text

    /// The expression written back with single spaces around operators and only the
    /// parentheses precedence needs. Parsing it gives this same tree.
    var canonical: String {
        var out = ""
        write(to: &out, minimum: 0)
        return out
    }

    private func write(to out: inout String, minimum: Int) {
        let parenthesize = level < minimum
        if parenthesize { out += "(" }
        switch self {
        case .literal(.number(let d)):
            out += Value.format(d)
        case .literal(let v):
            let s = v.asString
            let quote = s.unicodeScalars.contains("'") ? "\"" : "'"
            out += quote + s + quote
        case .reference(let name, _):
            out += "${" + name + "}"
        case .field(let name):
            out += name
        case .current:
            out += "."
        case .parent:
            out += ".."
        case .negate(let operand):
            out += "-"
            operand.write(to: &out, minimum: 7)
        case .or(let items), .and(let items):
            let l = level
            for (i, item) in items.enumerated() {
                if i > 0 { out += l == 1 ? " or " : " and " }
                item.write(to: &out, minimum: i == 0 ? l : l + 1)
            }
        case .chain(let first, let links):
            let l = level
            first.write(to: &out, minimum: l)
            for link in links {
                out += " " + link.op.rawValue + " "
                link.operand.write(to: &out, minimum: l + 1)
            }
        case .call(let function, let args, _):
            out += function.name + "("
            for (i, arg) in args.enumerated() {
                if i > 0 { out += ", " }
                arg.write(to: &out, minimum: 0)
            }
            out += ")"
        case .regex(let subject, let pattern, _, _):
            out += "regex("
            subject.write(to: &out, minimum: 0)
            out += ", "
            Node.literal(.string(pattern)).write(to: &out, minimum: 0)
            out += ")"
        case .lookup(let lookup, let key, _, _):
            out += "pulldata("
            for text in [lookup.file, lookup.column, lookup.keyColumn] {
                Node.literal(.string(text)).write(to: &out, minimum: 0)
                out += ", "
            }
            key.write(to: &out, minimum: 0)
            out += ")"
        }
        if parenthesize { out += ")" }
    }
}
