import Foundation
import Synchronization
import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// Resumable uploads, tus 1.0 (core, creation, checksum, expiration, termination). The bytes
/// received so far live in `partial/<uploadId>`; the offset is recorded through the gate after
/// each chunk is fsynced, so it never goes back and never runs ahead of the disk. Completion is
/// checked and committed exactly like a plain upload.
struct ResumableUploadService {
    let services: Services
    let uploads: UploadService
    /// Uploads with a PATCH in progress: a second concurrent PATCH is refused (409), never interleaved.
    let busy: BusySet

    static let base = "/v1/orgs/{orgId}/uploads/resumable"
    static let tusHeaders: [(String, String)] = [("Tus-Resumable", "1.0.0")]

    func register(into router: inout Router) {
        router.add("OPTIONS", Self.base, options)
        router.add("POST", Self.base, create)
        router.add("HEAD", Self.base + "/{uploadId}", head)
        router.add("PATCH", Self.base + "/{uploadId}", streamingTo: openChunk, finishChunk)
        router.add("DELETE", Self.base + "/{uploadId}", terminate)
    }

    func location(_ r: ResumableUploadRecord) -> String { "/v1/orgs/\(r.orgId)/uploads/resumable/\(r.uploadId)" }

    static func httpDate(_ ms: Int64) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    func problem(_ e: ApiError, status: Int? = nil) -> HTTPResponse {
        .problem(e, status: status, headers: Self.tusHeaders)
    }

    private func requireTus(_ head: RequestHead) throws {
        guard head.header("tus-resumable") == "1.0.0" else {
            throw ApiError(.malformedRequest, "Tus-Resumable: 1.0.0 is required.").with(status: 412, headers: [("Tus-Version", "1.0.0")])
        }
    }

