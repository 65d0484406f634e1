import SurveyDomain

extension ErrorCode {
    /// The HTTP status of each code: the contract's error table, as the HTTP doors answer it
    /// (a protocol may demand another for a case of its own, e.g. tus's 409, 410, 412 and 460).
    public var httpStatus: Int {
        switch self {
        case .subscriptionExpired: 402
        case .validationFailed, .corruptFile, .questionDoesNotAcceptFiles, .attachmentNotUploaded, .digestMismatch: 422
        case .surveyVersionMismatch, .idempotencyConflict, .invalidTransition, .staleRevision, .taskAlreadyCompleted, .surveyClosed: 409
        case .notFound: 404
        case .forbidden: 403
        case .unauthenticated: 401
        case .unsupportedFileType: 415
        case .payloadTooLarge: 413
        case .tooManyPendingRequests: 429
        case .malformedRequest, .invalidIdentifier: 400
        case .storageUnavailable: 503
        case .internalError: 500
        case .notOffered: 501
        }
    }
}
