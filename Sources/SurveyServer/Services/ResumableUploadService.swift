import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// Resumable uploads, tus 1.0 (core, creation, checksum, expiration, termination). The bytes
/// received so far live in `partial/<uploadId>`; the offset is recorded through the gate after
/// each chunk is fsynced, so it never goes back and never runs ahead of the disk. Completion is
/// checked and committed exactly like a plain upload.
struct ResumableUploadService {
    let services: Services
    /// Uploads with a PATCH or DELETE in progress: another one at once is refused (409), never
    /// interleaved. Claimed only through `ResumableUploadRequest`.
    let busy: BusySet

    static let base = "/v1/orgs/{orgId}/uploads/resumable"
    static let tusHeaders: [(String, String)] = [("Tus-Resumable", "1.0.0")]

    func register(into router: inout Router) {
        // OPTIONS tells what the server supports, to anyone (tus discovery). The rest admit the
        // caller in the operation, after the Tus-Resumable check tus puts first.
        services.publicRoute(&router, "OPTIONS", Self.base, options)
        services.routeAdmittedByOperation(&router, "POST", Self.base, Uploads.access, create)
        services.routeAdmittedByOperation(&router, "HEAD", Self.base + "/{uploadId}", Uploads.access, head)
        services.routeAdmittedByOperation(&router, "PATCH", Self.base + "/{uploadId}", Uploads.access, streamingTo: openChunk, finishChunk)
        services.routeAdmittedByOperation(&router, "DELETE", Self.base + "/{uploadId}", Uploads.access, terminate)
    }

    func location(_ r: ResumableUploadRecord) -> String { "/v1/orgs/\(r.orgId)/uploads/resumable/\(r.uploadId)" }

    /// A tus answer's refusal: its own status and headers where tus demands them, with tus's.
    func refusal(_ error: any Error) -> ProtocolRefusal {
        if let r = error as? ResumableUploadRefusal { return refusal(Self.tus(r)) }
        if let r = error as? ProtocolRefusal { return ProtocolRefusal(r.error, status: r.status, headers: Self.tusHeaders + r.headers) }
        return ProtocolRefusal(storageApiError(error), headers: Self.tusHeaders)
    }

    func problem(_ error: any Error) -> HTTPResponse {
        let r = refusal(error)
        return .problem(r.error, status: r.status, headers: r.headers)
    }

    private func requireTus(_ head: RequestHead) throws {
        guard head.header("tus-resumable") == "1.0.0" else {
            throw ProtocolRefusal(ApiError(.malformedRequest, "Tus-Resumable: 1.0.0 is required."), status: 412, headers: [("Tus-Version", "1.0.0")])
        }
    }

    func options(_ request: HTTPRequest) throws -> HTTPResponse {
        HTTPResponse(status: 204, headers: Self.tusHeaders + [
            ("Tus-Version", "1.0.0"), ("Tus-Extension", "creation,checksum,expiration,termination"),
            ("Tus-Checksum-Algorithm", "sha1,sha256"), ("Tus-Max-Size", String(services.limits.maxFileBytes)),
        ])
    }

    func create(_ request: HTTPRequest) throws -> HTTPResponse {
        do {
            try requireTus(request.head)
            let caller = try services.authenticate(request.head)
            try IdempotencyHeader.checkFormat(request.head)  // clientUploadId is the key; the header's format is still checked
            let orgId = request.parameter("orgId")
            guard let length = TusHeader.uploadLength(request.header("upload-length")) else {
                _ = try services.member(caller, of: orgId, withAnyOf: .collector)
                throw ApiError.malformed("Upload-Length (a non-negative integer) is required; deferred lengths are not supported.")
            }
            let meta = try UploadMetadata.parse(request.header("upload-metadata"))
            let clientUploadId = meta["clientUploadId"] ?? ""
            let user = try services.member(caller, of: orgId, withAnyOf: .collector)
            let asked = ResumableUpload.Creation(surveyVersionId: meta["surveyVersionId"], questionId: meta["questionId"],
                                                 contentType: FileSignature.normalizedType(meta["contentType"] ?? ""), length: Int64(length))
            let uploads = services.operations.resumableUploads
            let now = services.clock.nowMillis()
            var upload = ResumableUpload(.create(asked))
            var action = upload.begin()
            while true {
                switch action {
                case .readRow:
                    // Step 3 on the snapshot: a replay needs none of the checks below.
                    action = upload.rowRead(try uploads.upload(user, orgId: orgId, clientUploadId: clientUploadId), caller: user.userId, now: now)
                case .checkTarget:
                    let target = try services.operations.uploads.target(orgId: orgId, clientUploadId: clientUploadId, caller: caller,
                                                                        surveyVersionId: meta["surveyVersionId"], questionId: meta["questionId"],
                                                                        contentType: meta["contentType"], declaredLength: length)
                    action = upload.targetChecked(target, uploadId: Ids.make("tus", nowMillis: now), now: now,
                                                  lifetime: services.limits.resumableLifetimeMillis)
                case .createPartialThenWrite(let record):
                    action = upload.written(try uploads.create(record, as: asked))
                case .answerReplay(let r):
                    return created(r, replayed: true)
                case .answerCreated(let r):
                    return created(r, replayed: false)
                case .refuse(let reason):
                    throw reason
                default:
                    throw ResumableUploadRefusal.outOfOrder
                }
            }
        } catch {
            return problem(error)
        }
    }

