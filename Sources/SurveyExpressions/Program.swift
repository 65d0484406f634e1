/// An expression compiled once, at parse time, into postfix instructions over a value stack, so
/// that each evaluation is one loop: no recursion, and no walk over the tree's boxes (whose
/// retains and releases were most of an evaluation's cost). `and`, `or`, `if()` and `coalesce()`
/// jump over what they do not need, exactly as the tree is read lazily. An instruction holds no
/// reference (constants and regexes sit beside the code), so reading one copies no value.
struct Program: Sendable {
    enum Instruction: Sendable {
        /// `constants[i]`.
        case push(Int)
        /// A number constant, held in the instruction: pushing it copies nothing that counts references.
        case pushNumber(Double)
        /// `${name}` by slot (its index in the expression's references).
        case reference(Int)
        /// A bare name: a column of the choice, by its index in `fields`.
        case field(Int)
        case current
        case negate
        case binary(Node.BinaryOperator)
        /// `or` (true) / `and` (false): when the top's truth is this, it becomes that boolean and
        /// the program goes on at the target; otherwise the top is dropped.
        case shortCircuit(or: Bool, to: Int)
        /// The top becomes its truth value (the last item of `and`/`or`).
        case toBoolean
        /// Pops a condition; goes on at the target when it is false.
        case jumpUnless(Int)
        case jump(Int)
        /// `coalesce`: when the top is not empty it is the result (go on at the target), else it is dropped.
        case keepUnlessEmpty(Int)
        /// A function of fixed arity: pops its (at most three) evaluated arguments; `count` is
        /// how many were written.
        case call(Function, count: Int, at: Int)
        /// concat, join, min, max: pops `count` values.
        case variadic(Function, count: Int, at: Int)
        /// `regex(subject, 'literal')`: the pattern compiled at parse time, `regexes[i]`.
        case regex(Int, at: Int)
        /// `pulldata`: pops the key, pushes the value the caller looks up for this slot.
        case lookup(Int, at: Int)
    }

    let code: [Instruction]
    let constants: [Value]
    let regexes: [RegexProgram]
    let references: [String]
    let fields: [String]
    /// The most values the stack holds at once, known from the code.
    let maxStack: Int

    init(_ root: Node, references: [String], fields: [String]) {
        var compiler = Compiler(fields: fields)
        compiler.emit(root)
        code = compiler.code
        constants = compiler.constants
        regexes = compiler.regexes
        maxStack = compiler.maxDepth
        self.references = references
        self.fields = fields
    }

    /// Node to instructions. Recursive over the tree, whose depth the parser bounds
    /// (`ExpressionLimits.maxDepth`); wide chains and lists are loops.
    private struct Compiler {
        let fieldIndex: [String: Int]
        var code: [Instruction] = []
        var constants: [Value] = []
        var regexes: [RegexProgram] = []
        /// The stack's depth after the code so far (on the path that falls through), and its most.
        var depth = 0
        var maxDepth = 0

        init(fields: [String]) {
            var index: [String: Int] = [:]
            for (i, f) in fields.enumerated() where index[f] == nil { index[f] = i }
            fieldIndex = index
        }

        /// Appends an instruction, following the depth of the stack it leaves on the path that
        /// falls through (a jump's target gets the depth its jump had).
        private mutating func add(_ instruction: Instruction) {
            code.append(instruction)
            switch instruction {
            case .push, .pushNumber, .reference, .field, .current: depth += 1
            case .negate, .toBoolean, .jump, .regex, .lookup: break
            case .binary, .shortCircuit, .jumpUnless, .keepUnlessEmpty: depth -= 1
            case .call(_, let count, _): depth += 1 - Swift.min(count, 3)
            case .variadic(_, let count, _): depth += 1 - count
            }
            maxDepth = Swift.max(maxDepth, depth)
        }

        private mutating func push(_ value: Value) {
            if case .number(let d) = value {
                add(.pushNumber(d))
                return
            }
            constants.append(value)
            add(.push(constants.count - 1))
        }

        mutating func emit(_ node: Node) {
            switch node {
            case .literal(let value): push(value)
            case .reference(_, let slot): add(.reference(slot))
            case .field(let name): if let i = fieldIndex[name] { add(.field(i)) } else { push(.string("")) }
            case .current: add(.current)
            // Only position(..) holds it, and position does not look at its argument.
            case .parent: push(.string(""))
            case .negate(let operand):
                emit(operand)
                add(.negate)
            case .or(let items): logical(items, or: true)
            case .and(let items): logical(items, or: false)
            case .chain(let first, let links):
                emit(first)
                for link in links {
                    emit(link.operand)
                    add(.binary(link.op))
                }
            case .call(let function, let args, let at): call(function, args, at: at.value)
            case .regex(let subject, _, let program, let at):
                emit(subject)
                regexes.append(program)
                add(.regex(regexes.count - 1, at: at.value))
            case .lookup(_, let key, let slot, let at):
                emit(key)
                add(.lookup(slot, at: at.value))
            }
        }

        private mutating func logical(_ items: [Node], or: Bool) {
            var exits: [Int] = []
            for (i, item) in items.enumerated() {
                emit(item)
                if i < items.count - 1 {
                    exits.append(code.count)
                    add(.shortCircuit(or: or, to: 0))
                }
            }
            add(.toBoolean)
            for at in exits { code[at] = .shortCircuit(or: or, to: code.count) }
        }

        private mutating func call(_ function: Function, _ args: [Node], at: Int) {
            switch function {
            case .if:
                // Arity is checked at parse time: three arguments.
                guard args.count >= 2 else { push(.string("")); return }
                emit(args[0])
                let test = code.count
                add(.jumpUnless(0))
                emit(args[1])
                let skip = code.count
                add(.jump(0))
                // The other branch starts from the depth before the first one pushed its value.
                depth -= 1
                code[test] = .jumpUnless(code.count)
                if args.count > 2 { emit(args[2]) } else { push(.string("")) }
                code[skip] = .jump(code.count)
            case .coalesce:
                guard args.count >= 2 else { push(.string("")); return }
                emit(args[0])
                let keep = code.count
                add(.keepUnlessEmpty(0))
                emit(args[1])
                code[keep] = .keepUnlessEmpty(code.count)
            case .concat, .join, .min, .max,
                 .indexedRepeat, .distance, .checklist, .weightedChecklist: // the device's, never run here (`dependsOnMoment`)
                for arg in args { emit(arg) }
                add(.variadic(function, count: args.count, at: at))
            default:
                // A missing argument reads as ""; no fixed-arity function takes more than three.
                for arg in args.prefix(3) { emit(arg) }
                add(.call(function, count: args.count, at: at))
            }
        }
    }
}
