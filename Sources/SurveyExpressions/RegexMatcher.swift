/// Thompson's simulation of the program: every thread advances one input scalar at a time, at
/// most one thread per instruction, so the work is O(instructions × input) whatever the pattern
/// (`(a+)+$` included) and there is no backtracking.
extension RegexProgram {
    /// Whether the pattern matches `text` — the whole of it when `entire` (java.util.regex's
    /// `Pattern.matches`, what JavaRosa's regex() calls), or some part of it otherwise (a search,
    /// as JavaScript's `RegExp.test`). Each thread step costs one unit of `budget`; nil when the
    /// budget runs out.
    func matches(_ text: String, entire: Bool, budget: inout Int) -> Bool? {
        // Reading the input costs its length; refuse before copying what cannot be afforded.
        guard text.utf8.count <= budget else { return nil }
        // ASCII text (a phone number, a code) is read in place, a byte a scalar: no copy of it.
        var ascii: Bool??
        text.utf8.withContiguousStorageIfAvailable { bytes in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return }
            ascii = .some(run(ASCIIText(bytes: bytes), entire: entire, budget: &budget))
        }
        if let result = ascii { return result }
        return run(Array(text.unicodeScalars), entire: entire, budget: &budget)
    }

    private func run<Input: ScalarText>(_ input: Input, entire: Bool, budget: inout Int) -> Bool? {
        budget -= input.count
        let n = instructions.count
        // Both thread sets (dense and sparse halves) and the stack of `add` in one allocation,
        // on the stack for any usual pattern. `add` pushes at most two per instruction, plus one.
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 6 * n + 1) { memory in
            memory.initialize(repeating: 0)
            var current = ThreadSet(memory, at: 0, capacity: n)
            var next = ThreadSet(memory, at: 2 * n, capacity: n)
            let stack = UnsafeMutableBufferPointer(rebasing: memory[(4 * n)...])
            add(0, at: 0, input, &current, stack)
            var position = 0
            while true {
                budget -= current.count
                if budget < 0 { return nil }
                if position == input.count {
                    for k in 0..<current.count where instructions[current[k]] == .match { return true }
                    return false
                }
                let c = input[position]
                for k in 0..<current.count {
                    let pc = current[k]
                    switch instructions[pc] {
                    case .scalar(let x):
                        if x == c { add(pc + 1, at: position + 1, input, &next, stack) }
                    case .set(let s):
                        let member = c.value < 128 ? asciiMembers[s].contains(c.value) : sets[s].contains(c)
                        if member { add(pc + 1, at: position + 1, input, &next, stack) }
                    case .match:
                        if !entire { return true }
                    default:
                        break
                    }
                }
                if !entire { add(0, at: position + 1, input, &next, stack) }
                if next.count == 0 { return false }
                swap(&current, &next)
                next.removeAll()
                position += 1
            }
        }
    }

    /// Adds the thread at `pc` and everything reachable from it without reading input (splits,
    /// jumps, assertions that hold at `position`), once each.
    private func add<Input: ScalarText>(_ pc: Int, at position: Int, _ input: Input, _ set: inout ThreadSet,
                                        _ stack: UnsafeMutableBufferPointer<Int>) {
        var top = 0
        func push(_ x: Int) {
            guard top < stack.count else { return }
            stack[top] = x
            top += 1
        }
        push(pc)
        while top > 0 {
            top -= 1
            let x = stack[top]
            guard x >= 0, x < instructions.count, !set.contains(x) else { continue }
            set.insert(x)
            switch instructions[x] {
            case .jump(let target):
                push(target)
            case .split(let a, let b):
                push(b)
                push(a)
            case .assert(let assertion):
                if holds(assertion, at: position, input) { push(x + 1) }
            default:
                break
            }
        }
    }

    private func holds<Input: ScalarText>(_ assertion: Assertion, at p: Int, _ input: Input) -> Bool {
        let n = input.count
        switch assertion {
        case .start:
            return p == 0
        case .end:
            return p == n
        case .endBeforeTerminator:
            if p == n { return true }
            if p == n - 1 {
                let c = input[p]
                return ScalarSet.isLineTerminator(c) && !(c == "\n" && p > 0 && input[p - 1] == "\r")
            }
            return p == n - 2 && input[p] == "\r" && input[p + 1] == "\n"
        case .wordBoundary, .notWordBoundary:
            let before = p > 0 && p <= n && ScalarSet.isWord(input[p - 1])
            let after = p < n && ScalarSet.isWord(input[p])
            return (before != after) == (assertion == .wordBoundary)
        }
    }
}

/// The input of a match, scalar by scalar.
protocol ScalarText {
    var count: Int { get }
    subscript(_ i: Int) -> Unicode.Scalar { get }
}

extension Array: ScalarText where Element == Unicode.Scalar {}

/// ASCII bytes, each its own scalar.
struct ASCIIText: ScalarText {
    let bytes: UnsafeBufferPointer<UInt8>
    var count: Int { bytes.count }
    subscript(_ i: Int) -> Unicode.Scalar { Unicode.Scalar(bytes[i]) }
}

/// A set of instruction indexes with O(1) insert, lookup and clear, in insertion order
/// (Briggs and Torczon's sparse set), in memory the match owns.
struct ThreadSet {
    private let dense: UnsafeMutableBufferPointer<Int>
    private let sparse: UnsafeMutableBufferPointer<Int>
    private(set) var count = 0

    /// `2 * capacity` integers of `memory` from `start`, initialized.
    init(_ memory: UnsafeMutableBufferPointer<Int>, at start: Int, capacity: Int) {
        dense = UnsafeMutableBufferPointer(rebasing: memory[start..<(start + capacity)])
        sparse = UnsafeMutableBufferPointer(rebasing: memory[(start + capacity)..<(start + 2 * capacity)])
    }

    subscript(_ k: Int) -> Int { dense[k] }

    func contains(_ x: Int) -> Bool {
        let s = sparse[x]
        return s < count && dense[s] == x
    }

    mutating func insert(_ x: Int) {
        sparse[x] = count
        dense[count] = x
        count += 1
    }

    mutating func removeAll() {
        count = 0
    }
}
