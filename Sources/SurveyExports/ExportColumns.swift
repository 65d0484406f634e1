import SurveyDomain

/// The columns of a survey's export over all its versions: the metadata columns, then one per
/// question headed by its id and one per repeat outside any other (its number of instances) — in
/// the newest version's order, as ODK Central keeps it, then what only older versions had. A
/// question a response's version lacks is an empty cell.
public struct ExportColumns: Sendable {
    public static let metadata = ["responseId", "clientSubmissionId", "surveyVersionId", "versionNumber", "submittedBy",
                                  "submitterName", "receivedAt", "capturedAt", "reviewState", "revision", "fieldTaskId"]

    /// The questions in column order (for a question in several versions, the newest one's).
    public let questions: [Question]
    public let splitSelectMultiples: Bool
    /// select_multiple: every choice any version offered, in first-seen order (newest first).
    private let choices: [String: [String]]

    /// `definitions`: oldest first, as versions are numbered.
    public init(definitions: [SurveyDefinition], splitSelectMultiples: Bool) {
        var seen: Set<String> = []
        var questions: [Question] = []
        var choices: [String: [String]] = [:]
        for definition in definitions.reversed() {
            for q in definition.questions {
                if seen.insert(q.id).inserted { questions.append(q) }
                if q.type == .selectMultiple {
                    for c in q.choices where !(choices[q.id]?.contains(c) ?? false) { choices[q.id, default: []].append(c) }
                }
            }
        }
        self.questions = questions
        self.choices = choices
        self.splitSelectMultiples = splitSelectMultiples
        repeats = RepeatTable.tables(definitions)
        var row = SlotList()
        for definition in definitions.reversed() { row.add(definition.nodes) }
        // The newest version's question wherever a question is in several (as `questions`).
        let newest = Dictionary(questions.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        rowSlots = row.slots.map { if case .question(let q) = $0 { .question(newest[q.id] ?? q) } else { $0 } }
        repeatCounts = rowSlots.compactMap { if case .repeatCount(let id) = $0 { id } else { nil } }
        header = Self.metadata + Self.header(rowSlots, choices, splitSelectMultiples)
        repeatHeaders = repeats.map { t in ["PARENT_KEY", "KEY"] + Self.header(t.slots, choices, splitSelectMultiples) }
    }

    /// A group of columns of a row: a question's cells, or a repeat's number of instances.
    enum Slot: Sendable {
        case question(Question)
        case repeatCount(String)
    }

    /// Slots in the form's order, each once: a question outside repeats (groups entered), a
    /// repeat as its count (never entered). Added version by version, newest first.
    struct SlotList {
        private(set) var slots: [Slot] = []
        private var seen: Set<String> = []

        mutating func add(_ nodes: [FormNode]) {
            // Iterative: the tree's depth is bounded, but a walk need not rely on it.
            var stack = Array(nodes.reversed())
            while let n = stack.popLast() {
                switch n.kind {
                case .question(let q): if seen.insert(q.id).inserted { slots.append(.question(q)) }
                case .repeat: if seen.insert(n.id).inserted { slots.append(.repeatCount(n.id)) }
                case .group: stack += n.children.reversed()
                case .note: break
                }
            }
        }
    }

    /// The response row's slots after the metadata columns.
    let rowSlots: [Slot]

    /// Every repeat of every version, outermost first: a table each (`PARENT_KEY`, `KEY`, its
    /// questions, its nested repeats' counts). Empty for a form without repeats.
    public let repeats: [RepeatTable]
    /// The repeats outside any repeat: a column of a response's row each, its number of instances.
    let repeatCounts: [String]
    /// Each repeat table's column names, in `repeats` order.
    public let repeatHeaders: [[String]]

    /// The column names, in order.
    public let header: [String]

    private static func header(_ slots: [Slot], _ choices: [String: [String]], _ splitSelectMultiples: Bool) -> [String] {
        var h: [String] = []
        for slot in slots {
            guard case .question(let q) = slot else {
                if case .repeatCount(let id) = slot { h.append(id) }
                continue
            }
            switch q.type {
            case .geopoint: h += ["\(q.id).lat", "\(q.id).lon", "\(q.id).accuracy"]
            case .selectMultiple:
                h.append(q.id)
                if splitSelectMultiples { h += (choices[q.id] ?? []).map { "\(q.id)/\($0)" } }
            default: h.append(q.id)
            }
        }
        return h
    }

    /// The cells of `slots` for one set of answers (a response's, or a repeat instance's).
    func appendSlots(_ slots: [Slot], _ answers: [String: JSONValue], file: (_ questionId: String, _ clientUploadId: String) -> String,
                     into out: inout [Cell]) {
        for slot in slots {
            switch slot {
            case .question(let q): appendCells(q, answers[q.id], file: file, into: &out)
            case .repeatCount(let id): out.append(.number(Double(answers[id]?.arrayValue?.count ?? 0)))
            }
        }
    }

    /// A question's cells for `stored` (nil or null: empty cells), in `header` order.
    func appendCells(_ q: Question, _ stored: JSONValue?, file: (_ questionId: String, _ clientUploadId: String) -> String,
                     into out: inout [Cell]) {
        // A null answer is an empty cell. (Not `flatMap { $0.isNull ? nil : $0 }`: JSONValue
        // is ExpressibleByNilLiteral, so that `nil` would be `.null` again.)
        let value: JSONValue? = stored?.isNull == true ? nil : stored
        switch q.type {
        case .geopoint:
            let o = value?.objectValue
            for k in ["lat", "lon", "accuracy"] { out.append(o?[k]?.doubleValue.map(Cell.number) ?? .empty) }
        case .selectMultiple:
            let chosen = value?.arrayValue?.compactMap(\.stringValue)
            out.append(chosen.map { .text($0.joined(separator: " ")) } ?? .empty)
            if splitSelectMultiples {
                for c in choices[q.id] ?? [] { out.append(chosen.map { .number($0.contains(c) ? 1 : 0) } ?? .empty) }
            }
        case .integer, .decimal:
            out.append(value?.doubleValue.map(Cell.number) ?? .empty)
        case .file:
            out.append(value?.objectValue?["clientUploadId"]?.stringValue.map { .text(file(q.id, $0)) } ?? .empty)
        case .text, .selectOne, .date, .time, .datetime, .geotrace, .geoshape, .barcode, .calculate:
            out.append(value.map { .text($0.stringValue ?? CanonicalJSON.string($0)) } ?? .empty)
        }
    }

    /// One question's cells for `stored` (a file answer as its upload id), exactly as a row's:
    /// what the OData feed types and writes and the console's data table shows, so that neither
    /// ever disagrees with a CSV.
    public func cells(of q: Question, _ stored: JSONValue?) -> [Cell] {
        var out: [Cell] = []
        appendCells(q, stored, file: { $1 }, into: &out)
        return out
    }

    /// One question's cells of a row (`cells(of:_:)` of its answer).
    public func cells(of q: Question, in row: ExportRow) -> [Cell] { cells(of: q, row.answers[q.id]) }

    /// A select_multiple question's choices over every version, as its split columns list them.
    func choices(of questionId: String) -> [String] { choices[questionId] ?? [] }

    /// The first geopoint question, the default of a GeoJSON export.
    public var firstGeopoint: String? { questions.first { $0.type == .geopoint }?.id }

    /// A row's cells, in `header` order. `file` gives a file answer's cell (its upload id, or
    /// its path inside a zip).
    public func cells(_ r: ExportRow, file: (_ questionId: String, _ clientUploadId: String) -> String = { $1 }) -> [Cell] {
        var out: [Cell] = [
            .text(r.responseId), .text(r.clientSubmissionId), .text(r.surveyVersionId), r.versionNumber.map { .number(Double($0)) } ?? .empty,
            .text(r.submittedBy), r.submitterName.map(Cell.text) ?? .empty, .timestamp(r.receivedAt), r.capturedAt.map(Cell.timestamp) ?? .empty,
            .text(r.reviewState), .number(Double(r.revision)), r.fieldTaskId.map(Cell.text) ?? .empty,
        ]
        out.reserveCapacity(header.count)
        appendSlots(rowSlots, r.answers, file: file, into: &out)
        return out
    }
}
