/// What an evaluation reads, through the caller's own structures: closures, so that the caller
/// decides what a name means where it is evaluated (inside a repeat, `${sibling}` is the same
/// instance's answer; from outside, a question inside a repeat is a `.nodes` list), and how
/// each answer is typed (`.date(days:)` for dates, `.number` for integers and decimals,
/// `.string` otherwise; an absent or non-relevant answer is `.string("")`).
public struct EvaluationContext {
    /// The value of `${id}`.
    public var reference: (String) -> Value
    /// The value of `.`: the answer a `constraint` checks.
    public var current: Value
    /// The value of a bare name: in a `choiceFilter`, the choice's column.
    public var field: (String) -> Value
    /// `position()`, `position(..)`: the 1-based repeat instance.
    public var position: Int

    public init(reference: @escaping (String) -> Value, current: Value = .string(""),
                field: @escaping (String) -> Value = { _ in .string("") }, position: Int = 0) {
        self.reference = reference
        self.current = current
        self.field = field
        self.position = position
    }
}
