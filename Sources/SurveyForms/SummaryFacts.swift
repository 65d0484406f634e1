/// What a response holds for a survey's summary, kept beside it in a few bytes: for each question
/// (`questions(of:)`, in that order: those outside repeats, then those inside) whether it was
/// shown and its answer as the summary counts it — a question inside a repeat once for each of
/// its instances. Written in the transaction that stores or changes the answers, so the
/// console's summary reads one narrow row per response instead of parsing every answers
/// document again (a million responses: a second instead of minutes).
///
/// The bytes: a format byte (1), then an entry per question, each a tag byte — its high bit set
/// when the form's logic hid the question — and the tag's payload:
///
/// | tag | meaning | payload |
/// |---|---|---|
/// | 1 | no answer | — |
/// | 2 | answered (a type counted only as answered, or a value of another shape) | — |
/// | 3 | a text: a select_one's choice, a date's `YYYY-MM-DD` | u16 length, UTF-8 bytes |
/// | 4 | a select_multiple's choices | u16 count, each as tag 3's payload |
/// | 5 | a number | the Double's 8 bytes, little-endian |
/// | 6 | a select_one's choice, by its place in the version's options | u32 |
/// | 7 | a select_multiple's choices, each by its place | u16 count, each a u32 |
/// | 8 | a question inside a repeat | u32 count of its instances, then an entry (1–7) for each |
///
/// A choice is written by its place (6, 7) when the version's options hold it, so the summary
/// counts it without comparing text; a name they lack (an entity list's, any other) as text.
public struct SummaryFacts: Sendable, Equatable {
    public static let format: UInt8 = 1
    static let hiddenFlag: UInt8 = 0x80

    public enum Answer: Equatable, Sendable {
        case none
        case answered
        case text(String)
        case choices([String])
        /// Choices by their place in the version's options.
        case choice(Int)
        case places([Int])
        case number(Double)
        /// A question inside repeats: its instances' entries follow.
        case instances(Int)
    }

    public var bytes: [UInt8]


    /// A question the summary shows: where it is (`repeats`: the ids of the repeats around it,
    /// outermost first; empty outside repeats) and whether a `relevant` on it or on a group or
    /// repeat around it decides whether it is shown.
    public struct Place: Sendable {
        public let question: Question
        public let hasLogic: Bool
        public let repeats: [String]
        /// The label of the repeat it is in (the innermost), when it is in one.
        public var repeatLabel: LocalizedText? = nil
    }

    /// The questions a summary shows of `definition`, in the form's order: those outside repeats,
    /// then those inside (so the entries of the ones outside keep their places).
    public static func questions(of definition: SurveyDefinition) -> [Place] {
        var outside: [Place] = [], inside: [Place] = []
        func walk(_ nodes: [FormNode], underLogic: Bool, repeats: [String], label: LocalizedText?) {
            for n in nodes {
                let logic = underLogic || n.relevant != nil
                switch n.kind {
                case .question(let q):
                    if repeats.isEmpty { outside.append(Place(question: q, hasLogic: logic, repeats: [])) }
                    else { inside.append(Place(question: q, hasLogic: logic, repeats: repeats, repeatLabel: label)) }
                case .group: walk(n.children, underLogic: logic, repeats: repeats, label: label)
                case .repeat: walk(n.children, underLogic: logic, repeats: repeats + [n.id], label: n.label)
                case .note: break
                }
            }
        }
        walk(definition.nodes, underLogic: false, repeats: [], label: nil)
        return outside + inside
    }

    /// What writing a version's facts needs, worked out once per version (`questions(of:)`, each
    /// question's path as the logic's hidden paths name it).
    public final class Plan: Sendable {
        struct Entry {
            let id: String
            let type: QuestionType
            let choices: ChoiceIndex
            /// `answers.<id>` where the logic may hide it; nil where it is always shown.
            let hiddenPath: String?
            let hasLogic: Bool
            let repeats: [String]
        }
        let entries: [Entry]
        /// Some question inside a repeat has logic: the hidden paths of its instances are needed,
        /// which the answers' check does not list (`hidden(_:answers:check:)`).
        public let needsRepeatRelevance: Bool
        public init(_ definition: SurveyDefinition) {
            entries = SummaryFacts.questions(of: definition).map { p in
                Entry(id: p.question.id, type: p.question.type, choices: p.question.choiceIndex,
                      hiddenPath: p.hasLogic ? "answers.\(p.question.id)" : nil, hasLogic: p.hasLogic, repeats: p.repeats)
            }
            needsRepeatRelevance = entries.contains { $0.hasLogic && !$0.repeats.isEmpty }
            hasLogic = entries.contains { $0.hasLogic }
        }

        /// Some question has logic: facts need the paths it hides.
        public let hasLogic: Bool

        /// The paths the logic hid, as facts need them: the check's own list of those outside
        /// repeats, or every one when a question inside a repeat has logic.
        public func hidden(_ definition: SurveyDefinition, answers: JSONValue, check: AnswerCheck) -> Set<String> {
            needsRepeatRelevance ? definition.notRelevant(in: answers) : check.hiddenOutsideRepeats
        }
    }