    func options(_ request: HTTPRequest) throws -> HTTPResponse {
        HTTPResponse(status: 204, headers: Self.tusHeaders + [
            ("Tus-Version", "1.0.0"), ("Tus-Extension", "creation,checksum,expiration,termination"),
            ("Tus-Checksum-Algorithm", "sha1,sha256"), ("Tus-Max-Size", String(services.limits.maxFileBytes)),
        ])
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

    func create(_ request: HTTPRequest) throws -> HTTPResponse {
        do {
            try requireTus(request.head)
            let caller = try services.authenticate(request)
            _ = try KeyedWrites.key(request)  // clientUploadId is the key; the header's format is still checked
            let orgId = request.parameter("orgId")
            guard let lengthText = request.header("upload-length"), let length = Int(lengthText), length >= 0 else {
                _ = try services.member(caller, of: orgId, withAnyOf: .collector)
                throw ApiError.malformed("Upload-Length (a non-negative integer) is required; deferred lengths are not supported.")
            }
            let meta = try Self.metadata(request.header("upload-metadata"))
            let clientUploadId = meta["clientUploadId"] ?? ""
            let user = try services.member(caller, of: orgId, withAnyOf: .collector)
            // Idempotent creation: the same clientUploadId and metadata is the same upload.
            if let existing = try services.database.read({ try $0.resumableUpload(orgId: orgId, clientUploadId: clientUploadId) }) {
                guard existing.owner == user.userId, existing.surveyVersionId == meta["surveyVersionId"], existing.questionId == meta["questionId"],
                      existing.contentType == FileSignature.normalizedType(meta["contentType"] ?? ""), existing.length == Int64(length) else {
                    throw ApiError(.idempotencyConflict, "This clientUploadId was already used for a different upload.")
                }
                return created(existing, replayed: true)
            }
            let target = try uploads.target(orgId: orgId, clientUploadId: clientUploadId, caller: caller, surveyVersionId: meta["surveyVersionId"],
                                            questionId: meta["questionId"], contentType: meta["contentType"], declaredLength: length)
            if target.existing != nil {
                throw ApiError(.idempotencyConflict, "This clientUploadId is already a completed upload.")
            }
            let now = Timestamp.nowMillis()
            let record = ResumableUploadRecord(
                uploadId: Ids.make("tus", nowMillis: now), orgId: orgId, clientUploadId: clientUploadId, owner: user.userId,
                surveyVersionId: target.surveyVersionId, questionId: target.questionId, contentType: target.contentType,
                length: Int64(length), receivedBytes: 0, expiresAt: now + services.limits.resumableLifetimeMillis, createdAt: now)
            let partial = services.blobs.partialPath(uploadId: record.uploadId)
            let outcome = try services.gate.write(orgId: orgId, actor: user.userId, replay: { db in
                try db.resumableUpload(orgId: orgId, clientUploadId: clientUploadId)
            }) { tx in
                try tx.createResumableUpload(record)
                return record
            }
            switch outcome {
            case .replayed(let r): return created(r, replayed: true)
            case .written(let r):
                // The empty partial file exists from creation on; HEAD reports 0 until a chunk lands.
                _ = FileManager.default.createFile(atPath: partial, contents: nil)
                return created(r, replayed: false)
            }
        } catch {
            return problem(storageApiError(error))
        }
    }

    private func created(_ r: ResumableUploadRecord, replayed: Bool) -> HTTPResponse {
        var h = Self.tusHeaders + [("Location", location(r)), ("Upload-Expires", Self.httpDate(r.expiresAt))]
        if replayed { h.append(("Idempotent-Replayed", "true")) }
        return HTTPResponse(status: 201, headers: h)
    }

    /// The caller's own upload, or the 404 of nothing; 410 once it has expired.
    private func owned(_ head: RequestHead, caller: Caller) throws -> ResumableUploadRecord {
        let orgId = head.parameter("orgId")
        let user = try services.member(caller, of: orgId)
        guard let r = try services.database.read({ try $0.resumableUpload(orgId: orgId, uploadId: head.parameter("uploadId")) }),
              r.owner == user.userId else { throw ApiError.notFound() }
        if r.expiresAt <= Timestamp.nowMillis() && r.receivedBytes < r.length {
            throw ApiError(.notFound, "This upload expired at \(Timestamp.format(r.expiresAt)).").with(status: 410)
        }
        return r
    }

    func head(_ request: HTTPRequest) throws -> HTTPResponse {
        do {
            try requireTus(request.head)
            let r = try owned(request.head, caller: try services.authenticate(request))
            return HTTPResponse(status: 200, headers: Self.tusHeaders + [
                ("Upload-Offset", String(r.receivedBytes)), ("Upload-Length", String(r.length)),
                ("Upload-Expires", Self.httpDate(r.expiresAt)), ("Cache-Control", "no-store"),
            ])
        } catch {
            // HEAD answers carry no body; the status and headers say it all.
            var p = problem(storageApiError(error))
            p.body = []
            return p
        }
    }

    func openChunk(_ head: RequestHead) throws -> any BodySink {
        do {
            try requireTus(head)
            let caller = try services.authenticate(head)
            let r = try owned(head, caller: caller)
            guard FileSignature.normalizedType(head.header("content-type") ?? "") == "application/offset+octet-stream" else {
                throw ApiError(.unsupportedFileType, "PATCH bodies must be application/offset+octet-stream.")
            }
            guard let offsetText = head.header("upload-offset"), let offset = Int64(offsetText) else {
                throw ApiError.malformed("Upload-Offset is required.")
            }
            guard offset == r.receivedBytes else {
                throw ApiError(.idempotencyConflict, "Upload-Offset is \(offset) but the upload is at \(r.receivedBytes).")
                    .with(status: 409, headers: [("Upload-Offset", String(r.receivedBytes))])
            }
            // Compared as what is left, not offset + length: a declared length near Int64.max
            // overflowed the sum and trapped.
            if let len = head.header("content-length").flatMap(Int64.init), len > r.length - offset {
                throw ApiError(.payloadTooLarge, "The chunk runs past Upload-Length \(r.length).")
            }
            // Refuse early while expired: no byte is read. The gate checks again at commit.
            if let org = try services.database.read({ try $0.org(r.orgId) }), org.expiresAt <= Timestamp.nowMillis() {
                services.metrics.add(.subscriptionRefusals)
                throw ApiError(.subscriptionExpired, "The organization's subscription has expired; the offset stays at \(r.receivedBytes).")
            }
            let checksum = try head.header("upload-checksum").map(ChunkChecksum.init(header:))
            guard busy.claim(r.uploadId) else {
                throw ApiError(.idempotencyConflict, "Another PATCH of this upload is in progress.").with(status: 409)
            }
            do {
                return try ChunkSink(record: r, path: services.blobs.partialPath(uploadId: r.uploadId), checksum: checksum, busy: busy)
            } catch {
                busy.release(r.uploadId)
                throw error
            }
        } catch {
            throw storageApiError(error).with(headers: Self.tusHeaders)
        }
    }

    func finishChunk(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let sink = request.sink as? ChunkSink else { throw ApiError(.internalError) }
        defer { sink.abort() }  // truncates back unless the new offset was committed
        let r = sink.record
        do {
            try sink.flush()
            if let c = sink.checksum, !c.matches(sink.digest()) {
                return problem(ApiError(.digestMismatch, "Upload-Checksum does not match the chunk; it was discarded."), status: 460)
            }
            let newOffset = r.receivedBytes + Int64(sink.written)
            guard newOffset == r.length else {
                let ok = try services.gate.write(orgId: r.orgId, actor: r.owner) { tx in
                    try tx.advanceResumableUpload(uploadId: r.uploadId, from: r.receivedBytes, to: newOffset)
                }
                guard case .written(true) = ok else {
                    return problem(ApiError(.idempotencyConflict, "The upload moved on meanwhile."), status: 409)
                }
                sink.committed = true
                return HTTPResponse(status: 204, headers: Self.tusHeaders + [("Upload-Offset", String(newOffset)),
                                                                              ("Upload-Expires", Self.httpDate(r.expiresAt))])
            }
            // The last chunk: the whole file is checked and committed like a plain upload.
            let record = try verifyComplete(r, path: sink.path)
            let response = try uploads.commit(record, tempPath: sink.path, path: "/v1/orgs/\(r.orgId)/uploads/\(r.clientUploadId)") { tx in
                guard try tx.advanceResumableUpload(uploadId: r.uploadId, from: r.receivedBytes, to: newOffset) else {
                    throw ApiError(.idempotencyConflict, "The upload moved on meanwhile.")
                }
            }
            sink.committed = true
            // The blob is a hard link made inside the transaction; the partial name goes now.
            unlink(sink.path)
            return HTTPResponse(status: 204, headers: Self.tusHeaders + [("Upload-Offset", String(newOffset)),
                                                                          ("Upload-Expires", Self.httpDate(r.expiresAt))],
                                logFields: ["upload": String(response.status)])
        } catch let e as ApiError {
            return problem(e)
        }
    }

    /// Reads the finished partial file once: size, SHA-256 and the signature of its first bytes.
    private func verifyComplete(_ r: ResumableUploadRecord, path: String) throws -> UploadRecord {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ApiError(.storageUnavailable, "The partial file is missing.") }
        defer { try? handle.close() }
        var digest = Digest(.sha256)
        var prefix: [UInt8] = []
        var size = 0
        while true {
            // The throwing read: `readData(ofLength:)` traps on a read error (a bad sector) instead of reporting it.
            let chunk: Data
            do { chunk = try handle.read(upToCount: 1 << 20) ?? Data() } catch {
                throw ApiError(.storageUnavailable, "The partial file cannot be read.")
            }
            if chunk.isEmpty { break }
            if prefix.count < FileSignature.prefixLength { prefix += chunk.prefix(FileSignature.prefixLength - prefix.count) }
            chunk.withUnsafeBytes { digest.update($0) }
            size += chunk.count
        }
        guard Int64(size) == r.length else { throw ApiError(.storageUnavailable, "The partial file has \(size) of \(r.length) bytes.") }
        guard FileSignature.matches(contentType: r.contentType, prefix: prefix, totalSize: size) else {
            throw ApiError(.corruptFile, "The bytes are not a \(r.contentType) file.")
        }
        return UploadRecord(orgId: r.orgId, clientUploadId: r.clientUploadId, uploader: r.owner, surveyVersionId: r.surveyVersionId,
                            questionId: r.questionId, contentType: r.contentType, size: Int64(size), sha256: Hex.encode(digest.finalize()),
                            receivedAt: Timestamp.nowMillis())
    }

