import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// Files captured with a response, keyed by `clientUploadId`. Checked on their own merits
/// (1005, 1010–1015), never as 1001; committed through the gate with their file, or not at all.
struct UploadService {
    let services: Services

    func register(into router: inout Router) {
        router.add("PUT", "/v1/orgs/{orgId}/uploads/{clientUploadId}", streamingTo: open, finish)
        services.route(&router, "GET", "/v1/orgs/{orgId}/uploads/{clientUploadId}", .member(anyOf: []), metadata)
        services.route(&router, "GET", "/v1/orgs/{orgId}/uploads/{clientUploadId}/content", .member(anyOf: []), content)
    }

    static func uploadJSON(_ u: UploadRecord) -> JSONValue {
        ["clientUploadId": .string(u.clientUploadId), "surveyVersionId": .string(u.surveyVersionId), "questionId": .string(u.questionId),
         "contentType": .string(u.contentType), "size": .number(Double(u.size)), "sha256": .string(u.sha256),
         "receivedAt": .string(Timestamp.format(u.receivedAt))]
    }

    /// What the headers ask for, checked before a byte of the body is read.
    struct Target: Sendable {
        let orgId: String
        let uploader: String
        let clientUploadId: String
        let surveyVersionId: String
        let questionId: String
        let contentType: String
        let limit: Int
        /// The stored upload under this id, when the request may be its replay.
        let existing: UploadRecord?
    }

    /// Steps 1–4 for an upload's metadata: caller, tenancy, replay by metadata, version,
    /// question, type and size. Shared by plain and resumable uploads.
    func target(orgId: String, clientUploadId: String, caller: Caller, surveyVersionId: String?, questionId: String?,
                contentType: String?, declaredLength: Int?) throws -> Target {
        let user = try services.member(caller, of: orgId, withAnyOf: .collector)
        guard ClientIdentifier.isValid(clientUploadId) else {
            throw ApiError(.invalidIdentifier, "clientUploadId must be 8–128 characters of A-Z a-z 0-9 _ - : .")
        }
        guard let surveyVersionId, !surveyVersionId.isEmpty else { throw ApiError.malformed("Survey-Version-Id is required.") }
        guard let questionId, !questionId.isEmpty else { throw ApiError.malformed("Question-Id is required.") }
        guard let contentType, !contentType.isEmpty else { throw ApiError.malformed("Content-Type is required.") }
        let type = FileSignature.normalizedType(contentType)

        let existing = try services.database.read { try $0.upload(orgId: orgId, clientUploadId: clientUploadId) }
        if let e = existing {
            guard e.uploader == user.userId, e.surveyVersionId == surveyVersionId, e.questionId == questionId, e.contentType == type,
                  declaredLength.map({ Int64($0) == e.size }) ?? true else {
                throw ApiError(.idempotencyConflict, "This clientUploadId was already used for a different upload.")
            }
        }
        guard let version = try services.database.read({ try $0.surveyVersion(orgId: orgId, surveyVersionId: surveyVersionId) }) else {
            throw ApiError.notFound()
        }
        let definition = try services.definitions.definition(of: version)
        guard let question = definition.question(id: questionId), question.type == .file else {
            throw ApiError(.questionDoesNotAcceptFiles, "Question \(questionId) of this version is not a file question.")
        }
        guard question.accepts(contentType: type), FileSignature.knownTypes.contains(type) else {
            throw ApiError(.unsupportedFileType, "\(type) is not accepted by question \(questionId) (accepts \(question.accept.joined(separator: ", "))).")
        }
        let limit = min(question.maxBytes ?? Int.max, services.limits.maxFileBytes)
        if let declaredLength, declaredLength > limit {
            throw ApiError(.payloadTooLarge, "The file is \(declaredLength) bytes; the limit for this question is \(limit).")
        }
        return Target(orgId: orgId, uploader: user.userId, clientUploadId: clientUploadId, surveyVersionId: surveyVersionId,
                      questionId: questionId, contentType: type, limit: limit, existing: existing)
    }

    func open(_ head: RequestHead) throws -> any BodySink {
        let caller = try services.authenticate(head)
        // clientUploadId is this write's key; an Idempotency-Key is checked for format only.
        _ = try KeyedWrites.key(head)
        let target = try target(orgId: head.parameter("orgId"), clientUploadId: head.parameter("clientUploadId"), caller: caller,
                                surveyVersionId: head.header("survey-version-id"), questionId: head.header("question-id"),
                                contentType: head.header("content-type"), declaredLength: head.header("content-length").flatMap(Int.init))
        let digest = try head.header("content-digest").flatMap { try ContentDigest.sha256(fromHeader: $0) }
        return UploadSink(target: target, file: try services.blobs.createTemp(), expectedSHA256: digest)
    }

    func finish(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let sink = request.sink as? UploadSink else { throw ApiError(.internalError) }
        defer { sink.abort() }  // after a commit the temp file is gone and this does nothing
        switch try verify(sink) {
        case .replay(let stored):
            // Step 3: the same bytes and metadata again → the stored answer, even while expired.
            return .replayed(.json(200, Self.uploadJSON(stored)))
        case .new(let record):
            return try commit(record, tempPath: sink.file.path, path: "/v1/orgs/\(record.orgId)/uploads/\(record.clientUploadId)")
        }
    }

    /// What the bytes turned out to be.
    enum Verified {
        /// The upload already stored under this id, sent again.
        case replay(UploadRecord)
        /// A new upload whose file passed every check.
        case new(UploadRecord)
    }

