import SurveyDomain
import SurveyStorage

/// Seeing a survey's data: a table of its responses a page at a time, and a summary of every
/// question counted by the database. Any member of the organization; a collector sees their own
/// responses only. Reads, so never gated: they keep working while the subscription is expired.
public struct DataViews: Sendable {
    /// Who may open the views: every member (what each sees is narrowed by `filter`).
    public static let access = Access.member(anyOf: [])
    /// The page sizes offered.
    public static let pageSizes = [50, 100, 250]
    let operations: Operations

    /// Which responses a view shows: the exports' filters.
    public struct Filter: Sendable, Equatable {
        public var reviewStates: [ReviewState] = []
        public var surveyVersionId: String?
        public var submittedBy: String?
        public var fieldTaskId: String?
        /// Inclusive / exclusive, server time in milliseconds.
        public var receivedFrom: Int64?
        public var receivedTo: Int64?
        public init() {}
    }

    /// The storage filter for `user`: a collector's own responses only, whatever was asked.
    func storageFilter(orgId: String, surveyId: String, by user: UserRecord, _ filter: Filter) -> ExportFilter {
        var f = ExportFilter(orgId: orgId, surveyId: surveyId)
        f.reviewStates = filter.reviewStates
        f.surveyVersionId = filter.surveyVersionId
        f.submittedBy = filter.submittedBy
        f.fieldTaskId = filter.fieldTaskId
        f.receivedFrom = filter.receivedFrom
        f.receivedTo = filter.receivedTo
        if !operations.seesAll(user) { f.onlySubmitter = user.userId }
        return f
    }

    /// What every view shows around its data: the survey, its versions (oldest first) with
    /// their definitions, and the people the "Submitted by" filter offers (a collector: only
    /// themselves) with every member's name.
    public struct Context: Sendable {
        public let survey: SurveyRecord
        public let versions: [(record: SurveyVersionRecord, definition: SurveyDefinition)]
        public let submitters: [UserRecord]
        public let names: [String: String]
        /// The latest version's definition (nil before the first is published).
        public var latest: SurveyDefinition? { versions.last?.definition }
    }

    private func context(_ db: ReadContext, orgId: String, surveyId: String, by user: UserRecord) throws -> Context {
        guard let survey = try db.survey(orgId: orgId, surveyId: surveyId) else { throw ApiError.notFound() }
        let versions = try db.surveyVersions(surveyId: surveyId).map { (record: $0, definition: try operations.definitions.definition(of: $0)) }
        let users = try db.users(orgId: orgId)
        let submitters = operations.seesAll(user) ? try db.submitters(orgId: orgId) : users.filter { $0.userId == user.userId }
        return Context(survey: survey, versions: versions, submitters: submitters,
                       names: Dictionary(users.map { ($0.userId, $0.name) }, uniquingKeysWith: { a, _ in a }))
    }

    /// The survey, its versions and the people of the filter, for a view that reads its rows
    /// elsewhere (the map reads them as the GeoJSON export does).
    public func context(orgId: String, surveyId: String, by user: UserRecord) throws -> Context {
        try operations.member(user, of: orgId)
        return try operations.database.read { db in try context(db, orgId: orgId, surveyId: surveyId, by: user) }
    }

    public struct Page: Sendable {
        public let context: Context
        public let rows: [ExportedResponse]
        /// The responseId the next page starts before; nil on the last page.
        public let next: String?
    }

    /// A page of the table: `limit` responses newest first, before `before` (a responseId).
    public func page(orgId: String, surveyId: String, by user: UserRecord, _ filter: Filter, before: String?, limit: Int) throws -> Page {
        try operations.member(user, of: orgId)
        let f = storageFilter(orgId: orgId, surveyId: surveyId, by: user, filter)
        return try operations.database.read { db in
            let context = try context(db, orgId: orgId, surveyId: surveyId, by: user)
            let rows = try db.dataRows(f, before: before, limit: limit + 1)
            return Page(context: context, rows: Array(rows.prefix(limit)), next: rows.count > limit ? rows[limit - 1].responseId : nil)
        }
    }

    // MARK: the summary

    public struct Summary: Sendable {
        public let context: Context
        /// Responses the filter selects.
        public let total: Int
        /// Per collector and day (days since 1970-01-01 UTC of the server's receipt).
        public let perSubmitterDay: [(submitter: String, day: Int64, count: Int)]
        /// One per question of the latest version outside repeats, in the form's order.
        public let questions: [QuestionSummary]
    }