    func terminate(_ request: HTTPRequest) throws -> HTTPResponse {
        do {
            try requireTus(request.head)
            let r = try owned(request.head, caller: try services.authenticate(request))
            _ = try services.gate.write(orgId: r.orgId, actor: r.owner) { tx in
                try tx.deleteResumableUpload(uploadId: r.uploadId, action: "upload.resumable.terminate")
            }
            // After the commit: a crash before this unlink leaves a file the start-up sweep removes.
            unlink(services.blobs.partialPath(uploadId: r.uploadId))
            return HTTPResponse(status: 204, headers: Self.tusHeaders)
        } catch {
            return problem(storageApiError(error))
        }
    }
}

/// `Upload-Checksum: sha1 <base64>` or `sha256 <base64>`.
struct ChunkChecksum: Sendable {
    let algorithm: Digest.Algorithm
    let expected: [UInt8]

    init(header: String) throws {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let bytes = Base64.decode(String(parts[1])) else { throw ApiError.malformed("Upload-Checksum must be '<algorithm> <base64>'.") }
        switch parts[0].lowercased() {
        case "sha1": algorithm = .sha1
        case "sha256": algorithm = .sha256
        default: throw ApiError.malformed("Upload-Checksum algorithm must be sha1 or sha256.")
        }
        expected = bytes
    }

