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
        let input = Array(text.unicodeScalars)
        budget -= input.count
        let n = instructions.count
        var current = ThreadSet(capacity: n)
        var next = ThreadSet(capacity: n)
        var stack: [Int] = []
        add(0, at: 0, input, &current, &stack)
        var position = 0
        while true {
            budget -= current.count
            if budget < 0 { return nil }
            if position == input.count {
                for k in 0..<current.count where instructions[current.dense[k]] == .match { return true }
                return false
            }
            let c = input[position]
            for k in 0..<current.count {
                let pc = current.dense[k]
                switch instructions[pc] {
                case .scalar(let x):
                    if x == c { add(pc + 1, at: position + 1, input, &next, &stack) }
                case .set(let s):
                    if sets[s].contains(c) { add(pc + 1, at: position + 1, input, &next, &stack) }
                case .match:
                    if !entire { return true }
                default:
                    break
                }
            }
            if !entire { add(0, at: position + 1, input, &next, &stack) }
            if next.count == 0 { return false }
            swap(&current, &next)
            next.removeAll()
            position += 1
        }
    }

    /// Adds the thread at `pc` and everything reachable from it without reading input (splits,
    /// jumps, assertions that hold at `position`), once each.
    private func add(_ pc: Int, at position: Int, _ input: [Unicode.Scalar], _ set: inout ThreadSet, _ stack: inout [Int]) {
        stack.append(pc)
        while let x = stack.popLast() {
            guard x >= 0, x < instructions.count, !set.contains(x) else { continue }
            set.insert(x)
            switch instructions[x] {
            case .jump(let target):
                stack.append(target)
            case .split(let a, let b):
                stack.append(b)
                stack.append(a)
            case .assert(let assertion):
                if holds(assertion, at: position, input) { stack.append(x + 1) }
            default:
                break
            }
        }
    }

    private func holds(_ assertion: Assertion, at p: Int, _ input: [Unicode.Scalar]) -> Bool {
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

/// A set of instruction indexes with O(1) insert, lookup and clear, in insertion order
/// (Briggs and Torczon's sparse set).
struct ThreadSet {
    private(set) var dense: [Int]
    private var sparse: [Int]
    private(set) var count = 0

    init(capacity: Int) {
        dense = [Int](repeating: 0, count: capacity)
        sparse = [Int](repeating: 0, count: capacity)
    }

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
