import Foundation
import SurveyDomain
import SurveyOperations
import SurveyStorage

/// The parts of a resumable upload that need no request: tus header values and what a create
/// asks for.
extension ResumableUploadService {
    static func httpDate(_ ms: Int64) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// `Upload-Metadata: key base64,key base64`.
    static func metadata(_ header: String?) throws -> [String: String] {
        var out: [String: String] = [:]
        for pair in (header ?? "").split(separator: ",") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
            guard let key = parts.first else { continue }
            if parts.count == 2 {
                guard let bytes = Base64.decode(String(parts[1])), let s = String(bytes: bytes, encoding: .utf8) else {
                    throw ApiError.malformed("Upload-Metadata value of \(key) is not base64 UTF-8.")
                }
                out[String(key)] = s
            } else { out[String(key)] = "" }
        }
        return out
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
