import SurveyDomain
import SurveyStorage

/// What an export asks for, as a door read it (malformed values are the door's 1031).
public struct ExportRequest: Sendable {
    /// csv, xlsx, geojson or zip: for the audit entry.
    public var format: String
    public var reviewStates: [ReviewState] = []
    public var surveyVersionId: String?
    public var submittedBy: String?
    public var fieldTaskId: String?
    public var receivedFrom: Int64?
    public var receivedTo: Int64?
    /// The `Surveyd-Export-Cursor` of an earlier export.
    public var afterCursor: String?
    /// The filters as the client gave them, for the audit entry and the zip's manifest.
    public var described: [String: String] = [:]
    public init(format: String) { self.format = format }
}

/// Taking responses out (reviewers and admins; a read, so never gated — an expired organization
/// can always take its data out). An export reads one snapshot: every row is its response as of
/// the export's cursor.
public struct Exports: Sendable {
    /// Who may export: reviewers and admins. Doors declare their export routes with it.
    public static let access = Access.member(anyOf: [.reviewer, .admin])
    let operations: Operations

    /// Order: tenancy (404), role (1006), the survey (404), the cursor (1031); then the snapshot
    /// opens and its rows are counted. Nothing is audited yet: the caller may still refuse the
    /// export (a GeoJSON `geoField`) or fail to build it (a workbook), and calls `audit()` once
    /// it is about to send it. The caller streams the rows and closes the export.
    public func open(orgId: String, surveyId: String, by user: UserRecord, _ request: ExportRequest) throws -> Export {
        try operations.admit(user, to: Self.access, orgId: orgId)
        return try open(orgId: orgId, surveyId: surveyId, by: user, request, onlySubmitter: nil, audited: true)
    }

    /// The rows of a console view (the map's points), as an export reads them — one snapshot,
    /// the same filters and columns — for any member: a collector's own responses only. Not an
    /// export that leaves the server as a file, so it writes no audit entry (as the data table).
    /// `settlingAudit`: the caller reads `Export.changeSequence()` as a mark of change (see
    /// `Snapshot.changeSequence(orgId:)`).
    public func openForView(orgId: String, surveyId: String, by user: UserRecord, _ request: ExportRequest,
                            settlingAudit: Bool = false) throws -> Export {
        try operations.member(user, of: orgId)
        return try open(orgId: orgId, surveyId: surveyId, by: user, request,
                        onlySubmitter: operations.seesAll(user) ? nil : user.userId, audited: false, settlingAudit: settlingAudit)
    }

    private func open(orgId: String, surveyId: String, by user: UserRecord, _ request: ExportRequest, onlySubmitter: String?,
                      audited: Bool, settlingAudit: Bool = false) throws -> Export {
        let ops = operations
        let snapshot = try ops.database.snapshot(settlingAudit: settlingAudit)
        do {
            let read = snapshot.read
            guard let survey = try read.survey(orgId: orgId, surveyId: surveyId) else { throw ApiError.notFound() }
            let latest = try snapshot.changeSequence()
            let key = try snapshot.exportCursorKey()
            var filter = ExportFilter(orgId: orgId, surveyId: surveyId)
            if let c = request.afterCursor {
                guard let seq = SealedCursor.export.parse(c, orgId: orgId, key: key, latest: latest) else {
                    throw ApiError.malformed("afterCursor is not a cursor this server issued (use the Surveyd-Export-Cursor header of an earlier export).")
                }
                filter.changedAfter = seq
            }
            filter.reviewStates = request.reviewStates
            filter.surveyVersionId = request.surveyVersionId
            filter.submittedBy = request.submittedBy
            filter.fieldTaskId = request.fieldTaskId
            filter.receivedFrom = request.receivedFrom
            filter.receivedTo = request.receivedTo
            filter.onlySubmitter = onlySubmitter
            let versions = try read.surveyVersions(surveyId: surveyId).map { v in (v, try ops.definitions.definition(of: v)) }
            let names = Dictionary(try read.users(orgId: orgId).map { ($0.userId, $0.name) }, uniquingKeysWith: { a, _ in a })
            let rows = try snapshot.exportCount(filter)
            let cursor = SealedCursor.export.make(latest, orgId: orgId, key: key)
            var detail: [String: JSONValue] = ["format": .string(request.format), "rows": .number(Double(rows)), "cursor": .string(cursor)]
            detail["filters"] = .object(request.described.mapValues { .string($0) })
            let auditDetail = CanonicalJSON.string(.object(detail)), action = "export.\(request.format)", actor = user.userId
            let database = ops.database
            let audit = {
                guard audited else { return }
                _ = try database.securityWrite(orgId: orgId, actor: actor) { tx in
                    try tx.audit(action: action, targetType: "survey", targetId: surveyId, detail: auditDetail)
                }
            }
            return Export(snapshot: snapshot, survey: survey, versions: versions, submitterNames: names, cursor: cursor, rows: rows,
                          responses: try snapshot.exportRows(filter), orgId: orgId, described: request.described, audit: audit)
        } catch {
            snapshot.close()
            throw error
        }
    }
}