    private func created(_ r: ResumableUploadRecord, replayed: Bool) -> HTTPResponse {
        let answer = HTTPResponse(status: 201, headers: Self.tusHeaders + [("Location", location(r)), ("Upload-Expires", Self.httpDate(r.expiresAt))])
        return replayed ? .replayed(answer) : answer
    }

    private func collector(_ head: RequestHead) throws -> UserRecord {
        try services.member(try services.authenticate(head), of: head.parameter("orgId"), withAnyOf: .collector)
    }

    /// A refusal of the rules in tus's terms: its statuses and headers, and its header names in
    /// the sentences that are about them.
    static func tus(_ refusal: ResumableUploadRefusal) -> ProtocolRefusal {
        let code = refusal.error.code
        switch refusal {
        case .busy, .removedMeanwhile:
            return ProtocolRefusal(refusal.error, status: 409)
        case .gone:
            return ProtocolRefusal(refusal.error, status: 410)
        case .notChunkBytes:
            return ProtocolRefusal(ApiError(code, "PATCH bodies must be application/offset+octet-stream."))
        case .offsetMissing:
            return ProtocolRefusal(ApiError(code, "Upload-Offset is required."))
        case .offsetMismatch(let asked, let current):
            return ProtocolRefusal(ApiError(code, "Upload-Offset is \(asked) but the upload is at \(current)."),
                                   status: 409, headers: [("Upload-Offset", String(current))])
        case .pastLength(let length):
            return ProtocolRefusal(ApiError(code, "The chunk runs past Upload-Length \(length)."))
        case .checksumMismatch:
            return ProtocolRefusal(ApiError(code, "Upload-Checksum does not match the chunk; it was discarded."), status: 460)
        default:
            return ProtocolRefusal(refusal.error)
        }
    }

    /// What HEAD, PATCH and DELETE share: the Tus-Resumable check, the collector role (checked on
    /// every request: a removed role counts from the next one), then the request's machine up to
    /// its first action past the row read (a PATCH or DELETE claims the upload before that read).
    private func start(_ kind: ResumableUpload.Request, _ head: RequestHead) throws -> (ResumableUploadRequest, ResumableUpload.Action) {
        try requireTus(head)
        let user = try collector(head)
        let exchange = ResumableUploadRequest(kind, uploadId: head.parameter("uploadId"), busy: busy)
        var action = exchange.send { $0.begin() }
        if case .readRow = action {
            let row: ResumableUploadRecord?
            do {
                row = try services.operations.resumableUploads.upload(user, uploadId: exchange.uploadId)
            } catch {
                exchange.end()
                throw error
            }
            action = exchange.send { $0.rowRead(row, caller: user.userId, now: services.clock.nowMillis()) }
        }
        return (exchange, action)
    }