    /// The facts of `answers` (an object) under the version's plan; `hidden`: the paths the
    /// form's logic hid (`SurveyDefinition.notRelevant(in:)`, `answers.<id>`).
    public init(plan: Plan, answers: JSONValue, hidden: Set<String>) {
        var out: [UInt8] = [Self.format]
        out.reserveCapacity(1 + plan.entries.count * 6)
        let object = answers.objectValue ?? [:]
        for q in plan.entries {
            guard q.repeats.isEmpty else {
                Self.appendInstances(of: q, in: object, hidden: hidden, to: &out)
                continue
            }
            let flag: UInt8 = q.hiddenPath.map { hidden.contains($0) } == true ? Self.hiddenFlag : 0
            Self.append(object[q.id] ?? .null, of: q, flag: flag, to: &out)
        }
        bytes = out
    }

    /// A question inside repeats: its answer in every instance of the repeats around it, each
    /// with whether the logic hid it there (`answers.<repeat>[i]…<id>`).
    private static func appendInstances(of q: Plan.Entry, in object: [String: JSONValue], hidden: Set<String>, to out: inout [UInt8]) {
        var instances: [(object: [String: JSONValue], path: String)] = [(object, "answers")]
        for r in q.repeats {
            instances = instances.flatMap { parent -> [(object: [String: JSONValue], path: String)] in
                (parent.object[r]?.arrayValue ?? []).enumerated().compactMap { i, v in
                    v.objectValue.map { ($0, "\(parent.path).\(r)[\(i)]") }
                }
            }
        }
        out.append(8)
        append(UInt32(min(instances.count, Int(UInt32.max))), to: &out)
        for (instance, path) in instances {
            let flag: UInt8 = q.hasLogic && hidden.contains("\(path).\(q.id)") ? hiddenFlag : 0
            append(instance[q.id] ?? .null, of: q, flag: flag, to: &out)
        }
    }

    /// One answer's entry (tags 1–7).
    private static func append(_ value: JSONValue, of q: Plan.Entry, flag: UInt8, to out: inout [UInt8]) {
        switch (q.type, value) {
        case (_, .null):
            out.append(1 | flag)
        case (.selectOne, .string(let s)):
            if let at = q.choices.position(of: s) {
                out.append(6 | flag); Self.append(UInt32(at), to: &out)
            } else {
                out.append(3 | flag); Self.append(s, to: &out)
            }
        case (.date, .string(let s)), (.datetime, .string(let s)):
            out.append(3 | flag); Self.append(String(s.prefix(10)), to: &out)
        case (.selectMultiple, .array(let items)):
            let texts = items.compactMap(\.stringValue).prefix(Int(UInt16.max))
            let places = texts.compactMap { q.choices.position(of: $0) }
            if places.count == texts.count {
                out.append(7 | flag); Self.append(UInt16(places.count), to: &out)
                for p in places { Self.append(UInt32(p), to: &out) }
            } else {
                out.append(4 | flag); Self.append(UInt16(texts.count), to: &out)
                for t in texts { Self.append(t, to: &out) }
            }
        case (.integer, .number(let d)), (.decimal, .number(let d)):
            out.append(5 | flag)
            var bits = d.bitPattern.littleEndian
            withUnsafeBytes(of: &bits) { out += $0 }
        default:
            out.append(2 | flag)
        }
    }

    /// The facts of `answers` under `definition`, with the check the answers passed.
    public init(definition: SurveyDefinition, answers: JSONValue, check: AnswerCheck) {
        let plan = Plan(definition)
        self.init(plan: plan, answers: answers, hidden: plan.hidden(definition, answers: answers, check: check))
    }

    /// The facts of a stored answers document (canonical JSON) under its version's definition
    /// and plan.
    public init(plan: Plan, definition: SurveyDefinition, storedAnswers: String) {
        let parsed = (try? JSONParser.parse(Array(storedAnswers.utf8))) ?? .object([:])
        self.init(plan: plan, answers: parsed, hidden: plan.hasLogic ? definition.notRelevant(in: parsed) : [])
    }

    private static func append(_ n: UInt16, to out: inout [UInt8]) {
        out.append(UInt8(n & 0xff)); out.append(UInt8(n >> 8))
    }

    private static func append(_ n: UInt32, to out: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8((n >> UInt32(shift)) & 0xff)) }
    }

    /// A text cut at a character boundary to at most 65,535 bytes.
    private static func append(_ s: String, to out: inout [UInt8]) {
        var utf8 = Array(s.utf8)
        if utf8.count > Int(UInt16.max) {
            var end = Int(UInt16.max)
            while end > 0 && utf8[end] & 0xC0 == 0x80 { end -= 1 }
            utf8 = Array(utf8[..<end])
        }
        append(UInt16(utf8.count), to: &out)
        out += utf8
    }
}
