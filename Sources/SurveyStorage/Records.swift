import SurveyDomain

/// Rows as the services see them. Beside each record read from the database: its column list
/// (what a SELECT names) and `init(row:)`, which reads exactly those columns by name.
public struct OrgRecord: Sendable, Equatable {
    public let orgId: String
    public let name: String
    public let expiresAt: Int64
    public let createdAt: Int64
    /// Its id as a project of ODK Central's API: an integer, server-wide, never reused.
    public let projectId: Int64

    public init(orgId: String, name: String, expiresAt: Int64, createdAt: Int64, projectId: Int64) {
        self.orgId = orgId
        self.name = name
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.projectId = projectId
    }
}

extension OrgRecord {
    static let columns = "org_id, name, expires_at, created_at, project_id"
    init(row: Row) throws {
        self.init(orgId: try row["org_id"], name: try row["name"], expiresAt: try row["expires_at"], createdAt: try row["created_at"],
                  projectId: try row["project_id"])
    }
}

public struct UserRecord: Sendable, Equatable {
    public let userId: String
    public let orgId: String
    public let name: String
    public let roles: [String]
    public let active: Bool
    /// Its id as an actor of ODK Central's API: an integer, server-wide, never reused.
    public let actorId: Int64
}

extension UserRecord {
    /// The users table as `u` (it is joined with tokens, sessions and invitations).
    static let columns = "u.user_id, u.org_id, u.name, u.roles, u.active, u.actor_id"
    init(row: Row) throws {
        self.init(userId: try row["user_id"], orgId: try row["org_id"], name: try row["name"],
                  roles: try row.string("roles").split(separator: ",").map(String.init), active: try row["active"],
                  actorId: try row["actor_id"])
    }
}

/// Who a token belongs to.
public struct TokenOwner: Sendable, Equatable {
    public let tokenId: String
    public let isOperator: Bool
    public let user: UserRecord?
}

public struct SurveyRecord: Sendable, Equatable {
    public let surveyId: String
    public let orgId: String
    public let title: String
    public let reviewRequired: Bool
    public let createdAt: Int64
    /// Where the survey is in its life (`SurveyState`).
    public let state: SurveyState
    /// Which entities of a list its forms read reach a collector's phone (`EntityListScope`).
    public var entityListScope: EntityListScope = .all
}

/// Which entities of a list a survey's forms read reach a collector's phone: `all` of them, or
/// only those its `assigned` open field tasks of the survey name (Docs/entities.md).
public enum EntityListScope: String, Sendable, CaseIterable {
    case all, assigned
}

/// A survey's life: `open` (listed to apps, taking responses), `closing` (no longer listed, so
/// no phone starts a new one, but still taking what phones hold), `closed` (no new response:
/// 409 / 1023; replays still answer).
public enum SurveyState: String, Sendable, CaseIterable {
    case open, closing, closed
}

extension SurveyRecord {
    static let columns = "survey_id, org_id, title, review_required, created_at, state, entity_list_scope"
    init(row: Row) throws {
        let state: String = try row["state"], scope: String = try row["entity_list_scope"]
        self.init(surveyId: try row["survey_id"], orgId: try row["org_id"], title: try row["title"],
                  reviewRequired: try row["review_required"], createdAt: try row["created_at"], state: SurveyState(rawValue: state) ?? .open,
                  entityListScope: EntityListScope(rawValue: scope) ?? .all)
    }
}

public struct SurveyVersionRecord: Sendable, Equatable {
    public let surveyVersionId: String
    public let surveyId: String
    public let orgId: String
    public let number: Int64
    public let contentHash: String
    public let definition: String
    public let createdAt: Int64
    /// pyxform's warnings when the version was converted from an XLSForm (none otherwise), each a
    /// sentence as pyxform wrote it.
    public let warnings: [String]
    /// A survey's draft (number 0 until published): never listed, never submitted to as the survey's.
    public var draft: Bool = false
}

extension SurveyVersionRecord {
    /// Read from `survey_versions` (the query's only table); the warnings from the version's source, when it has one.
    static let columns = "survey_version_id, survey_id, org_id, number, content_hash, definition, created_at, draft, "
        + "(SELECT s.warnings FROM survey_version_sources s WHERE s.survey_version_id = survey_versions.survey_version_id) AS warnings"
    init(row: Row) throws {
        self.init(surveyVersionId: try row["survey_version_id"], surveyId: try row["survey_id"], orgId: try row["org_id"],
                  number: try row["number"], contentHash: try row["content_hash"], definition: try row["definition"],
                  createdAt: try row["created_at"], warnings: VersionSourceRecord.warnings(fromColumn: try row.optionalString("warnings")),
                  draft: try row.int("draft") != 0)
    }
}

