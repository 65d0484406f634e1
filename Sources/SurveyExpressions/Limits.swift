/// The bounds every expression stays within, so that a hostile or broken definition or answer
/// costs bounded time and memory on the server and on a phone alike.
public enum ExpressionLimits {
    /// Longest source accepted, in UTF-8 bytes. Real forms stay under a few hundred.
    public static let maxSourceBytes = 16 * 1024
    /// Deepest nesting of parentheses, function calls and unary minus groups. The parser checks
    /// it before it recurses, so no input can exhaust the stack.
    public static let maxDepth = 64
    /// Work one evaluation may do: a unit is a node evaluated, a node-set item visited, a byte
    /// scanned or copied by a string function, or a regex thread step.
    public static let maxEvaluationSteps = 10_000_000
    /// Longest string an evaluation builds (concat, join, translate, format-date), in UTF-8 bytes.
    public static let maxStringBytes = 1 << 20
    /// Largest compiled regex program; counted repetition is expanded, so `a{1000}` costs 1000.
    public static let maxRegexInstructions = 2_048
    /// Largest bound of a counted repetition `{m,n}`.
    public static let maxRegexRepetition = 1_000
    /// Longest regex pattern compiled, in UTF-8 bytes (a literal one is also bounded by the source).
    public static let maxRegexPatternBytes = 16 * 1024
}
