/// What an evaluation reads, through the caller's own structures, so that the caller decides
/// what a name means where it is evaluated (inside a repeat, `${sibling}` is the same instance's
/// answer; from outside, a question inside a repeat is a `.nodes` list), and how each answer is
/// typed (`.date(days:)` for dates, `.number` for integers and decimals, `.string` otherwise; an
/// absent or non-relevant answer is `.string("")`).
public struct EvaluationContext {
    /// The value of `${id}`, by name; used when there is no `source`.
    public var reference: (String) -> Value
    /// The value of `${id}` by its slot (its index in `Expression.references`): a caller that
    /// evaluates many expressions resolves each name once, not on every evaluation.
    public var source: (any ReferenceSource)?
    /// The value of `.`: the answer a `constraint` checks.
    public var current: Value
    /// The value of a bare name: in a `choiceFilter`, the choice's column.
    public var field: (String) -> Value
    /// `position()`, `position(..)`: the 1-based repeat instance.
    public var position: Int
    /// `pulldata(...)` by slot (its index in `Expression.lookups`) and key; used when there is
    /// no `source`. Nothing found is the empty string, as in ODK Collect.
    public var lookup: (Int, Value) -> Value = { _, _ in .string("") }

    public init(reference: @escaping (String) -> Value, current: Value = .string(""),
                field: @escaping (String) -> Value = { _ in .string("") }, position: Int = 0) {
        self.reference = reference
        self.source = nil
        self.current = current
        self.field = field
        self.position = position
    }

    public init(source: any ReferenceSource, current: Value = .string(""),
                field: @escaping (String) -> Value = { _ in .string("") }, position: Int = 0) {
        self.reference = { _ in .string("") }
        self.source = source
        self.current = current
        self.field = field
        self.position = position
    }
}

/// Answers `${id}` by slot: the index of the name in the evaluated expression's `references`.
public protocol ReferenceSource: AnyObject {
    func value(ofReference slot: Int) -> Value
    /// `pulldata(...)` by slot (its index in `Expression.lookups`) and key: the column's value in
    /// the first row whose key column holds the key, else the empty string.
    func value(ofLookup slot: Int, key: Value) -> Value
}

extension ReferenceSource {
    public func value(ofLookup slot: Int, key: Value) -> Value { .string("") }
}
