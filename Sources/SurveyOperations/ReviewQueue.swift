import SurveyDomain
import SurveyStorage

/// What a reviewer works through: a survey's responses with filters, newest first, and how many
/// are in each review state. Reviewers and admins; a read, so never gated.
public struct ReviewQueue: Sendable {
    let operations: Operations

    /// How far a review state's responses are counted: exactly up to this many, "more" beyond,
    /// so a page of a survey with a million responses costs what one with ten thousand does.
    public static let countCap = 10_000

    public struct Filter: Sendable {
        public var state: ReviewState?
        public var surveyVersionId: String?
        public var submittedBy: String?
        public var fieldTaskId: String?
        /// Inclusive / exclusive, server time in milliseconds.
        public var receivedFrom: Int64?
        public var receivedTo: Int64?
        public init() {}
    }

    public struct Page: Sendable {
        public let survey: SurveyRecord
        public let versions: [SurveyVersionRecord]
        /// Everyone who has submitted to the organization, for the filter (not only to this survey).
        public let submitters: [UserRecord]
        public let rows: [ResponseRecord]
        /// Per review state, with every filter but the state applied; above `countCap`: more
        /// than that.
        public let counts: [ReviewState: Int]
        /// The response id to continue before, when there are older rows.
        public let more: String?
    }

    public func page(orgId: String, surveyId: String, by user: UserRecord, _ filter: Filter, before: String?, limit: Int = 50) throws -> Page {
        try operations.member(user, of: orgId, withAnyOf: [.reviewer, .admin])
        return try operations.database.read { db in
            guard let survey = try db.survey(orgId: orgId, surveyId: surveyId) else { throw ApiError.notFound() }
            var f = ExportFilter(orgId: orgId, surveyId: surveyId)
            f.surveyVersionId = filter.surveyVersionId
            f.submittedBy = filter.submittedBy
            f.fieldTaskId = filter.fieldTaskId
            f.receivedFrom = filter.receivedFrom
            f.receivedTo = filter.receivedTo
            let counts = try db.stateCounts(f, upTo: Self.countCap)
            if let state = filter.state { f.reviewStates = [state] }
            let rows = try db.queueRows(f, before: before, limit: limit + 1)
            return Page(survey: survey, versions: try db.surveyVersions(surveyId: surveyId), submitters: try db.submitters(orgId: orgId),
                        rows: Array(rows.prefix(limit)), counts: counts, more: rows.count > limit ? rows[limit - 1].responseId : nil)
        }
    }
}
