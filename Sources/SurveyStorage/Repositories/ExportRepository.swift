import SurveyDomain

/// Which responses of a survey an export holds.
public struct ExportFilter: Sendable {
    public var orgId: String
    public var surveyId: String
    /// Any of these states (empty: all).
    public var reviewStates: [ReviewState] = []
    public var surveyVersionId: String?
    public var submittedBy: String?
    public var fieldTaskId: String?
    /// Inclusive, server time in milliseconds.
    public var receivedFrom: Int64?
    /// Exclusive.
    public var receivedTo: Int64?
    /// Only responses created or changed after this point of the audit sequence.
    public var changedAfter: Int64?
    /// A collector's own responses only, whatever `submittedBy` asks for (the console's views
    /// for a collector): set by the operation from the caller, never from a query.
    public var onlySubmitter: String?
    /// Only responses from this one on, in response-id order (a keyset page: the OData feed's
    /// `$skiptoken`, which stays correct while responses arrive).
    public var responseIdFrom: String?

    public init(orgId: String, surveyId: String) { self.orgId = orgId; self.surveyId = surveyId }

    /// The WHERE clause and its arguments.
    var condition: (sql: String, args: [SQLValue]) {
        var sql = "org_id = ? AND survey_id = ?"
        var args: [SQLValue] = [.text(orgId), .text(surveyId)]
        if !reviewStates.isEmpty {
            sql += " AND review_state IN (" + reviewStates.map { _ in "?" }.joined(separator: ",") + ")"
            args += reviewStates.map { .text($0.rawValue) }
        }
        if let surveyVersionId { sql += " AND survey_version_id = ?"; args.append(.text(surveyVersionId)) }
        if let submittedBy { sql += " AND submitter = ?"; args.append(.text(submittedBy)) }
        if let onlySubmitter { sql += " AND submitter = ?"; args.append(.text(onlySubmitter)) }
        if let fieldTaskId { sql += " AND field_task_id = ?"; args.append(.text(fieldTaskId)) }
        if let receivedFrom { sql += " AND received_at >= ?"; args.append(.int(receivedFrom)) }
        if let receivedTo { sql += " AND received_at < ?"; args.append(.int(receivedTo)) }
        if let responseIdFrom { sql += " AND response_id >= ?"; args.append(.text(responseIdFrom)) }
        if let changedAfter {
            // Every change of a response appends its audit entry in the same transaction.
            sql += " AND response_id IN (SELECT target_id FROM audit WHERE org_id = ? AND seq > ? AND target_type = 'response')"
            args += [.text(orgId), .int(changedAfter)]
        }
        return (sql, args)
    }
}

extension Snapshot {
    /// The last audit sequence number this snapshot sees: every change of a response up to it is
    /// in the snapshot, none after it.
    public func changeSequence() throws -> Int64 {
        try conn.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM audit").first?.int("seq") ?? 0
    }

    /// The organization's last audit sequence number this snapshot sees (0 before any): every
    /// change of one of its responses appends an audit entry, so this moves whenever a response
    /// of the organization is created, edited or reviewed. One step down the `audit_feed` index.
    /// Two snapshots with the same number (and the same rows) hold the same responses — on
    /// PostgreSQL only for snapshots that settled the audit log (`snapshot(settlingAudit:)`):
    /// the number then stops at the horizon, below which no entry can still be in flight (an
    /// entry committed later under a lower number than one already seen would go unnoticed).
    public func changeSequence(orgId: String) throws -> Int64 {
        if let horizon = auditHorizon {
            return try conn.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM audit WHERE org_id = ? AND seq <= ?",
                                  [.text(orgId), .int(horizon)]).first?.int("seq") ?? 0
        }
        return try conn.query("SELECT COALESCE(MAX(seq), 0) AS seq FROM audit WHERE org_id = ?", [.text(orgId)]).first?.int("seq") ?? 0
    }

    /// The key cursors are sealed with (`SealedCursor`).
    public func exportCursorKey() throws -> [UInt8] { try cursorKey(conn) }

    public func exportCount(_ filter: ExportFilter) throws -> Int {
        let c = filter.condition
        return Int(try conn.query("SELECT COUNT(*) AS n FROM responses WHERE \(c.sql)", c.args).first?.int("n") ?? 0)
    }

    /// The responses in response-id order (ids are time-ordered), one at a time.
    public func exportRows(_ filter: ExportFilter) throws -> ExportRows {
        let c = filter.condition
        return ExportRows(try rows("""
            SELECT \(ExportedResponse.columns) FROM responses WHERE \(c.sql) ORDER BY response_id
            """, c.args))
    }
}

/// A response as an export shows it: its columns, nothing of the request that made it (an
/// export reads a million of these; each field not read is an allocation saved).
public struct ExportedResponse: Sendable, Equatable {
    public let responseId: String
    public let clientSubmissionId: String
    public let surveyVersionId: String
    public let submitter: String
    public let receivedAt: Int64
    public let capturedAt: Int64?
    public let reviewState: ReviewState
    public let revision: Int64
    public let fieldTaskId: String?
    /// Canonical JSON, as stored: the latest version.
    public let answers: String
    /// How many times the answers were edited since submission.
    public let edits: Int64

    public init(responseId: String, clientSubmissionId: String, surveyVersionId: String, submitter: String, receivedAt: Int64,
                capturedAt: Int64?, reviewState: ReviewState, revision: Int64, fieldTaskId: String?, answers: String, edits: Int64 = 0) {
        self.edits = edits
        self.responseId = responseId; self.clientSubmissionId = clientSubmissionId; self.surveyVersionId = surveyVersionId
        self.submitter = submitter; self.receivedAt = receivedAt; self.capturedAt = capturedAt; self.reviewState = reviewState
        self.revision = revision; self.fieldTaskId = fieldTaskId; self.answers = answers
    }
}

extension ExportedResponse {
    static let columns = """
        response_id, client_submission_id, survey_version_id, submitter, received_at, captured_at, review_state,
        revision, field_task_id, answers, edits
        """
    init(row: Row) throws {
        self.init(responseId: try row["response_id"], clientSubmissionId: try row["client_submission_id"],
                  surveyVersionId: try row["survey_version_id"], submitter: try row["submitter"], receivedAt: try row["received_at"],
                  capturedAt: try row["captured_at"], reviewState: try row["review_state"], revision: try row["revision"],
                  fieldTaskId: try row["field_task_id"], answers: try row["answers"], edits: try row["edits"])
    }
}

/// An export's rows, read one at a time from its snapshot.
public final class ExportRows {
    private let rows: RowCursor
    init(_ rows: RowCursor) { self.rows = rows }
    public func next() throws -> ExportedResponse? {
        try rows.next().map(ExportedResponse.init)
    }
}

extension ReadContext {
    /// The key cursors are sealed with (`SealedCursor`): the changes feed's.
    public func cursorKey() throws -> [UInt8] { try SurveyStorage.cursorKey(conn) }
}

/// One per database, made by its migration.
func cursorKey(_ conn: any SQLConnection) throws -> [UInt8] {
    guard let key = try conn.query("SELECT key FROM export_cursor_key WHERE id = 1").first?.blob("key"), key.count == 32 else {
        throw ApiError(.storageUnavailable, "The database holds no cursor key (run surveyd once to migrate it).")
    }
    return key
}
