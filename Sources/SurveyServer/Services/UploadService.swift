import Foundation
import SurveyDomain
import SurveyConsole
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The API's door onto plain uploads (`Uploads`): metadata from the headers, the body streamed
/// into the operation's file, the record rendered.
struct UploadService {
    let services: Services

    func register(into router: inout Router) {
        services.routeAdmittedByOperation(&router, "PUT", "/v1/orgs/{orgId}/uploads/{clientUploadId}", Uploads.access, streamingTo: open, finish)
        services.route(&router, "GET", "/v1/orgs/{orgId}/uploads/{clientUploadId}", .member(anyOf: []), metadata)
        services.route(&router, "GET", "/v1/orgs/{orgId}/uploads/{clientUploadId}/content", .member(anyOf: []), content)
    }

    func open(_ head: RequestHead) throws -> any BodySink {
        let uploads = services.operations.uploads
        let target = try uploads.target(orgId: head.parameter("orgId"), clientUploadId: head.parameter("clientUploadId"),
                                        caller: try services.authenticate(head), idempotencyKey: head.header("idempotency-key"),
                                        surveyVersionId: head.header("survey-version-id"), questionId: head.header("question-id"),
                                        contentType: head.header("content-type"), declaredLength: head.header("content-length").flatMap(Int.init))
        let digest = try head.header("content-digest").flatMap { try ContentDigest.sha256(fromHeader: $0) }
        return UploadSink(try uploads.receive(target, expectedSHA256: digest))
    }

    func finish(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let sink = request.sink as? UploadSink else { throw ApiError(.internalError) }
        switch try services.operations.uploads.finish(sink.incoming) {
        case .replayed(let stored):
            // The same bytes and metadata again → the stored answer, even while expired.
            return .replayed(.json(200, stored.document))
        case .written(let u):
            return .created("/v1/orgs/\(u.orgId)/uploads/\(u.clientUploadId)", u.document)
        }
    }

    private func readable(_ context: Admission, _ request: HTTPRequest) throws -> UploadRecord {
        try services.operations.readableUpload(try context.member(), orgId: context.orgId, clientUploadId: request.parameter("clientUploadId"))
    }

    func metadata(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        .json(200, try readable(context, request).document)
    }

    func content(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let u = try readable(context, request)
        guard let r = HTTPResponse.storedFile(services.blobs, sha256: u.sha256, size: u.size, headers: [
            ("Content-Type", u.contentType), ("X-Content-Type-Options", "nosniff"),
            ("Content-Disposition", "attachment; filename=\"\(u.clientUploadId)\""), ("Cache-Control", "private, no-store"),
        ]) else { throw ApiError(.storageUnavailable, "The file cannot be read.") }
        return r
    }
}

/// Hands an upload's body, as libmicrohttpd delivers it, to the operation's `IncomingFile`.
final class UploadSink: BodySink, Sendable {
    let incoming: IncomingFile
    init(_ incoming: IncomingFile) { self.incoming = incoming }
    func write(_ bytes: UnsafeRawBufferPointer) throws { try incoming.write(bytes) }
    func abort() { incoming.discard() }
}