/// The file a version was published from, when it was not JSON (`format` "xlsform" or "xform"),
/// and the XForm apps download: the uploaded one, or pyxform's for an XLSForm.
public struct VersionSourceRecord: Sendable, Equatable {
    public let format: String
    public let contentType: String
    public let source: [UInt8]
    public let xform: [UInt8]
    /// pyxform's warnings on converting an XLSForm (none for an XForm).
    public let warnings: [String]

    public init(format: String, contentType: String, source: [UInt8], xform: [UInt8], warnings: [String] = []) {
        self.format = format
        self.contentType = contentType
        self.source = source
        self.xform = xform
        self.warnings = warnings
    }

    /// The `warnings` column: a JSON array of strings, NULL when there are none.
    static func warningsColumn(_ warnings: [String]) -> SQLValue {
        warnings.isEmpty ? .null : .text(CanonicalJSON.string(.array(warnings.map { .string($0) })))
    }

    static func warnings(fromColumn text: String?) -> [String] {
        guard let text, let parsed = try? JSONParser.parse(Array(text.utf8)) else { return [] }
        return (parsed.arrayValue ?? []).compactMap(\.stringValue)
    }
}

/// A file a version's form names, published with it: its bytes are the blob `sha256`.
public struct VersionAttachmentRecord: Sendable, Equatable {
    public let surveyVersionId: String
    public let fileName: String
    public let contentType: String
    public let size: Int64
    /// Hex SHA-256 and MD5 of the bytes (MD5: what an OpenRosa manifest names a file by).
    public let sha256: String
    public let md5: String

    public init(surveyVersionId: String, fileName: String, contentType: String, size: Int64, sha256: String, md5: String) {
        self.surveyVersionId = surveyVersionId
        self.fileName = fileName
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256
        self.md5 = md5
    }
}

extension VersionAttachmentRecord {
    static let columns = "a.survey_version_id, a.file_name, a.content_type, a.size, a.sha256, a.md5"
    init(row: Row) throws {
        self.init(surveyVersionId: try row["survey_version_id"], fileName: try row["file_name"], contentType: try row["content_type"],
                  size: try row["size"], sha256: try row["sha256"], md5: try row["md5"])
    }
}

/// What the survey page needs to know of a version's source without its bytes.
public struct VersionSourceSummary: Sendable, Equatable {
    public let format: String
    public let contentType: String

    public init(format: String, contentType: String) {
        self.format = format
        self.contentType = contentType
    }
}

public struct ResponseRecord: Sendable, Equatable {
    public let responseId: String
    public let orgId: String
    public let clientSubmissionId: String
    public let submitter: String
    public let surveyId: String
    public let surveyVersionId: String
    public let requestDigest: String
    /// SHA-256 of the request body exactly as sent: a byte-identical replay is recognised by it
    /// without canonicalising anything.
    public let requestSHA256: [UInt8]
    public let answers: String
    public let fieldTaskId: String?
    public let capturedAt: Int64?
    public let receivedAt: Int64
    public let reviewState: ReviewState
    public let revision: Int64
    /// The version the response was accepted with, when a resubmission has changed it since
    /// (nil: `surveyVersionId` still is). A replay answers the receipt as it was at acceptance.
    public let acceptedSurveyVersionId: String?
    /// The review state the response was accepted in, once an edit has moved it to `edited`
    /// (nil: never edited, `reviewState` tells).
    public let firstReviewState: ReviewState?

    public init(responseId: String, orgId: String, clientSubmissionId: String, submitter: String, surveyId: String,
                surveyVersionId: String, requestDigest: String, requestSHA256: [UInt8], answers: String,
                fieldTaskId: String?, capturedAt: Int64?, receivedAt: Int64, reviewState: ReviewState, revision: Int64,
                acceptedSurveyVersionId: String? = nil, firstReviewState: ReviewState? = nil) {
        self.acceptedSurveyVersionId = acceptedSurveyVersionId
        self.firstReviewState = firstReviewState
        self.responseId = responseId; self.orgId = orgId; self.clientSubmissionId = clientSubmissionId
        self.submitter = submitter; self.surveyId = surveyId; self.surveyVersionId = surveyVersionId
        self.requestDigest = requestDigest; self.requestSHA256 = requestSHA256; self.answers = answers
        self.fieldTaskId = fieldTaskId; self.capturedAt = capturedAt; self.receivedAt = receivedAt
        self.reviewState = reviewState; self.revision = revision
    }
}