    public struct QuestionSummary: Sendable {
        public enum Figures: Sendable {
            /// select_one / select_multiple: each value chosen with its count — the latest
            /// version's choices in order (zero included), then values only older ones had.
            case choices([(name: String, count: Int)])
            case numbers(NumberFigures?)
            /// date / datetime: answers per day, oldest first.
            case days([(day: String, count: Int)])
            /// Anything else: how many answered.
            case answered
        }
        public let question: Question
        /// The repeat it is in (its label), when it is: its figures count each instance.
        public let repeatLabel: LocalizedText?
        /// Responses where the question was relevant (its version has it, and its logic showed it).
        public let relevant: Int
        /// Responses with an answer.
        public let answered: Int
        /// Relevant and left without an answer.
        public var notAnswered: Int { max(0, relevant - answered) }
        public let figures: Figures
    }

    /// Every figure of the summary, from one read snapshot: the responses per collector and day
    /// by an aggregate query, and every question's figures from one pass over the responses'
    /// summary facts (`SummaryFacts`, kept beside each response with whether its logic showed
    /// each question): a few bytes a response, never its answers document. Memory stays flat.
    public func summary(orgId: String, surveyId: String, by user: UserRecord, _ filter: Filter) throws -> Summary {
        try operations.member(user, of: orgId)
        let f = storageFilter(orgId: orgId, surveyId: surveyId, by: user, filter)
        let snapshot = try operations.database.snapshot()
        defer { snapshot.close() }
        let context = try context(snapshot.read, orgId: orgId, surveyId: surveyId, by: user)
        guard let latest = context.latest else { return Summary(context: context, total: 0, perSubmitterDay: [], questions: []) }

        let places = SummaryFacts.questions(of: latest)
        var tally = SummaryTally(latest: places.map(\.question), versions: context.versions.map(\.definition))
        let versionIds = context.versions.map(\.record.surveyVersionId)
        try snapshot.eachSummaryFacts(f, versions: versionIds) { row in
            guard tally.add(row) else { throw ApiError(.internalError, "A response's summary facts cannot be read; run surveyd check.") }
        }
        let perDay = tally.perSubmitterDay()
        let total = perDay.reduce(0) { $0 + $1.count }
        // A number question with many distinct values has its numbers read again (two passes).
        func numbers(_ q: Int, _ each: (Double) -> Void) throws {
            try snapshot.eachSummaryFacts(f, versions: versionIds) { row in
                Self.numbers(in: row.facts, of: q, columns: tally.columns, version: row.version, each)
            }
        }

        var blocks: [QuestionSummary] = []
        for (q, place) in places.enumerated() {
            let question = place.question
            let figures: QuestionSummary.Figures
            switch question.type {
            case .selectOne, .selectMultiple:
                figures = .choices(Self.ordered(question, tally.choices(q)))
            case .integer, .decimal:
                // A question with many distinct values: its numbers read again (two passes).
                figures = .numbers(try tally.figures(q, integers: question.type == .integer) { each in try numbers(q, each) })
            case .date, .datetime:
                figures = .days(tally.texts[q].counts.sorted { $0.key < $1.key }.map { (day: $0.key, count: $0.value) })
            default:
                figures = .answered
            }
            blocks.append(QuestionSummary(question: question, repeatLabel: place.repeats.isEmpty ? nil : place.repeatLabel ?? LocalizedText(""), relevant: max(tally.relevant[q], tally.answered[q]),
                                          answered: tally.answered[q], figures: figures))
        }
        return Summary(context: context, total: total, perSubmitterDay: perDay, questions: blocks)
    }

    /// The number question `q`'s values in one response's facts (one an instance inside
    /// repeats), given to `each`.
    private static func numbers(in facts: UnsafeBufferPointer<UInt8>, of q: Int, columns: [[Int]], version: Int, _ each: (Double) -> Void) {
        guard columns.indices.contains(version), let at = columns[version].firstIndex(of: q), var reader = SummaryFactsReader(facts) else { return }
        var i = 0
        while let (entry, _) = reader.next() {
            guard i == at else {
                if case .repeated(let n) = entry {
                    for _ in 0..<n { guard let (one, _) = reader.next(), reader.skipItems(of: one) else { return } }
                } else if !reader.skipItems(of: entry) { return }
                i += 1
                continue
            }
            switch entry {
            case .number(let d): each(d)
            case .repeated(let n):
                for _ in 0..<n {
                    guard let (one, _) = reader.next() else { return }
                    if case .number(let d) = one { each(d) } else if !reader.skipItems(of: one) { return }
                }
            default: break
            }
            return
        }
    }

    /// The latest version's choices in its order (each with its count, zero included), then any
    /// other value answers hold (choices of older versions), by name.
    static func ordered(_ q: Question, _ counts: [String: Int]) -> [(name: String, count: Int)] {
        var out = q.choices.map { (name: $0, count: counts[$0] ?? 0) }
        let known = Set(q.choices)
        out += counts.keys.filter { !known.contains($0) }.sorted().map { (name: $0, count: counts[$0] ?? 0) }
        return out
    }
}

extension Operations {
    public var dataViews: DataViews { DataViews(operations: self) }
}
