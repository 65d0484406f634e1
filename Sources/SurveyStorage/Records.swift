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
    public let requestBody: [UInt8]
    public let answers: String
    public let fieldTaskId: String?
    public let capturedAt: Int64?
    public let receivedAt: Int64
    public let reviewState: String
    public let revision: Int64

    public init(responseId: String, orgId: String, clientSubmissionId: String, submitter: String, surveyId: String,
                surveyVersionId: String, requestDigest: String, requestBody: [UInt8], answers: String,
                fieldTaskId: String?, capturedAt: Int64?, receivedAt: Int64, reviewState: String, revision: Int64) {
        self.responseId = responseId; self.orgId = orgId; self.clientSubmissionId = clientSubmissionId
        self.submitter = submitter; self.surveyId = surveyId; self.surveyVersionId = surveyVersionId
        self.requestDigest = requestDigest; self.requestBody = requestBody; self.answers = answers
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
