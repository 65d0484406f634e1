/// The contract's error table. A code never changes meaning; Docs/errors.md and
/// Schemas/openapi.json are checked against this table by a test. Each door renders a code its
/// own way: the HTTP status of each is the HTTP door's (`SurveyHTTP`, `ErrorCode+HTTPStatus.swift`).
public enum ErrorCode: Int, Sendable, CaseIterable {
    case subscriptionExpired = 1001
    case validationFailed = 1002
    case surveyVersionMismatch = 1003
    case idempotencyConflict = 1004
    case notFound = 1005
    case forbidden = 1006
    case unauthenticated = 1007
    case unsupportedFileType = 1010
    case corruptFile = 1011
    case questionDoesNotAcceptFiles = 1012
    case payloadTooLarge = 1013
    case attachmentNotUploaded = 1014
    case digestMismatch = 1015
    case invalidTransition = 1020
    case staleRevision = 1021
    case taskAlreadyCompleted = 1022
    case surveyClosed = 1023
    case tooManyPendingRequests = 1030
    case malformedRequest = 1031
    case invalidIdentifier = 1032
    case storageUnavailable = 1040
    case notOffered = 1050
    case internalError = 1099

    public var name: String {
        switch self {
        case .subscriptionExpired: "SubscriptionExpired"
        case .validationFailed: "ValidationFailed"
        case .surveyVersionMismatch: "SurveyVersionMismatch"
        case .idempotencyConflict: "IdempotencyConflict"
        case .notFound: "NotFound"
        case .forbidden: "Forbidden"
        case .unauthenticated: "Unauthenticated"
        case .unsupportedFileType: "UnsupportedFileType"
        case .corruptFile: "CorruptFile"
        case .questionDoesNotAcceptFiles: "QuestionDoesNotAcceptFiles"
        case .payloadTooLarge: "PayloadTooLarge"
        case .attachmentNotUploaded: "AttachmentNotUploaded"
        case .digestMismatch: "DigestMismatch"
        case .invalidTransition: "InvalidTransition"
        case .staleRevision: "StaleRevision"
        case .taskAlreadyCompleted: "TaskAlreadyCompleted"
        case .surveyClosed: "SurveyClosed"
        case .tooManyPendingRequests: "TooManyPendingRequests"
        case .malformedRequest: "MalformedRequest"
        case .invalidIdentifier: "InvalidIdentifier"
        case .storageUnavailable: "StorageUnavailable"
        case .notOffered: "NotOffered"
        case .internalError: "InternalError"
        }
    }

    public var retryable: Bool {
        switch self {
        case .subscriptionExpired, .tooManyPendingRequests, .storageUnavailable, .internalError: true
        default: false
        }
    }

    /// The problem `title`: a fixed human phrase per code.
    public var title: String {
        switch self {
        case .subscriptionExpired: "The organization's subscription is not active; nothing was written"
        case .validationFailed: "Answers or fields break the rules; errors[] says where"
        case .surveyVersionMismatch: "contentHash is not the hash of the cited survey version"
        case .idempotencyConflict: "This id or key was already used for a different request"
        case .notFound: "Not found"
        case .forbidden: "Your role may not do this"
        case .unauthenticated: "Missing, unknown, expired or revoked token"
        case .unsupportedFileType: "The declared file type is not accepted by the question"
        case .corruptFile: "The bytes do not match the declared file type"
        case .questionDoesNotAcceptFiles: "The question is not a file question"
        case .payloadTooLarge: "The body or file is over the configured limit"
        case .attachmentNotUploaded: "A cited upload is not a completed upload for that question"
        case .digestMismatch: "The sent digest does not match the bytes"
        case .invalidTransition: "That review action is not allowed from the current state"
        case .staleRevision: "expectedRevision is not the current revision"
        case .taskAlreadyCompleted: "The field task is already completed"
        case .surveyClosed: "The survey is closed; it takes no new responses"
        case .tooManyPendingRequests: "Too many requests in flight"
        case .malformedRequest: "The request could not be understood"
        case .invalidIdentifier: "A client id or key breaks the identifier format"
        case .storageUnavailable: "Storage is unavailable; nothing was written"
        case .notOffered: "surveyd does not offer this route of ODK Central's API"
        case .internalError: "Internal error; nothing partial was written"
        }
    }
}