/// One export in progress: its snapshot, what it holds, and its rows one at a time. Used by one
/// thread at a time; `close` ends the snapshot (idempotent; also when the client went away).
public final class Export: @unchecked Sendable {
    // @unchecked: one thread at a time (see the type's comment).
    private let snapshot: Snapshot
    public let survey: SurveyRecord
    /// Every version of the survey, oldest first, with its definition.
    public let versions: [(record: SurveyVersionRecord, definition: SurveyDefinition)]
    public let submitterNames: [String: String]
    public let cursor: String
    /// How many responses the export holds (counted in its snapshot).
    public let rows: Int
    private let responses: ExportRows
    private let orgId: String
    /// The filters as the client gave them (for a manifest).
    public let described: [String: String]
    /// Writes the export's audit entry (who, survey, format, filters, cursor, rows).
    private let auditEntry: () throws -> Void
    private var audited = false
    private lazy var versionNumbers: [String: Int64] = Dictionary(versions.map { ($0.record.surveyVersionId, $0.record.number) },
                                                                  uniquingKeysWith: { a, _ in a })

    init(snapshot: Snapshot, survey: SurveyRecord, versions: [(SurveyVersionRecord, SurveyDefinition)], submitterNames: [String: String],
         cursor: String, rows: Int, responses: ExportRows, orgId: String, described: [String: String], audit: @escaping () throws -> Void) {
        self.described = described
        self.rows = rows
        auditEntry = audit
        self.snapshot = snapshot
        self.survey = survey
        self.versions = versions.map { (record: $0.0, definition: $0.1) }
        self.submitterNames = submitterNames
        self.cursor = cursor
        self.responses = responses
        self.orgId = orgId
    }

    /// Audits the export (once): called when nothing can refuse it any more and its first byte is
    /// about to go out, so a refused or failed export leaves no entry. An export cut short after
    /// that is audited all the same — part of the data has left.
    public func audit() throws {
        guard !audited else { return }
        try auditEntry()
        audited = true
    }

    /// The organization's last audit sequence number as of the export's snapshot: with `rows`, a
    /// cheap mark of whether the export's responses changed since another snapshot (every change
    /// of a response is audited in its own transaction).
    public func changeSequence() throws -> Int64 { try snapshot.changeSequence(orgId: orgId) }

    /// The next response, or nil after the last.
    public func next() throws -> ExportedResponse? { try responses.next() }

    public func versionNumber(of surveyVersionId: String) -> Int64? { versionNumbers[surveyVersionId] }

    /// An attached upload as of the snapshot (for the zip).
    public func upload(clientUploadId: String) throws -> UploadRecord? {
        try snapshot.read.upload(orgId: orgId, clientUploadId: clientUploadId)
    }

    public func close() { snapshot.close() }
}
