import SurveyDomain

/// A response as an export sees it.
public struct ExportRow: Sendable {
    public var responseId: String
    public var clientSubmissionId: String
    public var surveyVersionId: String
    public var versionNumber: Int64?
    public var submittedBy: String
    public var submitterName: String?
    public var receivedAt: Int64
    public var capturedAt: Int64?
    public var reviewState: String
    public var revision: Int64
    public var fieldTaskId: String?
    /// The answers, by question id.
    public var answers: [String: JSONValue]
    /// How many times the answers were edited since submission.
    public var edits: Int64 = 0

    public init(responseId: String, clientSubmissionId: String, surveyVersionId: String, versionNumber: Int64?, submittedBy: String,
                submitterName: String?, receivedAt: Int64, capturedAt: Int64?, reviewState: String, revision: Int64, fieldTaskId: String?,
                answers: [String: JSONValue]) {
        self.responseId = responseId; self.clientSubmissionId = clientSubmissionId; self.surveyVersionId = surveyVersionId
        self.versionNumber = versionNumber; self.submittedBy = submittedBy; self.submitterName = submitterName
        self.receivedAt = receivedAt; self.capturedAt = capturedAt; self.reviewState = reviewState; self.revision = revision
        self.fieldTaskId = fieldTaskId; self.answers = answers
    }
}
