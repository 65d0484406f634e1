/// An expression of a form's logic (`relevant`, `constraint`, `required`, `calculation`,
/// `choiceFilter`, `repeatCount`), parsed once per definition version and then evaluated for
/// each submission.
///
/// Evaluation never traps and costs bounded work (`ExpressionLimits`). An expression that
/// `dependsOnMoment` is not evaluated at all: `evaluate` throws an `ExpressionError` of kind
/// `.dependsOnMoment` at once, whatever branch would have been taken, because the value the
/// device computed (maybe days before) cannot be reproduced here.
public struct Expression: Sendable {
    public let source: String
    /// The ids named by `${id}`, each once, in order of first appearance.
    public let references: [String]
    /// The bare names (in a `choiceFilter`, columns of the choice), each once, in order.
    public let fields: [String]
    /// What its `pulldata` calls read, each once, in order (a lookup's slot is its index).
    public let lookups: [Lookup]
    /// `.` appears (or a call that reads it implicitly: `string-length()`, `normalize-space()`).
    public let usesCurrent: Bool
    /// `position()` or `position(..)` appears.
    public let usesPosition: Bool
    /// `today()`, `now()`, `random()`, `uuid()` or `once()` appears anywhere.
    public var dependsOnMoment: Bool { momentCall != nil }

    let root: Node
    let program: Program
    private let momentCall: MomentCall?

    private struct MomentCall: Sendable {
        let name: String
        let offset: Int
    }

    public init(_ source: String) throws(ExpressionError) {
        ParsingTally.countExpression()
        let bytes = source.utf8.count
        guard bytes <= ExpressionLimits.maxSourceBytes else {
            throw ExpressionError("the expression is \(bytes) bytes long; the limit is \(ExpressionLimits.maxSourceBytes)",
                                  offset: 0, kind: .limit)
        }
        var parser = try Parser(scalars: Array(source.unicodeScalars))
        root = try parser.parse()
        program = Program(root, references: parser.references, fields: parser.fields)
        self.source = source
        references = parser.references
        fields = parser.fields
        lookups = parser.lookups
        usesCurrent = parser.usesCurrent
        usesPosition = parser.usesPosition
        momentCall = parser.momentCall.map { MomentCall(name: $0.name, offset: $0.offset) }
    }

    public func evaluate(_ context: EvaluationContext) throws(ExpressionError) -> Value {
        if let call = momentCall { throw Self.dependsOnMoment(call) }
        var evaluator = Evaluator(current: context.current, position: context.position)
        return try evaluator.run(program, context)
    }

    /// The same as `evaluate(EvaluationContext(source:current:position:))`, whose bare names
    /// are all the empty string, without a context to build and tear down: for a caller that
    /// evaluates a form's logic many times a submission.
    public func evaluate(source: any ReferenceSource, current: Value = .string(""), position: Int = 0) throws(ExpressionError) -> Value {
        if let call = momentCall { throw Self.dependsOnMoment(call) }
        var evaluator = Evaluator(current: current, position: position)
        return try evaluator.run(program, SourceBindings(source: source))
    }

    private static func dependsOnMoment(_ call: MomentCall) -> ExpressionError {
        ExpressionError("\(call.name)() at offset \(call.offset) depends on the moment and the device, so the expression is not evaluated here",
                        offset: call.offset, kind: .dependsOnMoment)
    }

    /// The expression written back in a canonical form (single spaces, needed parentheses only);
    /// it parses to the same tree.
    var canonical: String { root.canonical }
}
