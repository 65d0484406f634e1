/// Why a regex pattern does not compile; `offset` is in the pattern's Unicode scalars.
struct RegexError: Error, Sendable {
    let message: String
    let offset: Int
    let isLimit: Bool

    init(_ message: String, at offset: Int, isLimit: Bool = false) {
        self.message = message
        self.offset = offset
        self.isLimit = isLimit
    }
}

/// A regex compiled to a Thompson NFA program, for `regex(value, pattern)`.
///
/// The syntax is the subset of java.util.regex forms use: literals, `.`, escapes (`\d \D \w \W
/// \s \S \h \H \v \V \t \n \r \f \a \e \0oo \xhh \x{h..} \uhhhh \Q..\E`, `\p{..}`/`\P{..}`,
/// an escaped non-letter is itself), classes with ranges and negation, groups `( )` and
/// `(?: )`, alternation, quantifiers `* + ? {m} {m,} {m,n}` (lazy forms accepted: for a yes/no
/// answer they match the same strings), and the anchors `^ $ \A \z \Z \b \B`. Refused with a
/// reason: backreferences, lookaround, possessive quantifiers, inline flags, class
/// intersection and nesting, which a linear-time matcher cannot or need not do.
///
/// Counted repetition is expanded, so the program's size is bounded by
/// `ExpressionLimits.maxRegexInstructions`; `matches` then runs in O(program × input).
struct RegexProgram: Sendable, Equatable {
    enum Instruction: Sendable, Equatable {
        case scalar(Unicode.Scalar)
        /// A member of `sets[i]`.
        case set(Int)
        /// Continue at both.
        case split(Int, Int)
        case jump(Int)
        case assert(Assertion)
        case match
    }

    enum Assertion: Sendable, Equatable {
        /// `^`, `\A`
        case start
        /// `\z`
        case end
        /// `$`, `\Z`: the end, or before a line terminator that ends the input.
        case endBeforeTerminator
        case wordBoundary, notWordBoundary
    }

    let instructions: [Instruction]
    let sets: [ScalarSet]
    /// Each set's members below U+0080, a bit each (`sets[i]` asked once per ASCII scalar at
    /// compile time): a match over ASCII text tests a bit, where asking the set walks its items.
    let asciiMembers: [ASCIIMembers]

    struct ASCIIMembers: Sendable, Equatable {
        var low: UInt64 = 0
        var high: UInt64 = 0

        init(_ set: ScalarSet) {
            for v in 0..<128 where set.contains(Unicode.Scalar(UInt8(v))) {
                if v < 64 { low |= 1 << UInt64(v) } else { high |= 1 << UInt64(v - 64) }
            }
        }

        /// `v` below 128.
        func contains(_ v: UInt32) -> Bool {
            v < 64 ? low & (1 << UInt64(v)) != 0 : high & (1 << UInt64(v &- 64)) != 0
        }
    }

    init(_ pattern: String) throws(RegexError) {
        guard pattern.utf8.count <= ExpressionLimits.maxRegexPatternBytes else {
            throw RegexError("the pattern is longer than \(ExpressionLimits.maxRegexPatternBytes) bytes", at: 0, isLimit: true)
        }
        var parser = RegexParser(Array(pattern.unicodeScalars))
        let tree = try parser.parse()
        let size = tree.size
        guard size < ExpressionLimits.maxRegexInstructions else {
            throw RegexError("the pattern compiles to more than \(ExpressionLimits.maxRegexInstructions) instructions (a large {m,n}?)",
                             at: 0, isLimit: true)
        }
        var compiler = RegexCompiler()
        compiler.emit(tree)
        compiler.instructions.append(.match)
        instructions = compiler.instructions
        sets = compiler.sets
        asciiMembers = compiler.sets.map(ASCIIMembers.init)
    }
}

/// The parsed pattern. Empty pieces are dropped as they are built, so every node but `.empty`
/// compiles to at least one instruction and compiling costs no more than the program's size.
indirect enum RegexNode: Sendable {
    case empty
    case scalar(Unicode.Scalar)
    case set(ScalarSet)
    case assert(RegexProgram.Assertion)
    case concat([RegexNode])
    case alternation([RegexNode])
    /// max nil: unbounded.
    case repetition(RegexNode, min: Int, max: Int?)

    /// Instructions it compiles to, saturating far above any limit.
    var size: Int {
        let cap = 1 << 40
        switch self {
        case .empty: return 0
        case .scalar, .set, .assert: return 1
        case .concat(let items):
            var total = 0
            for item in items { total = Swift.min(cap, total + item.size) }
            return total
        case .alternation(let items):
            var total = 0
            for item in items { total = Swift.min(cap, total + item.size + 2) }
            return Swift.max(0, total - 2)
        case .repetition(let node, let min, let max):
            let n = node.size
            if n == 0 { return 0 }
            let fixed = Swift.min(cap, n * min)
            if let max { return Swift.min(cap, fixed + (max - min) * (n + 1)) }
            return Swift.min(cap, fixed + n + 2)
        }
    }
}

/// Emits a tree into instructions: the classic Thompson construction.
struct RegexCompiler {
    var instructions: [RegexProgram.Instruction] = []
    var sets: [ScalarSet] = []

    mutating func emit(_ node: RegexNode) {
        switch node {
        case .empty:
            break
        case .scalar(let c):
            instructions.append(.scalar(c))
        case .set(let set):
            if let i = sets.firstIndex(of: set) {
                instructions.append(.set(i))
            } else {
                sets.append(set)
                instructions.append(.set(sets.count - 1))
            }
        case .assert(let a):
            instructions.append(.assert(a))
        case .concat(let items):
            for item in items { emit(item) }
        case .alternation(let items):
            var exits: [Int] = []
            for (i, item) in items.enumerated() {
                if i == items.count - 1 {
                    emit(item)
                } else {
                    let split = instructions.count
                    instructions.append(.split(split + 1, -1))
                    emit(item)
                    exits.append(instructions.count)
                    instructions.append(.jump(-1))
                    instructions[split] = .split(split + 1, instructions.count)
                }
            }
            for exit in exits { instructions[exit] = .jump(instructions.count) }
        case .repetition(let item, let min, let max):
            if case .empty = item { return }
            for _ in 0..<min { emit(item) }
            if let max {
                // (x(x(x)?)?)?: each optional copy may stop the rest.
                var exits: [Int] = []
                for _ in 0..<(max - min) {
                    exits.append(instructions.count)
                    instructions.append(.split(instructions.count + 1, -1))
                    emit(item)
                }
                for exit in exits { instructions[exit] = .split(exit + 1, instructions.count) }
            } else {
                let loop = instructions.count
                instructions.append(.split(loop + 1, -1))
                emit(item)
                instructions.append(.jump(loop))
                instructions[loop] = .split(loop + 1, instructions.count)
            }
        }
    }
}
