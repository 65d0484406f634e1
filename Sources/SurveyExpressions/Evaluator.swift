/// Walks a parsed tree once for one context, counting its work against
/// `ExpressionLimits.maxEvaluationSteps`. Operators follow XPath 1.0 section 3.4, with the
/// equality tolerance of JavaRosa (XPathEqExpr) and the ODK specification's dates.
struct Evaluator {
    let context: EvaluationContext
    private(set) var steps = 0
    /// The call being evaluated, for the offset of a limit's error.
    var offset = 0

    init(context: EvaluationContext) {
        self.context = context
    }

    mutating func charge(_ units: Int) throws(ExpressionError) {
        steps = steps &+ Swift.max(0, Swift.min(units, ExpressionLimits.maxEvaluationSteps &+ 1))
        if steps > ExpressionLimits.maxEvaluationSteps {
            throw ExpressionError("the evaluation takes more than \(ExpressionLimits.maxEvaluationSteps) steps",
                                  offset: offset, kind: .limit)
        }
    }

    /// One node. Kept to a dispatch that binds little: nested expressions recurse through
    /// here, and in an unoptimized build every value a case binds takes stack space in this
    /// frame, so the work of each compound node is in a function of its own.
    mutating func evaluate(_ node: Node) throws(ExpressionError) -> Value {
        try charge(1)
        switch node {
        case .literal(let value):
            return value
        case .reference(let name):
            return context.reference(name)
        case .field(let name):
            return context.field(name)
        case .current:
            return context.current
        case .parent:
            // Only position(..) holds it, and position does not look at its argument.
            return .string("")
        case .negate, .or, .and, .chain:
            return try operation(node)
        case .call, .regex:
            return try invocation(node)
        }
    }

    private mutating func operation(_ node: Node) throws(ExpressionError) -> Value {
        switch node {
        case .negate(let operand):
            return .number(-(try number(evaluate(operand))))
        case .or(let items):
            return try logical(items, or: true)
        case .and(let items):
            return try logical(items, or: false)
        case .chain(let first, let links):
            var left = try evaluate(first)
            for link in links {
                let right = try evaluate(link.operand)
                left = try apply(link.op, left, right)
            }
            return left
        default:
            return .string("")
        }
    }

    /// `or` stops at the first true item, `and` at the first false one.
    private mutating func logical(_ items: [Node], or: Bool) throws(ExpressionError) -> Value {
        for item in items {
            if try evaluate(item).asBoolean == or { return .boolean(or) }
        }
        return .boolean(!or)
    }

    /// A call, with its offset for the errors of limits met inside it.
    private mutating func invocation(_ node: Node) throws(ExpressionError) -> Value {
        let outer = offset
        defer { offset = outer }
        switch node {
        case .call(let function, let args, let at):
            offset = at.value
            return try call(function, args)
        case .regex(let subject, _, let program, let at):
            offset = at.value
            let text = try evaluate(subject).asString
            return .boolean(try match(program, text))
        default:
            return .string("")
        }
    }

    // MARK: - Conversions that cost

    /// `number()`, counting the bytes a string conversion reads.
    mutating func number(_ value: Value) throws(ExpressionError) -> Double {
        if case .string(let s)? = Value.firstItem(value) { try charge(s.utf8.count) }
        return value.asNumber
    }

    /// The items of a node-set, nested ones flattened (without recursion); a single value is a
    /// node-set of itself. Each item counts as a step.
    mutating func items(_ value: Value) throws(ExpressionError) -> [Value] {
        guard case .nodes(let list) = value else { return [value] }
        try charge(list.count)
        guard list.contains(where: { $0.isNodeSet }) else { return list }
        var out: [Value] = []
        var stack: [ArraySlice<Value>] = [list[...]]
        while var top = stack.popLast() {
            while let item = top.popFirst() {
                if case .nodes(let inner) = item {
                    try charge(inner.count)
                    stack.append(top)
                    top = inner[...]
                } else {
                    out.append(item)
                }
            }
        }
        return out
    }

    // MARK: - Operators

    private mutating func apply(_ op: Node.BinaryOperator, _ a: Value, _ b: Value) throws(ExpressionError) -> Value {
        switch op {
        case .plus: return .number(try number(a) + number(b))
        case .minus: return .number(try number(a) - number(b))
        case .times: return .number(try number(a) * number(b))
        case .div: return .number(try number(a) / number(b))
        // Java's % and XPath's mod: the remainder of truncating division, with the dividend's sign.
        case .mod: return .number(try number(a).truncatingRemainder(dividingBy: number(b)))
        default: return .boolean(try compare(op, a, b))
        }
    }

    /// XPath 1.0 comparison: with a node-set, true when some item compares true (a node-set
    /// against a boolean is first converted to a boolean); otherwise `scalarCompare`.
    private mutating func compare(_ op: Node.BinaryOperator, _ a: Value, _ b: Value) throws(ExpressionError) -> Bool {
        switch (a, b) {
        case (.nodes, .boolean), (.boolean, .nodes):
            return try scalarCompare(op, .boolean(a.asBoolean), .boolean(b.asBoolean))
        case (.nodes, .nodes):
            let left = try items(a)
            let right = try items(b)
            // Every pair may be compared: counted up front, so a refusal costs nothing.
            let (pairs, overflow) = left.count.multipliedReportingOverflow(by: right.count)
            try charge(overflow ? Int.max : pairs)
            for x in left {
                for y in right {
                    if try scalarCompare(op, x, y) { return true }
                }
            }
            return false
        case (.nodes, _):
            for x in try items(a) {
                if try scalarCompare(op, x, b) { return true }
            }
            return false
        case (_, .nodes):
            for y in try items(b) {
                if try scalarCompare(op, a, y) { return true }
            }
            return false
        default:
            return try scalarCompare(op, a, b)
        }
    }

    /// Two values that are not node-sets. `=`/`!=`: as booleans if either is one, else as
    /// numbers if either is a number or a date, else as strings (code point by code point).
    /// `< <= > >=`: as numbers. A comparison with NaN is false, so `!=` is true.
    private mutating func scalarCompare(_ op: Node.BinaryOperator, _ a: Value, _ b: Value) throws(ExpressionError) -> Bool {
        switch op {
        case .equal, .notEqual:
            let equal: Bool
            switch (a, b) {
            case (.boolean, _), (_, .boolean):
                equal = a.asBoolean == b.asBoolean
            case (.number, _), (_, .number), (.date, _), (_, .date):
                equal = Evaluator.numbersEqual(try number(a), try number(b))
            default:
                let x = a.asString, y = b.asString
                try charge(Swift.min(x.utf8.count, y.utf8.count))
                equal = TextSearch.equal(x, y)
            }
            return op == .equal ? equal : !equal
        case .less: return try number(a) < number(b)
        case .lessOrEqual: return try number(a) <= number(b)
        case .greater: return try number(a) > number(b)
        case .greaterOrEqual: return try number(a) >= number(b)
        default: return false
        }
    }

    /// JavaRosa's XPathEqExpr: equal within 1e-12, so `0.1 + 0.2 = 0.3` holds as it does in
    /// ODK Collect; infinities equal themselves; NaN equals nothing.
    static func numbersEqual(_ x: Double, _ y: Double) -> Bool {
        x == y || Swift.abs(x - y) < 1e-12
    }
}
