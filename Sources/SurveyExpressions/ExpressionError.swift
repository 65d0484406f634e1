/// Why an expression does not parse or could not be evaluated: a sentence for the form's
/// author, and where in the source it applies.
public struct ExpressionError: Error, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The source breaks the grammar, names an unknown function, passes the wrong number of
        /// arguments, or has a regex pattern that does not compile. Found by `Expression.init`.
        case syntax
        /// A bound of `ExpressionLimits` was reached (source length, nesting, regex size,
        /// evaluation steps, string length).
        case limit
        /// `evaluate` was called on an expression with `dependsOnMoment`.
        case dependsOnMoment
        /// A value met at evaluation made it impossible to go on (a regex pattern taken from an
        /// answer that does not compile).
        case evaluation
    }

    public let message: String
    /// Offset into the source in Unicode scalars (XPath's characters), 0-based.
    public let offset: Int
    public let kind: Kind

    public init(_ message: String, offset: Int, kind: Kind = .syntax) {
        self.message = message
        self.offset = offset
        self.kind = kind
    }
}
