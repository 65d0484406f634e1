import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The body of a PATCH to an upload that is already complete: only an empty one is accepted
/// (and answered with the final offset); no file is opened.
final class FinishedUploadSink: BodySink, @unchecked Sendable {
    // @unchecked: immutable.
    let record: ResumableUploadRecord
    init(record: ResumableUploadRecord) { self.record = record }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        throw ApiError(.payloadTooLarge, "The upload is complete; no byte can be added.")
    }

    func abort() {}
}
