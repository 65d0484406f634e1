import Synchronization

/// What one piece of work parsed: bound around an operation (`ParsingTally.$current.withValue`)
/// by a test that shows a form is read once. Unbound — always, outside such a test — counting
/// costs one task-local read.
public final class ParsingTally: Sendable {
    @TaskLocal public static var current: ParsingTally?

    private let counts = Mutex<(expressions: Int, xmlDocuments: Int)>((0, 0))

    public init() {}

    /// Expressions parsed (`Expression.init`).
    public var expressions: Int { counts.withLock { $0.expressions } }
    /// XML documents parsed (an XForm, a submitted instance).
    public var xmlDocuments: Int { counts.withLock { $0.xmlDocuments } }

    public static func countExpression() { current?.counts.withLock { $0.expressions += 1 } }
    public static func countXMLDocument() { current?.counts.withLock { $0.xmlDocuments += 1 } }
}