extension ResponseRecord {
    static let columns = """
        response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id, request_digest, request_sha256,
        request_body, answers, field_task_id, captured_at, received_at, review_state, revision, accepted_survey_version_id,
        first_review_state
        """
    init(row: Row) throws {
        self.init(responseId: try row["response_id"], orgId: try row["org_id"], clientSubmissionId: try row["client_submission_id"],
                  submitter: try row["submitter"], surveyId: try row["survey_id"], surveyVersionId: try row["survey_version_id"],
                  requestDigest: try row["request_digest"],
                  // Rows from before schema step 2 kept the body itself instead of its hash.
                  requestSHA256: try row.optionalBlob("request_sha256") ?? Digest.sha256(try row.blob("request_body")),
                  answers: try row["answers"], fieldTaskId: try row["field_task_id"], capturedAt: try row["captured_at"],
                  receivedAt: try row["received_at"], reviewState: try row["review_state"], revision: try row["revision"],
                  acceptedSurveyVersionId: try row["accepted_survey_version_id"],
                  firstReviewState: try row.optionalString("first_review_state").flatMap(ReviewState.init(rawValue:)))
    }
}

/// One version of a response's answers: 1 as submitted, each accepted edit the next.
public struct ResponseVersionRecord: Sendable, Equatable {
    public let number: Int64
    /// Canonical JSON, as stored.
    public let answers: String
    public let createdAt: Int64
    public let createdBy: String
    /// `submission`, `api`, `openrosa` or `console`.
    public let source: String
    /// The instanceID an OpenRosa edit carried (nil otherwise).
    public let instanceId: String?

    public init(number: Int64, answers: String, createdAt: Int64, createdBy: String, source: String, instanceId: String? = nil) {
        self.number = number; self.answers = answers; self.createdAt = createdAt; self.createdBy = createdBy
        self.source = source; self.instanceId = instanceId
    }
}

extension ResponseVersionRecord {
    static let columns = "number, answers, created_at, created_by, source, instance_id"
    init(row: Row) throws {
        self.init(number: try row["number"], answers: try row["answers"], createdAt: try row["created_at"], createdBy: try row["created_by"],
                  source: try row["source"], instanceId: try row.optionalString("instance_id"))
    }
}

public struct AuditRecord: Sendable, Equatable {
    public let seq: Int64
    public let actor: String
    public let action: String
    public let targetType: String
    public let targetId: String
    public let revision: Int64?
    public let detail: String?
    public let at: Int64
}

extension AuditRecord {
    static let columns = "seq, actor, action, target_type, target_id, revision, detail, at"
    init(row: Row) throws {
        self.init(seq: try row["seq"], actor: try row["actor"], action: try row["action"], targetType: try row["target_type"],
                  targetId: try row["target_id"], revision: try row["revision"], detail: try row["detail"], at: try row["at"])
    }
}

public struct UploadRecord: Sendable, Equatable {
    public let orgId: String
    public let clientUploadId: String
    public let uploader: String
    public let surveyVersionId: String
    public let questionId: String
    public let contentType: String
    public let size: Int64
    public let sha256: String
    public let receivedAt: Int64
    /// The name its sender knew it by (an ODK app's file name), when it came with a form's XML.
    public let fileName: String?

    public init(orgId: String, clientUploadId: String, uploader: String, surveyVersionId: String, questionId: String,
                contentType: String, size: Int64, sha256: String, receivedAt: Int64, fileName: String? = nil) {
        self.orgId = orgId; self.clientUploadId = clientUploadId; self.uploader = uploader
        self.surveyVersionId = surveyVersionId; self.questionId = questionId; self.contentType = contentType
        self.size = size; self.sha256 = sha256; self.receivedAt = receivedAt; self.fileName = fileName
    }
}

extension UploadRecord {
    static let columns = "org_id, client_upload_id, uploader, survey_version_id, question_id, content_type, size, sha256, received_at, file_name"
    init(row: Row) throws {
        self.init(orgId: try row["org_id"], clientUploadId: try row["client_upload_id"], uploader: try row["uploader"],
                  surveyVersionId: try row["survey_version_id"], questionId: try row["question_id"], contentType: try row["content_type"],
                  size: try row["size"], sha256: try row["sha256"], receivedAt: try row["received_at"], fileName: try row["file_name"])
    }
}

/// A tus upload in progress; its bytes are in `partial/<uploadId>`.
public struct ResumableUploadRecord: Sendable, Equatable {
    public let uploadId: String
    public let orgId: String
    public let clientUploadId: String
    public let owner: String
    public let surveyVersionId: String
    public let questionId: String
    public let contentType: String
    public let length: Int64
    public let receivedBytes: Int64
    public let expiresAt: Int64
    public let createdAt: Int64

