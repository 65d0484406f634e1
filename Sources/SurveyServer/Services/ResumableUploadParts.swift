import Foundation
import SurveyDomain
import SurveyOperations
import SurveyStorage

/// The parts of a resumable upload that need no request: the `Upload-Expires` date. The headers
/// a client sends are read in SurveyDomain (`UploadMetadata`, `TusHeader`, `ChunkChecksum`),
/// where they are fuzzed; the rules are `ResumableUpload`'s (SurveyOperations).
extension ResumableUploadService {
    static func httpDate(_ ms: Int64) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}
