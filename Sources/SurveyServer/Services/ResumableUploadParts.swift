import Foundation
import SurveyDomain
import SurveyOperations
import SurveyStorage

/// The parts of a resumable upload that need no request: the `Upload-Expires` date and what a
/// create asks for. The headers a client sends are read in SurveyDomain (`UploadMetadata`,
/// `TusHeader`, `ChunkChecksum`), where they are fuzzed.
extension ResumableUploadService {
    static func httpDate(_ ms: Int64) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// What a create asks for: the same caller and metadata again is the same upload.
    struct Creation: Sendable {
        let owner: String
        let surveyVersionId: String?
        let questionId: String?
        let contentType: String
        let length: Int64

        /// Step 3: the upload `existing` under this clientUploadId, if this create is its replay;
        /// nil when there is none or it expired unfinished (a create then starts afresh); 1004
        /// when it was made by someone else or for something else — revealing nothing of it.
        func replay(_ existing: ResumableUploadRecord?, now: Int64) throws -> ResumableUploadRecord? {
            guard let e = existing, !e.isExpired(now: now) else { return nil }
            guard e.owner == owner, e.surveyVersionId == surveyVersionId, e.questionId == questionId,
                  e.contentType == contentType, e.length == length else {
                throw ApiError(.idempotencyConflict, "This clientUploadId was already used for a different upload.")
            }
            return e
        }
    }
}