    public init(uploadId: String, orgId: String, clientUploadId: String, owner: String, surveyVersionId: String,
                questionId: String, contentType: String, length: Int64, receivedBytes: Int64, expiresAt: Int64, createdAt: Int64) {
        self.uploadId = uploadId; self.orgId = orgId; self.clientUploadId = clientUploadId; self.owner = owner
        self.surveyVersionId = surveyVersionId; self.questionId = questionId; self.contentType = contentType
        self.length = length; self.receivedBytes = receivedBytes; self.expiresAt = expiresAt; self.createdAt = createdAt
    }
}

extension ResumableUploadRecord {
    static let columns = """
        upload_id, org_id, client_upload_id, owner, survey_version_id, question_id, content_type, length, received_bytes, expires_at, created_at
        """
    init(row: Row) throws {
        self.init(uploadId: try row["upload_id"], orgId: try row["org_id"], clientUploadId: try row["client_upload_id"],
                  owner: try row["owner"], surveyVersionId: try row["survey_version_id"], questionId: try row["question_id"],
                  contentType: try row["content_type"], length: try row["length"], receivedBytes: try row["received_bytes"],
                  expiresAt: try row["expires_at"], createdAt: try row["created_at"])
    }
}

public struct TaskRecord: Sendable, Equatable {
    public let taskId: String
    public let orgId: String
    public let title: String
    public let surveyId: String
    public let assigneeUserId: String
    public let dueAt: Int64?
    public let notes: String?
    public let state: TaskState
    public let createdAt: Int64
    public let completedAt: Int64?
    public let completedBy: String?
    public let responseId: String?
    /// The entity the task is about ("visit this household"): both or neither.
    public let entityList: String?
    public let entityId: String?

    public init(taskId: String, orgId: String, title: String, surveyId: String, assigneeUserId: String, dueAt: Int64?, notes: String?,
                state: TaskState, createdAt: Int64, completedAt: Int64?, completedBy: String?, responseId: String?,
                entityList: String? = nil, entityId: String? = nil) {
        self.taskId = taskId; self.orgId = orgId; self.title = title; self.surveyId = surveyId; self.assigneeUserId = assigneeUserId
        self.dueAt = dueAt; self.notes = notes; self.state = state; self.createdAt = createdAt; self.completedAt = completedAt
        self.completedBy = completedBy; self.responseId = responseId; self.entityList = entityList; self.entityId = entityId
    }
}

extension TaskRecord {
    static let columns = """
        task_id, org_id, title, survey_id, assignee_user_id, due_at, notes, state, created_at, completed_at, completed_by, response_id,
        entity_list, entity_id
        """
    init(row: Row) throws {
        self.init(taskId: try row["task_id"], orgId: try row["org_id"], title: try row["title"], surveyId: try row["survey_id"],
                  assigneeUserId: try row["assignee_user_id"], dueAt: try row["due_at"], notes: try row["notes"], state: try row["state"],
                  createdAt: try row["created_at"], completedAt: try row["completed_at"], completedBy: try row["completed_by"],
                  responseId: try row["response_id"], entityList: try row["entity_list"], entityId: try row["entity_id"])
    }
}

/// Where an Idempotency-Key applies: (organization, caller, method, route, target, key).
public struct IdempotencyScope: Sendable, Hashable {
    public let orgId: String
    public let caller: String
    public let method: String
    public let route: String
    public let target: String
    public let key: String
    public let digest: String

    public init(orgId: String, caller: String, method: String, route: String, target: String, key: String, digest: String) {
        self.orgId = orgId; self.caller = caller; self.method = method; self.route = route; self.target = target
        self.key = key; self.digest = digest
    }
}

/// The successful answer stored under a key.
public struct StoredAnswer: Sendable, Equatable {
    public let status: Int
    public let location: String?
    public let body: [UInt8]
    public let requestDigest: String

    public init(status: Int, location: String?, body: [UInt8], requestDigest: String) {
        self.status = status; self.location = location; self.body = body; self.requestDigest = requestDigest
    }
}

extension StoredAnswer {
    static let columns = "status, location, body, request_digest"
    init(row: Row) throws {
        self.init(status: try row["status"], location: try row["location"], body: try row["body"], requestDigest: try row["request_digest"])
    }
}

/// One entry of the changes feed (an audit entry about a response or a task).
public struct ChangeRecord: Sendable, Equatable {
    public let seq: Int64
    public let kind: String
    public let id: String
    public let action: String
    public let revision: Int64?
    public let detail: String?
    public let at: Int64
}

extension ChangeRecord {
    /// The audit log as `a`.
    static let columns = "a.seq, a.target_type, a.target_id, a.action, a.revision, a.detail, a.at"
    init(row: Row) throws {
        self.init(seq: try row["seq"], kind: try row["target_type"], id: try row["target_id"], action: try row["action"],
                  revision: try row["revision"], detail: try row["detail"], at: try row["at"])
    }
}
