import SurveyExpressions

/// One node of a definition (version 2): a question, a note, a group or a repeat. Groups add no
/// level to the answers; a repeat's answer is a list of objects keyed by its children's ids.
public struct FormNode: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case question(Question)
        /// Shows text, takes no answer.
        case note
        case group
        case `repeat`(RepeatCounts)
    }

    public let id: String
    /// The element an XForm and an OpenRosa instance name the node by: the id, unless two nodes
    /// of the form share a name in different groups (`col1/count`, `col2/count`), where the ids
    /// tell them apart and the name stays the form's own.
    public let name: String
    public let kind: Kind
    public let label: LocalizedText?
    /// The node is shown (and may be answered) only while this is true, and its ancestors' too.
    public let relevant: Logic?
    public let children: [FormNode]

    init(id: String, name: String? = nil, kind: Kind, label: LocalizedText?, relevant: Logic?, children: [FormNode]) {
        self.id = id
        self.name = name ?? id
        self.kind = kind
        self.label = label
        self.relevant = relevant
        self.children = children
    }

    public var question: Question? {
        if case .question(let q) = kind { return q }
        return nil
    }

    /// The question's type, read without copying the question.
    public var questionType: QuestionType? {
        if case .question(let q) = kind { return q.type }
        return nil
    }

    public var isRepeat: Bool {
        if case .repeat = kind { return true }
        return false
    }
}

/// How many instances a repeat takes: bounds, and an expression the count must equal.
public struct RepeatCounts: Sendable, Equatable {
    public let minCount: Int?
    public let maxCount: Int?
    public let repeatCount: Logic?
}

/// A parsed expression of the form's logic, with the text it was written as (two are equal when
/// their texts are).
/// A class: a check passes its logic around for every answer, and a copy of a class is one
/// retain where a copy of the parsed tree and its names would be several.
public final class Logic: Sendable, Equatable {
    public let expression: Expression
    public var source: String { expression.source }
    /// Whether it calls `today()`, `now()`, … (then the server does not evaluate it).
    let dependsOnMoment: Bool

    init(_ expression: Expression) {
        self.expression = expression
        dependsOnMoment = expression.dependsOnMoment
    }

    public static func == (a: Logic, b: Logic) -> Bool { a.source == b.source }
}

/// The logic of a question beyond its type's rules.
public struct QuestionLogic: Sendable, Equatable {
    /// `required` written as an expression (a plain `true` is `Question.required`).
    public var requiredWhen: Logic?
    /// `.` is the answer itself; checked only for a present answer.
    public var constraint: Logic?
    public var constraintMessage: LocalizedText?
    /// Kept for the devices; the server takes the answer as sent.
    public var readonly: Logic?
    public var calculation: Logic?
    public var defaultValue: String?
    /// Which choices are offered: an expression over the choice's columns (bare names) and answers.
    public var choiceFilter: Logic?

    static let none = QuestionLogic()
}

/// One choice of a select question: its `name` (what an answer holds), its label, and the extra
/// columns a `choiceFilter` reads.
public struct Choice: Sendable, Equatable {
    public let name: String
    public let label: LocalizedText?
    public let columns: [String: String]
}