    func matches(_ actual: [UInt8]) -> Bool { Digest.constantTimeEqual(actual, expected) }
}

/// Appends one PATCH body at the upload's offset. Until `committed`, `abort` truncates the
/// partial file back to the offset it started from.
final class ChunkSink: BodySink, @unchecked Sendable {
    // @unchecked: libmicrohttpd calls one connection's handler sequentially; `abort` comes last.
    let record: ResumableUploadRecord
    let path: String
    let checksum: ChunkChecksum?
    private let fd: Int32
    private var hasher: Digest
    private(set) var written = 0
    var committed = false
    private var closed = false
    private let busy: BusySet

    init(record: ResumableUploadRecord, path: String, checksum: ChunkChecksum?, busy: BusySet) throws {
        self.record = record
        self.path = path
        self.checksum = checksum
        self.busy = busy
        hasher = Digest(checksum?.algorithm ?? .sha256)
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ApiError(.storageUnavailable, "The partial file cannot be opened.") }
        // Anything past the recorded offset is a chunk that never committed.
        ftruncate(fd, off_t(record.receivedBytes))
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard record.receivedBytes + Int64(written + bytes.count) <= record.length else {
            throw ApiError(.payloadTooLarge, "The chunk runs past Upload-Length \(record.length).")
        }
        hasher.update(bytes)
        var off = 0
        while off < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + off, bytes.count - off, off_t(record.receivedBytes) + off_t(written + off))
            if n < 0 {
                if errno == EINTR { continue }
                throw ApiError(.storageUnavailable, errno == ENOSPC ? "The disk is full; the offset is unchanged." : "Writing the chunk failed.")
            }
            off += n
        }
        written += bytes.count
    }

    func flush() throws {
        guard fsync(fd) == 0 else { throw ApiError(.storageUnavailable, "fsync of the chunk failed; the offset is unchanged.") }
    }

    func digest() -> [UInt8] { hasher.result() }

    func abort() {
        guard !closed else { return }
        closed = true
        if !committed { ftruncate(fd, off_t(record.receivedBytes)) }
        close(fd)
        busy.release(record.uploadId)
    }
}

/// Ids currently being worked on.
final class BusySet: Sendable {
    private let ids = Mutex<Set<String>>([])
    func claim(_ id: String) -> Bool { ids.withLock { $0.insert(id).inserted } }
    func release(_ id: String) { _ = ids.withLock { $0.remove(id) } }
}
