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
    /// Uploads with a PATCH in progress: a second concurrent PATCH is refused (409), never interleaved.
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
        if let r = error as? ProtocolRefusal { return ProtocolRefusal(r.error, status: r.status, headers: Self.tusHeaders + r.headers) }
        return ProtocolRefusal(storageApiError(error), headers: Self.tusHeaders)
    }

    func problem(_ error: any Error, status: Int? = nil) -> HTTPResponse {
        let r = refusal(error)
        return .problem(r.error, status: status ?? r.status, headers: r.headers)
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
            let asked = Creation(owner: user.userId, surveyVersionId: meta["surveyVersionId"], questionId: meta["questionId"],
                                 contentType: FileSignature.normalizedType(meta["contentType"] ?? ""), length: Int64(length))
            // Step 3 on the snapshot: a replay needs none of the checks below. The gate asks the
            // same question again inside its transaction (another create may commit meanwhile).
            let clock = services.clock
            let now = clock.nowMillis()
            if let r = try asked.replay(try services.operations.resumableUpload(user, orgId: orgId, clientUploadId: clientUploadId), now: now) {
                return created(r, replayed: true)
            }
            let target = try services.operations.uploads.target(orgId: orgId, clientUploadId: clientUploadId, caller: caller, surveyVersionId: meta["surveyVersionId"],
                                            questionId: meta["questionId"], contentType: meta["contentType"], declaredLength: length)
            if target.existing != nil {
                throw ApiError(.idempotencyConflict, "This clientUploadId is already a completed upload.")
            }
            let record = ResumableUploadRecord(
                uploadId: Ids.make("tus", nowMillis: now), orgId: orgId, clientUploadId: clientUploadId, owner: user.userId,
                surveyVersionId: target.surveyVersionId, questionId: target.questionId, contentType: target.contentType,
                length: Int64(length), receivedBytes: 0, expiresAt: now + services.limits.resumableLifetimeMillis, createdAt: now)
            // The empty partial file exists before its row commits, so a PATCH never has to create
            // it (creating could revive the file of an upload deleted meanwhile). If the row does
            // not commit, it goes below; after a crash, the start-up sweep removes it.
            let partial = services.blobs.partialPath(uploadId: record.uploadId)
            if !services.blobs.keepsFilesInDatabase { try services.blobs.createPartial(uploadId: record.uploadId) }
            let quota = services.limits.maxUnfinishedBytesPerCaller
            let outcome: WriteGate.Outcome<(ResumableUploadRecord, replaced: String?)>
            do {
                outcome = try services.gate.write(orgId: orgId, actor: user.userId, replay: { db in
                    try asked.replay(try db.resumableUpload(orgId: orgId, clientUploadId: clientUploadId), now: clock.nowMillis()).map { ($0, nil) }
                }) { tx in
                    let held = try tx.read.unfinishedResumableBytes(orgId: orgId, owner: record.owner, now: tx.now)
                    guard held + record.length <= quota else {
                        throw ApiError(.tooManyPendingRequests,
                                       "You hold \(held) bytes of unfinished uploads; at most \(quota) are allowed. Finish or delete one first.",
                                       retryAfterSeconds: 60)
                    }
                    return (record, try tx.createResumableUpload(record))
                }
            } catch {
                unlink(partial)
                throw error
            }
            switch outcome {
            case .replayed(let r):
                unlink(partial)
                return created(r.0, replayed: true)
            case .written(let r):
                if let old = r.replaced { unlink(services.blobs.partialPath(uploadId: old)) }
                return created(r.0, replayed: false)
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

    /// A refusal of the exchange in tus's terms: its statuses and headers where tus has them.
    static func tus(_ refusal: ResumableUploadRefusal) -> ProtocolRefusal {
        switch refusal {
        case .busy: ProtocolRefusal(refusal.error, status: 409)
        case .gone: ProtocolRefusal(refusal.error, status: 410)
        case .offsetMismatch(_, let current): ProtocolRefusal(refusal.error, status: 409, headers: [("Upload-Offset", String(current))])
        case .checksumMismatch: ProtocolRefusal(refusal.error, status: 460)
        default: ProtocolRefusal(refusal.error)
        }
    }

    /// Runs an exchange's claim and row read for HEAD, PATCH or DELETE (the collector role is
    /// checked on every request: a removed role counts from the next one).
    private func start(_ request: ResumableUploadExchange.Request, _ head: RequestHead, chunk: ResumableUploadExchange.Chunk? = nil) throws
        -> (ResumableUploadExchange, ResumableUploadExchange.Action) {
        try requireTus(head)
        let user = try collector(head)
        let uploadId = head.parameter("uploadId")
        var exchange = ResumableUploadExchange(request)
        guard case .readRow = exchange.begin(claim: { busy.claim(uploadId) }) else {
            throw Self.tus(.busy(request))
        }
        let row: ResumableUploadRecord?
        do {
            row = try services.operations.resumableUpload(user, uploadId: uploadId)
        } catch {
            if case .end(true) = exchange.end() { busy.release(uploadId) }
            throw error
        }
        let action = exchange.rowRead(row, caller: user.userId, now: services.clock.nowMillis(), chunk: chunk)
        if case .refuse(let reason, let release) = action {
            if release { busy.release(uploadId) }
            throw Self.tus(reason)
        }
        return (exchange, action)
    }

    func head(_ request: HTTPRequest) throws -> HTTPResponse {
        do {
            guard case (_, .answerOffset(let r)) = try start(.head, request.head) else { return problem(ApiError(.internalError)) }
            return HTTPResponse(status: 200, headers: Self.tusHeaders + [
                ("Upload-Offset", String(r.receivedBytes)), ("Upload-Length", String(r.length)),
                ("Upload-Expires", Self.httpDate(r.expiresAt)), ("Cache-Control", "no-store"),
            ])
        } catch {
            // HEAD answers carry no body; the status and headers say it all.
            var p = problem(error)
            p.body = []
            return p
        }
    }

    func openChunk(_ head: RequestHead) throws -> any BodySink {
        do {
            let chunk = ResumableUploadExchange.Chunk(
                contentType: FileSignature.normalizedType(head.header("content-type") ?? ""),
                offset: TusHeader.uploadOffset(head.header("upload-offset")),
                contentLength: head.header("content-length").flatMap(Int64.init),
                checksum: { [checksum = head.header("upload-checksum")] in try checksum.map(ChunkChecksum.init(header:)) })
            var (exchange, action) = try start(.patch, head, chunk: chunk)
            switch action {
            case .answerComplete(let r, let release):
                // Complete: an empty PATCH at the end changes nothing (its partial file is gone).
                if release { busy.release(r.uploadId) }
                return FinishedUploadSink(record: r)
            case .receive(let r, _):
                do {
                    // Refuse early while expired: no byte is read. The gate checks again at commit.
                    try services.operations.refuseWhileExpired(orgId: r.orgId)
                    let blobs = services.blobs
                    return try ChunkSink(exchange: exchange, record: r,
                                         path: blobs.keepsFilesInDatabase ? try blobs.createStaging() : blobs.partialPath(uploadId: r.uploadId),
                                         staged: blobs.keepsFilesInDatabase, busy: busy)
                } catch {
                    if case .end(true) = exchange.end() { busy.release(r.uploadId) }
                    throw error
                }
            default:
                if case .end(true) = exchange.end() { busy.release(head.parameter("uploadId")) }
                throw ApiError(.internalError)
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
        defer { sink.abort() }  // truncates back unless the new offset was committed; ends the exchange
        let r = sink.record
        do {
            try sink.flush()
            let path = sink.path
            switch sink.bodyEnded() {
            case .refuse(let reason, _):
                return problem(Self.tus(reason))
            case .commitOffset(_, let newOffset):
                _ = try gatedWrite(r) { tx in
                    try Self.advance(r, to: newOffset, tx)
                    try tx.appendResumableChunk(uploadId: r.uploadId, start: r.receivedBytes, path: path)
                }
                sink.committed = true
                return HTTPResponse(status: 204, headers: Self.tusHeaders + [("Upload-Offset", String(newOffset)), ("Upload-Expires", Self.httpDate(r.expiresAt))])
            case .commitWhole:
                break
            default:
                return problem(ApiError(.internalError))
            }
            // The last chunk: the whole file is checked and committed like a plain upload.
            let whole: any ByteReader = sink.staged
                ? ChainedByteReader([services.database.partialRows(uploadId: r.uploadId), try FileByteReader(path: path)])
                : try FileByteReader(path: path)
            let record = try services.operations.uploads.verify(r, bytes: whole)
            let blobs = services.blobs
            let stored = try gatedWrite(r) { tx -> UploadRecord? in
                try Self.advance(r, to: r.length, tx)
                // A plain PUT of the same id may have stored the file meanwhile: the same bytes
                // finish this upload too; different ones are 1004 (the chunk is kept for a retry
                // after a DELETE, never silently dropped).
                if let e = try tx.read.upload(orgId: r.orgId, clientUploadId: r.clientUploadId) {
                    guard e.uploader == record.uploader, e.sha256 == record.sha256, e.surveyVersionId == record.surveyVersionId,
                          e.questionId == record.questionId, e.contentType == record.contentType else {
                        throw ApiError(.idempotencyConflict, "This clientUploadId was already used for a different upload.")
                    }
                    try tx.dropResumableChunks(uploadId: r.uploadId)
                    return nil
                }
                try tx.commitResumableUpload(record, uploadId: r.uploadId, lastChunkPath: path, lastChunkStart: r.receivedBytes, blobs: blobs)
                return record
            }
            if let stored { services.metrics.add(.uploadBytes, Int(stored.size)) }
            sink.committed = true
            // The blob is a hard link made inside the transaction; the partial name goes now.
            unlink(sink.path)
            return HTTPResponse(status: 204, headers: Self.tusHeaders + [("Upload-Offset", String(r.length)), ("Upload-Expires", Self.httpDate(r.expiresAt))],
                                logFields: ["upload": stored == nil ? "existing" : "stored"])
        } catch {
            return problem(error)
        }
    }

    /// A gated write of this upload's owner.
    private func gatedWrite<T: Sendable>(_ r: ResumableUploadRecord, _ body: @escaping @Sendable (GatedTransaction) throws -> T) throws -> T {
        switch try services.gate.write(orgId: r.orgId, actor: r.owner, body) {
        case .written(let v), .replayed(let v): return v
        }
    }

    /// Moves the offset from the one this PATCH started at; when the upload was removed or moved
    /// meanwhile (a DELETE, an expiry sweep), the transaction is refused with 409 and rolled back.
    private static func advance(_ r: ResumableUploadRecord, to offset: Int64, _ tx: GatedTransaction) throws {
        guard try tx.advanceResumableUpload(uploadId: r.uploadId, from: r.receivedBytes, to: offset) else {
            throw ProtocolRefusal(ApiError(.idempotencyConflict, "The upload was removed or moved on meanwhile; nothing was recorded."), status: 409)
        }
    }

    func terminate(_ request: HTTPRequest) throws -> HTTPResponse {
        do {
            var (exchange, action) = try start(.delete, request.head)
            defer { if case .end(true) = exchange.end() { busy.release(request.parameter("uploadId")) } }
            guard case .delete(let r) = action else { throw ApiError(.internalError) }
            _ = try gatedWrite(r) { tx in
                guard try tx.deleteResumableUpload(uploadId: r.uploadId, action: "upload.resumable.terminate") else { throw ApiError.notFound() }
            }
            // After the commit: a crash before this unlink leaves a file the start-up sweep removes.
            unlink(services.blobs.partialPath(uploadId: r.uploadId))
            return HTTPResponse(status: 204, headers: Self.tusHeaders)
        } catch {
            return problem(error)
        }
    }
}
