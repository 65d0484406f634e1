/// One broken rule, located by a path such as `definition.questions[2].choices` or `answers.age`.
public struct FieldError: Sendable, Equatable, Hashable, CustomStringConvertible {
    public let path: String
    public let message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}

/// Every rule a document breaks, collected rather than stopping at the first.
public struct ValidationErrors: Error, Sendable, Equatable {
    public let errors: [FieldError]

    public init(_ errors: [FieldError]) { self.errors = errors }
}
