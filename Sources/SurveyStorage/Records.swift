/// Rows as the services see them.
public struct OrgRecord: Sendable, Equatable {
    public let orgId: String
    public let name: String
    public let expiresAt: Int64
    public let createdAt: Int64
}

public struct UserRecord: Sendable, Equatable {
    public let userId: String
    public let orgId: String
    public let name: String
    public let roles: [String]
    public let active: Bool
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
}

public struct SurveyVersionRecord: Sendable, Equatable {
    public let surveyVersionId: String
    public let surveyId: String
    public let orgId: String
    public let number: Int64
    public let contentHash: String
    public let definition: String
    public let createdAt: Int64
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
    public let reviewState: String
    public let revision: Int64
    /// The version the response was accepted with, when a resubmission has changed it since
    /// (nil: `surveyVersionId` still is). A replay answers the receipt as it was at acceptance.
    public let acceptedSurveyVersionId: String?

    public init(responseId: String, orgId: String, clientSubmissionId: String, submitter: String, surveyId: String,
                surveyVersionId: String, requestDigest: String, requestSHA256: [UInt8], answers: String,
                fieldTaskId: String?, capturedAt: Int64?, receivedAt: Int64, reviewState: String, revision: Int64,
                acceptedSurveyVersionId: String? = nil) {
        self.acceptedSurveyVersionId = acceptedSurveyVersionId
        self.responseId = responseId; self.orgId = orgId; self.clientSubmissionId = clientSubmissionId
        self.submitter = submitter; self.surveyId = surveyId; self.surveyVersionId = surveyVersionId
        self.requestDigest = requestDigest; self.requestSHA256 = requestSHA256; self.answers = answers
        self.fieldTaskId = fieldTaskId; self.capturedAt = capturedAt; self.receivedAt = receivedAt
        self.reviewState = reviewState; self.revision = revision
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

    public init(orgId: String, clientUploadId: String, uploader: String, surveyVersionId: String, questionId: String,
                contentType: String, size: Int64, sha256: String, receivedAt: Int64) {
        self.orgId = orgId; self.clientUploadId = clientUploadId; self.uploader = uploader
        self.surveyVersionId = surveyVersionId; self.questionId = questionId; self.contentType = contentType
        self.size = size; self.sha256 = sha256; self.receivedAt = receivedAt
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

public struct TaskRecord: Sendable, Equatable {
    public let taskId: String
    public let orgId: String
    public let title: String
    public let surveyId: String
    public let assigneeUserId: String
    public let dueAt: Int64?
    public let notes: String?
    public let state: String
    public let createdAt: Int64
    public let completedAt: Int64?
    public let completedBy: String?
    public let responseId: String?

    public init(taskId: String, orgId: String, title: String, surveyId: String, assigneeUserId: String, dueAt: Int64?, notes: String?,
                state: String, createdAt: Int64, completedAt: Int64?, completedBy: String?, responseId: String?) {
        self.taskId = taskId; self.orgId = orgId; self.title = title; self.surveyId = surveyId; self.assigneeUserId = assigneeUserId
        self.dueAt = dueAt; self.notes = notes; self.state = state; self.createdAt = createdAt; self.completedAt = completedAt
        self.completedBy = completedBy; self.responseId = responseId
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