    /// The bytes are in: the replay comparison by content, then signature and digest.
    func verify(_ sink: UploadSink) throws -> Verified {
        let sha = try sink.file.finish()
        let t = sink.target
        let record = UploadRecord(orgId: t.orgId, clientUploadId: t.clientUploadId, uploader: t.uploader, surveyVersionId: t.surveyVersionId,
                                  questionId: t.questionId, contentType: t.contentType, size: Int64(sink.file.size), sha256: sha,
                                  receivedAt: services.clock.nowMillis())
        if let e = t.existing {
            guard e.sha256 == sha, e.size == record.size else {
                throw ApiError(.idempotencyConflict, "This clientUploadId was already used for different bytes.")
            }
            return .replay(e)
        }
        guard FileSignature.matches(contentType: t.contentType, prefix: sink.file.prefix, totalSize: sink.file.size),
              sink.text?.isValidText ?? true else {
            throw ApiError(.corruptFile, "The bytes are not a \(t.contentType) file.")
        }
        if let expected = sink.expectedSHA256, Hex.encode(expected) != sha {
            throw ApiError(.digestMismatch, "Content-Digest does not match the bytes received.")
        }
        return .new(record)
    }

    /// Step 5–6: the gate, with the blob placed and the row written in one transaction.
    func commit(_ record: UploadRecord, tempPath: String, path: String) throws -> HTTPResponse {
        let blobs = services.blobs
        let outcome: WriteGate.Outcome<UploadRecord> = try services.gate.write(orgId: record.orgId, actor: record.uploader, replay: { db in
            guard let e = try db.upload(orgId: record.orgId, clientUploadId: record.clientUploadId) else { return nil }
            guard e.uploader == record.uploader, e.sha256 == record.sha256, e.surveyVersionId == record.surveyVersionId,
                  e.questionId == record.questionId, e.contentType == record.contentType else {
                throw ApiError(.idempotencyConflict, "This clientUploadId was already used for a different upload.")
            }
            return e
        }) { tx in
            try tx.commitUpload(record, tempPath: tempPath, blobs: blobs)
            return UploadRecord(orgId: record.orgId, clientUploadId: record.clientUploadId, uploader: record.uploader,
                                surveyVersionId: record.surveyVersionId, questionId: record.questionId, contentType: record.contentType,
                                size: record.size, sha256: record.sha256, receivedAt: tx.now)
        }
        switch outcome {
        case .replayed(let e):
            return .replayed(.json(200, Self.uploadJSON(e)))
        case .written(let u):
            services.metrics.add(.uploadBytes, Int(u.size))
            return .created(path, Self.uploadJSON(u))
        }
    }

    /// The uploader, reviewers and admins may read an upload; anyone else gets the 404 of nothing.
    private func readable(_ context: RequestContext, _ request: HTTPRequest) throws -> UploadRecord {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        guard let u = try services.database.read({ try $0.upload(orgId: orgId, clientUploadId: request.parameter("clientUploadId")) }),
              u.uploader == user.userId || user.has(.reviewer) || user.has(.admin) else { throw ApiError.notFound() }
        return u
    }

    func metadata(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        .json(200, Self.uploadJSON(try readable(context, request)))
    }

    func content(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let u = try readable(context, request)
        guard let r = HTTPResponse.file(path: services.blobs.path(sha256: u.sha256), headers: [
            ("Content-Type", u.contentType), ("X-Content-Type-Options", "nosniff"),
            ("Content-Disposition", "attachment; filename=\"\(u.clientUploadId)\""), ("Cache-Control", "private, no-store"),
        ]) else { throw ApiError(.storageUnavailable, "The file cannot be read.") }
        return r
    }
}

/// Receives an upload's body into a temp file, refusing it past the question's limit.
final class UploadSink: BodySink, @unchecked Sendable {
    // @unchecked: libmicrohttpd calls one connection's handler sequentially; see TempFile.
    let target: UploadService.Target
    let file: TempFile
    let expectedSHA256: [UInt8]?
    /// For text types: every byte is checked as it arrives, not only the first ones.
    private(set) var text: TextStreamCheck?

    init(target: UploadService.Target, file: TempFile, expectedSHA256: [UInt8]?) {
        self.target = target
        self.file = file
        self.expectedSHA256 = expectedSHA256
        text = FileSignature.isTextType(target.contentType) ? TextStreamCheck() : nil
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard file.size + bytes.count <= target.limit else {
            throw ApiError(.payloadTooLarge, "The file is over the limit of \(target.limit) bytes for this question.")
        }
        text?.update(bytes)
        try file.write(bytes)
    }

    func abort() { file.discard() }
}

/// RFC 9530 `Content-Digest: sha-256=:<base64>:` (other algorithms are ignored).
enum ContentDigest {
    static func sha256(fromHeader value: String) throws -> [UInt8]? {
        for member in value.split(separator: ",") {
            let parts = member.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "sha-256" else { continue }
            let v = parts[1].trimmingCharacters(in: .whitespaces)
            guard v.count >= 2, v.hasPrefix(":"), v.hasSuffix(":"), let bytes = Base64.decode(String(v.dropFirst().dropLast())),
                  bytes.count == 32 else {
                throw ApiError.malformed("Content-Digest must look like sha-256=:<base64 of 32 bytes>:")
            }
            return bytes
        }
        return nil
    }
}
