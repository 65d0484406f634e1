/// Runs a compiled expression (`Program`) once for one context, counting its work against
/// `ExpressionLimits.maxEvaluationSteps`. Operators follow XPath 1.0 section 3.4, with the
/// equality tolerance of JavaRosa (XPathEqExpr) and the ODK specification's dates.
struct Evaluator {
    /// `.` and `position()`. The rest of the context is only read by the running program, which
    /// borrows it: an evaluator holding a copy would retain and release its closures each time.
    let current: Value
    let position: Int
    private(set) var steps = 0
    /// The call being evaluated, for the offset of a limit's error.
    var offset = 0

    init(current: Value, position: Int) {
        self.current = current
        self.position = position
    }

    @inline(__always)
    mutating func charge(_ units: Int) throws(ExpressionError) {
        steps = steps &+ Swift.max(0, Swift.min(units, ExpressionLimits.maxEvaluationSteps &+ 1))
        if steps > ExpressionLimits.maxEvaluationSteps { throw overLimit() }
    }

    @inline(never)
    private func overLimit() -> ExpressionError {
        ExpressionError("the evaluation takes more than \(ExpressionLimits.maxEvaluationSteps) steps", offset: offset, kind: .limit)
    }

    /// Runs a compiled expression: one instruction a step, the values on a stack that lives in
    /// this call's frame (an evaluation allocates nothing of its own).
    mutating func run<B: Bindings>(_ program: Program, _ bindings: B) throws(ExpressionError) -> Value {
        var failure: ExpressionError?
        let result = withUnsafeTemporaryAllocation(of: Value.self, capacity: Swift.max(1, program.maxStack)) { buffer in
            var stack = ValueStack(buffer)
            defer { stack.removeAll() }
            do throws(ExpressionError) {
                return try execute(program, bindings, on: &stack)
            } catch {
                failure = error
                return Value.string("")
            }
        }
        if let failure { throw failure }
        return result
    }

    private mutating func execute<B: Bindings>(_ program: Program, _ bindings: B, on stack: inout ValueStack) throws(ExpressionError) -> Value {
        let code = program.code
        var pc = 0
        while pc < code.count {
            try charge(1)
            switch code[pc] {
            case .push(let i):
                stack.push(program.constants.indices.contains(i) ? program.constants[i] : .string(""))
            case .pushNumber(let d):
                stack.push(.number(d))
            case .reference(let slot):
                stack.push(bindings.reference(slot, of: program))
            case .field(let index):
                stack.push(bindings.field(index, of: program))
            case .current:
                stack.push(current)
            case .negate:
                let operand = stack.pop()
                stack.push(.number(-(try number(operand))))
            case .binary(let op):
                // Two numbers, the usual case: no conversion, nothing charged, nothing to release.
                if let (x, y) = stack.popNumbers() {
                    stack.push(Evaluator.apply(op, x, y))
                    break
                }
                let right = stack.pop()
                let left = stack.pop()
                stack.push(try apply(op, left, right))
            case .shortCircuit(let or, let target):
                if (stack.popBoolean() ?? stack.pop().asBoolean) == or {
                    stack.push(.boolean(or))
                    pc = target
                    continue
                }
            case .toBoolean:
                stack.push(.boolean(stack.popBoolean() ?? stack.pop().asBoolean))
            case .jumpUnless(let target):
                if !(stack.popBoolean() ?? stack.pop().asBoolean) {
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
            case .regex(let i, let at):
                offset = at
                let text = stack.pop().asString
                guard program.regexes.indices.contains(i) else { stack.push(.boolean(false)); break }
                stack.push(.boolean(try match(program.regexes[i], text)))
            case .lookup(let slot, let at):
                offset = at
                let key = stack.pop()
                try charge(key.asString.utf8.count)
                stack.push(bindings.lookup(slot, key: key))
            }
            pc += 1
        }
        return stack.pop()
    }

    // MARK: - Conversions that cost

    /// `number()`, counting the bytes a string conversion reads.
    mutating func number(_ value: Value) throws(ExpressionError) -> Double {
        switch value {
        case .number(let d): return d
        case .boolean(let b): return b ? 1 : 0
        case .date(let days): return days
        case .string(let s):
            try charge(s.utf8.count)
            return Value.number(from: s)
        case .nodes:
            if case .string(let s)? = Value.firstItem(value) { try charge(s.utf8.count) }
            return value.asNumber
        }
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

    /// An operator between two numbers: what `apply` does for them, without conversions.
    static func apply(_ op: Node.BinaryOperator, _ x: Double, _ y: Double) -> Value {
        switch op {
        case .plus: return .number(x + y)
        case .minus: return .number(x - y)
        case .times: return .number(x * y)
        case .div: return .number(x / y)
        case .mod: return .number(x.truncatingRemainder(dividingBy: y))
        case .equal: return .boolean(Evaluator.numbersEqual(x, y))
        case .notEqual: return .boolean(!Evaluator.numbersEqual(x, y))
        case .less: return .boolean(x < y)
        case .lessOrEqual: return .boolean(x <= y)
        case .greater: return .boolean(x > y)
        case .greaterOrEqual: return .boolean(x >= y)
        }
    }

    private mutating func apply(_ op: Node.BinaryOperator, _ a: Value, _ b: Value) throws(ExpressionError) -> Value {
        if case .number(let x) = a, case .number(let y) = b { return Evaluator.apply(op, x, y) }
        // Two strings compared for equality (`${consent} = 'yes'`): as `scalarCompare` does them.
        if op == .equal || op == .notEqual, case .string(let x) = a, case .string(let y) = b {
            try charge(Swift.min(x.utf8.count, y.utf8.count))
            return .boolean(TextSearch.equal(x, y) == (op == .equal))
        }
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
        if !a.isNodeSet && !b.isNodeSet { return try scalarCompare(op, a, b) }
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
            if a.isBoolean || b.isBoolean {
                equal = a.asBoolean == b.asBoolean
            } else if a.isNumeric || b.isNumeric {
                equal = Evaluator.numbersEqual(try number(a), try number(b))
            } else if case .string(let x) = a, case .string(let y) = b {
                try charge(Swift.min(x.utf8.count, y.utf8.count))
                equal = TextSearch.equal(x, y)
            } else {
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

/// Where a running program's references (`${id}`, by slot) and bare names (by index in
/// `fields`) take their values from.
protocol Bindings {
    func reference(_ slot: Int, of program: Program) -> Value
    func field(_ index: Int, of program: Program) -> Value
    /// `pulldata` by slot (its index in `Expression.lookups`) and key.
    func lookup(_ slot: Int, key: Value) -> Value
}

extension EvaluationContext: Bindings {
    func reference(_ slot: Int, of program: Program) -> Value {
        if let source { return source.value(ofReference: slot) }
        return program.references.indices.contains(slot) ? reference(program.references[slot]) : .string("")
    }

    func field(_ index: Int, of program: Program) -> Value {
        program.fields.indices.contains(index) ? field(program.fields[index]) : .string("")
    }

    func lookup(_ slot: Int, key: Value) -> Value {
        if let source { return source.value(ofLookup: slot, key: key) }
        return lookup(slot, key)
    }
}

/// A source of references and no bare names (`Expression.evaluate(source:current:position:)`).
struct SourceBindings: Bindings {
    let source: any ReferenceSource

    func reference(_ slot: Int, of program: Program) -> Value { source.value(ofReference: slot) }
    func field(_ index: Int, of program: Program) -> Value { .string("") }
    func lookup(_ slot: Int, key: Value) -> Value { source.value(ofLookup: slot, key: key) }
}
