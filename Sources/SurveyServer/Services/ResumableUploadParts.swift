import Foundation
import SurveyDomain
import SurveyOperations
import SurveyStorage

/// The parts of a resumable upload that need no request: the `Upload-Expires` date, what a
/// create asks for, and the check of a finished file. The headers a client sends are read in
/// SurveyDomain (`UploadMetadata`, `TusHeader`, `ChunkChecksum`), where they are fuzzed.
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

    /// Reads the finished upload's bytes once: size, SHA-256, the signature of its first bytes
    /// and, for text, every byte.
    static func verifyComplete(_ r: ResumableUploadRecord, bytes: any ByteReader, now: Int64) throws -> UploadRecord {
        defer { bytes.close() }
        var digest = Digest(.sha256)
        var text = FileSignature.isTextType(r.contentType) ? TextStreamCheck() : nil
        var prefix: [UInt8] = []
        var size = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n: Int
            do { n = try buffer.withUnsafeMutableBytes { try bytes.read(into: $0) } } catch {
                throw ApiError(.storageUnavailable, "The received bytes cannot be read.")
            }
            if n == 0 { break }
            let chunk = buffer[0..<n]
            if prefix.count < FileSignature.prefixLength { prefix += chunk.prefix(FileSignature.prefixLength - prefix.count) }
            chunk.withUnsafeBytes { digest.update($0); text?.update($0) }
            size += n
        }
        guard Int64(size) == r.length else { throw ApiError(.storageUnavailable, "The partial file has \(size) of \(r.length) bytes.") }
        guard FileSignature.matches(contentType: r.contentType, prefix: prefix, totalSize: size), text?.isValidText ?? true else {
            throw ApiError(.corruptFile, "The bytes are not a \(r.contentType) file.")
        }
        return UploadRecord(orgId: r.orgId, clientUploadId: r.clientUploadId, uploader: r.owner, surveyVersionId: r.surveyVersionId,
                            questionId: r.questionId, contentType: r.contentType, size: Int64(size), sha256: Hex.encode(digest.finalize()),
                            receivedAt: now)
    }
}
