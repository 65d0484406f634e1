import SurveyDomain

/// Why a request on a resumable upload was refused, with the facts a door needs to say so in
/// its protocol (tus answers some of these with statuses and headers of its own).
public enum ResumableUploadRefusal: Error, Sendable {
    case busy(ResumableUploadExchange.Request)
    case notFound
    case gone(expiresAt: Int64)
    case notOffsetOctetStream
    case offsetMissing
    case malformed(ApiError)
    case offsetMismatch(asked: Int64, current: Int64)
    case pastLength(Int64)
    case checksumMismatch

    /// The refusal as the domain states it.
    public var error: ApiError {
        switch self {
        case .busy(.delete): ApiError(.idempotencyConflict, "A PATCH of this upload is in progress; retry once it has ended.")
        case .busy: ApiError(.idempotencyConflict, "Another request on this upload is in progress.")
        case .notFound: ApiError.notFound()
        case .gone(let at): ApiError(.notFound, "This upload expired at \(Timestamp.format(at)).")
        case .notOffsetOctetStream: ApiError(.unsupportedFileType, "PATCH bodies must be application/offset+octet-stream.")
        case .offsetMissing: ApiError.malformed("Upload-Offset is required.")
        case .malformed(let e): e
        case .offsetMismatch(let asked, let current): ApiError(.idempotencyConflict, "Upload-Offset is \(asked) but the upload is at \(current).")
        case .pastLength(let length): ApiError(.payloadTooLarge, "The chunk runs past Upload-Length \(length).")
        case .checksumMismatch: ApiError(.digestMismatch, "Upload-Checksum does not match the chunk; it was discarded.")
        }
    }
}
