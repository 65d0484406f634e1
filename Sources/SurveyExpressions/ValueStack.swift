/// The values of a running program, in memory its caller owns (`Evaluator.run` takes it from the
/// call's frame). The compiler sizes it (`Program.maxStack`) and keeps it balanced; should that
/// ever be wrong, a push beyond the end is dropped and a pop of nothing is the empty string, so
/// that no input can make it trap.
struct ValueStack {
    private let buffer: UnsafeMutableBufferPointer<Value>
    private(set) var count = 0

    init(_ buffer: UnsafeMutableBufferPointer<Value>) {
        self.buffer = buffer
    }

    mutating func push(_ value: Value) {
        guard count < buffer.count, let base = buffer.baseAddress else { return }
        (base + count).initialize(to: value)
        count += 1
    }

    mutating func pop() -> Value {
        guard count > 0, let base = buffer.baseAddress else { return .string("") }
        count -= 1
        return (base + count).move()
    }

    /// The top two values when both are numbers (the deeper first), popped; nil, and nothing
    /// popped, otherwise. Numbers hold no references: nothing to move out or release.
    mutating func popNumbers() -> (Double, Double)? {
        guard count >= 2, let base = buffer.baseAddress,
              case .number(let y) = base[count - 1], case .number(let x) = base[count - 2] else { return nil }
        count -= 2
        return (x, y)
    }

    /// The top value when it is a boolean, popped; nil, and nothing popped, otherwise.
    mutating func popBoolean() -> Bool? {
        guard count >= 1, let base = buffer.baseAddress, case .boolean(let b) = base[count - 1] else { return nil }
        count -= 1
        return b
    }

    /// The top `n` values, the deepest first.
    mutating func popLast(_ n: Int) -> [Value] {
        var out = [Value](repeating: .string(""), count: Swift.max(0, Swift.min(n, count)))
        for i in out.indices.reversed() { out[i] = pop() }
        return out
    }

    /// Ends every value still held (a program that stopped with an error leaves some).
    mutating func removeAll() {
        guard let base = buffer.baseAddress, count > 0 else { return }
        base.deinitialize(count: count)
        count = 0
    }
}