    func head(_ request: HTTPRequest) throws -> HTTPResponse {
        do {
            let (exchange, action) = try start(.head, request.head)
            defer { exchange.end() }
            switch action {
            case .answerOffset(let r):
                return HTTPResponse(status: 200, headers: Self.tusHeaders + [
                    ("Upload-Offset", String(r.receivedBytes)), ("Upload-Length", String(r.length)),
                    ("Upload-Expires", Self.httpDate(r.expiresAt)), ("Cache-Control", "no-store"),
                ])
            case .refuse(let reason):
                throw reason
            default:
                throw ResumableUploadRefusal.outOfOrder
            }
        } catch {
            // HEAD answers carry no body; the status and headers say it all.
            var p = problem(error)
            p.body = []
            return p
        }
    }

    /// What a PATCH's headers say, for the machine to judge in its order.
    static func chunk(_ head: RequestHead) -> ResumableUpload.Chunk {
        let checksum: Result<ChunkChecksum?, ApiError>
        do {
            checksum = .success(try head.header("upload-checksum").map(ChunkChecksum.init(header:)))
        } catch {
            checksum = .failure(storageApiError(error))
        }
        return ResumableUpload.Chunk(
            isChunkBytes: FileSignature.normalizedType(head.header("content-type") ?? "") == "application/offset+octet-stream",
            offset: TusHeader.uploadOffset(head.header("upload-offset")),
            declaredLength: head.header("content-length").flatMap(Int64.init),
            checksum: checksum)
    }

    func openChunk(_ head: RequestHead) throws -> any BodySink {
        do {
            let (exchange, action) = try start(.patch(Self.chunk(head)), head)
            do {
                switch action {
                case .answerFinished(let r):
                    // An empty PATCH at the end changes nothing (its partial file is gone).
                    exchange.end()
                    return FinishedUploadSink(record: r)
                case .streamChunk(let r, let checksum):
                    return try ChunkSink(exchange, file: try services.operations.resumableUploads.chunkFile(for: r), checksum: checksum)
                case .refuse(let reason):
                    throw reason
                default:
                    throw ResumableUploadRefusal.outOfOrder
                }
            } catch {
                exchange.end()  // no byte was written
                throw error
            }
        } catch {
            throw refusal(error)
        }
    }

    func finishChunk(_ request: HTTPRequest) throws -> HTTPResponse {
        if let done = request.sink as? FinishedUploadSink {
            return HTTPResponse(status: 204, headers: Self.tusHeaders + [("Upload-Offset", String(done.record.length)),
                                                                          ("Upload-Expires", Self.httpDate(done.record.expiresAt))])
        }
        guard let sink = request.sink as? ChunkSink else { return problem(ApiError(.internalError)) }
        defer { sink.abort() }  // ends the request: a chunk that did not commit is discarded, then the claim goes
        let uploads = services.operations.resumableUploads
        var logFields: [String: String] = [:]
        do {
            var action = try sink.bodyEnded()
            while true {
                switch action {
                case .commitOffset(let r, let offset):
                    try uploads.commitOffset(r, to: offset, chunk: sink.file)
                    action = sink.send { $0.committed() }
                case .verifyWholeFile(let r):
                    let record = try uploads.verifyWholeFile(r, chunk: sink.file)
                    action = sink.send { $0.verified(record) }
                case .commitWholeFile(let r, let record):
                    let stored = try uploads.commitWholeFile(r, record, chunk: sink.file)
                    logFields["upload"] = stored == nil ? "existing" : "stored"
                    action = sink.send { $0.committed() }
                case .answerAppended(let r, let offset):
                    return HTTPResponse(status: 204, headers: Self.tusHeaders + [("Upload-Offset", String(offset)), ("Upload-Expires", Self.httpDate(r.expiresAt))],
                                        logFields: logFields)
                case .refuse(let reason):
                    throw reason
                default:
                    throw ResumableUploadRefusal.outOfOrder
                }
            }
        } catch {
            return problem(error)
        }
    }

    func terminate(_ request: HTTPRequest) throws -> HTTPResponse {
        do {
            var (exchange, action) = try start(.delete, request.head)
            defer { exchange.end() }
            while true {
                switch action {
                case .delete(let r):
                    try services.operations.resumableUploads.delete(r)
                    action = exchange.send { $0.deleted() }
                case .answerDeleted:
                    return HTTPResponse(status: 204, headers: Self.tusHeaders)
                case .refuse(let reason):
                    throw reason
                default:
                    throw ResumableUploadRefusal.outOfOrder
                }
            }
        } catch {
            return problem(error)
        }
    }
}
