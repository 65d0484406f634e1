import SurveyDomain

/// Why a request on a resumable upload was refused, with the facts a door needs to say so in its
/// protocol (tus answers some of these its own way; the HTTP door renders that).
public enum ResumableUploadRefusal: Error, Sendable {
    /// Another request holds the upload's claim.
    case busy(deleting: Bool)
    /// No such upload, or someone else's.
    case notFound
    /// Unfinished and past its expiry.
    case gone(expiresAt: Int64)
    /// A create for something else under a clientUploadId already in use.
    case conflict
    /// A create under the clientUploadId of a finished upload.
    case completedAlready
    /// A create past the unfinished bytes its caller may hold.
    case quota(held: Int64, allowed: Int64)
    /// A chunk's body is not declared as chunk bytes.
    case notChunkBytes
    case offsetMissing
    /// The chunk's checksum cannot be read.
    case malformed(ApiError)
    case offsetMismatch(asked: Int64, current: Int64)
    case pastLength(Int64)
    case checksumMismatch
    /// The row was removed or its offset moved between the claim and the commit (another process,
    /// a sweep); the commit was rolled back.
    case removedMeanwhile
    /// An event the request's state does not expect (a door's mistake, never a client's).
    case outOfOrder

    /// The refusal as the domain states it.
    public var error: ApiError {
        switch self {
        case .busy(deleting: true): ApiError(.idempotencyConflict, "A PATCH of this upload is in progress; retry once it has ended.")
        case .busy: ApiError(.idempotencyConflict, "Another request on this upload is in progress.")
        case .notFound: ApiError.notFound()
        case .gone(let at): ApiError(.notFound, "This upload expired at \(Timestamp.format(at)).")
        case .conflict: ApiError(.idempotencyConflict, "This clientUploadId was already used for a different upload.")
        case .completedAlready: ApiError(.idempotencyConflict, "This clientUploadId is already a completed upload.")
        case .quota(let held, let allowed):
            ApiError(.tooManyPendingRequests, "You hold \(held) bytes of unfinished uploads; at most \(allowed) are allowed. Finish or delete one first.",
                     retryAfterSeconds: 60)
        case .notChunkBytes: ApiError(.unsupportedFileType, "A chunk's body must be declared as chunk bytes.")
        case .offsetMissing: ApiError.malformed("The chunk's offset is required.")
        case .malformed(let e): e
        case .offsetMismatch(let asked, let current): ApiError(.idempotencyConflict, "The chunk starts at \(asked) but the upload is at \(current).")
        case .pastLength(let length): ApiError(.payloadTooLarge, "The chunk runs past the upload's length \(length).")
        case .checksumMismatch: ApiError(.digestMismatch, "The chunk's checksum does not match it; it was discarded.")
        case .removedMeanwhile: ApiError(.idempotencyConflict, "The upload was removed or moved on meanwhile; nothing was recorded.")
        case .outOfOrder: ApiError(.internalError)
        }
    }
}
