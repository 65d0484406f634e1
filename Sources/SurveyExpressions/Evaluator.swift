/// Runs a compiled expression (`Program`) once for one context, counting its work against
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

    /// Runs a compiled expression: one instruction a step, the values on a stack that lives in
    /// this call's frame (an evaluation allocates nothing of its own).
    mutating func run(_ program: Program) throws(ExpressionError) -> Value {
        var failure: ExpressionError?
        let result = withUnsafeTemporaryAllocation(of: Value.self, capacity: Swift.max(1, program.maxStack)) { buffer in
            var stack = ValueStack(buffer)
            defer { stack.removeAll() }
            do throws(ExpressionError) {
                return try execute(program, on: &stack)
            } catch {
                failure = error
                return Value.string("")
            }
        }
        if let failure { throw failure }
        return result
    }

    private mutating func execute(_ program: Program, on stack: inout ValueStack) throws(ExpressionError) -> Value {
        let code = program.code
        var pc = 0
        while pc < code.count {
            try charge(1)
            switch code[pc] {
            case .push(let value):
                stack.push(value)
            case .reference(let slot):
                if let source = context.source {
                    stack.push(source.value(ofReference: slot))
                } else {
                    stack.push(program.references.indices.contains(slot) ? context.reference(program.references[slot]) : .string(""))
                }
            case .field(let index):
                stack.push(program.fields.indices.contains(index) ? context.field(program.fields[index]) : .string(""))
            case .current:
                stack.push(context.current)
            case .negate:
                let operand = stack.pop()
                stack.push(.number(-(try number(operand))))
            case .binary(let op):
                let right = stack.pop()
                let left = stack.pop()
                stack.push(try apply(op, left, right))
            case .shortCircuit(let or, let target):
                if stack.pop().asBoolean == or {
                    stack.push(.boolean(or))
                    pc = target
                    continue
                }
            case .toBoolean:
                stack.push(.boolean(stack.pop().asBoolean))
            case .jumpUnless(let target):
                if !stack.pop().asBoolean {
                    pc = target
                    continue
                }
            case .jump(let target):
                pc = target
                continue
            case .keepUnlessEmpty(let target):
                // JavaRosa XPathFuncExpr.isNull: the empty string and NaN are skipped.
                let first = stack.pop()
                if !first.isNull {
                    stack.push(first)
                    pc = target
                    continue
                }
            case .call(let function, let count, let at):
                offset = at
                let given = Swift.min(count, 3)
                let c = given > 2 ? stack.pop() : .string("")
                let b = given > 1 ? stack.pop() : .string("")
                let a = given > 0 ? stack.pop() : .string("")
                stack.push(try call(function, a, b, c, count: count))
            case .variadic(let function, let count, let at):
                offset = at
                let args = stack.popLast(count)
                stack.push(try variadic(function, args[...]))
            case .regex(let program, let at):
                offset = at
                let text = stack.pop().asString
                stack.push(.boolean(try match(program, text)))
            case .lookup(let slot, let at):
                offset = at
                let key = stack.pop()
                try charge(key.asString.utf8.count)
                stack.push(context.source?.value(ofLookup: slot, key: key) ?? context.lookup(slot, key))
            }
            pc += 1
        }
        return stack.pop()
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
