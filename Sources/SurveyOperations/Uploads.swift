import Foundation
import SurveyDomain
import SurveyStorage

/// What an upload's metadata asks for, checked before a byte of the file is read.
public struct UploadTarget: Sendable {
    public let orgId: String
    public let uploader: String
    public let clientUploadId: String
    public let surveyVersionId: String
    public let questionId: String
    public let contentType: String
    /// The question's `maxBytes` or the server's limit, whichever is lower.
    public let limit: Int
    /// The stored upload under this id, when the request may be its replay.
    public let existing: UploadRecord?
}

/// Files captured with a response, keyed by `clientUploadId`. Checked on their own merits
/// (1005, 1010–1015), never as 1001; committed through the gate with their file, or not at all.
public struct Uploads: Sendable {
    let operations: Operations
    /// Who may upload (plainly or resumably), checked with the metadata; doors declare their routes with it.
    public static let access = Access.member(anyOf: [.collector])

    /// Steps 1–4 for an upload's metadata: tenancy and role, the key's format, replay by
    /// metadata, version, question, type and declared size. Shared by plain and resumable uploads.
    public func target(orgId: String, clientUploadId: String, caller: Caller, idempotencyKey: String? = nil, surveyVersionId: String?,
                       questionId: String?, contentType: String?, declaredLength: Int?) throws -> UploadTarget {
        let ops = operations
        let user = try ops.admit(caller, to: Self.access, orgId: orgId).member()
        // clientUploadId is this write's key; an Idempotency-Key is checked for format only.
        if let idempotencyKey { _ = try IdempotencyKey<Done>.normalized(idempotencyKey) }
        guard ClientIdentifier.isValid(clientUploadId) else {
            throw ApiError(.invalidIdentifier, "clientUploadId must be 8–128 characters of A-Z a-z 0-9 _ - : .")
        }
        guard let surveyVersionId, !surveyVersionId.isEmpty else { throw ApiError.malformed("Survey-Version-Id is required.") }
        guard let questionId, !questionId.isEmpty else { throw ApiError.malformed("Question-Id is required.") }
        guard let contentType, !contentType.isEmpty else { throw ApiError.malformed("Content-Type is required.") }
        let type = FileSignature.normalizedType(contentType)

        // One snapshot: what is stored under the id, and the version it names.
        let (existing, version) = try ops.database.read { db in
            (try db.upload(orgId: orgId, clientUploadId: clientUploadId), try db.surveyVersion(orgId: orgId, surveyVersionId: surveyVersionId))
        }
        try Self.refuseOtherUpload(under: existing, uploader: user.userId, surveyVersionId: surveyVersionId, questionId: questionId,
                                   contentType: type, declaredLength: declaredLength)
        guard let version else { throw ApiError.notFound() }
        return try target(existing: existing, uploader: user.userId, clientUploadId: clientUploadId, version: version,
                          definition: try ops.definitions.definition(of: version), questionId: questionId, contentType: type,
                          declaredLength: declaredLength)
    }

    /// The same for a file sent with a submission, in the submission's own snapshot: its
    /// version and question as the submission read them (the caller admitted already).
    public func target(in db: ReadContext, clientUploadId: String, uploader: String, version: SurveyVersionRecord, definition: SurveyDefinition,
                       questionId: String, contentType: String, declaredLength: Int) throws -> UploadTarget {
        let existing = try db.upload(orgId: version.orgId, clientUploadId: clientUploadId)
        try Self.refuseOtherUpload(under: existing, uploader: uploader, surveyVersionId: version.surveyVersionId, questionId: questionId,
                                   contentType: contentType, declaredLength: declaredLength)
        return try target(existing: existing, uploader: uploader, clientUploadId: clientUploadId, version: version, definition: definition,
                          questionId: questionId, contentType: contentType, declaredLength: declaredLength)
    }

    /// An id already used by another upload (another uploader, version, question, type or size) is 1004.
    private static func refuseOtherUpload(under existing: UploadRecord?, uploader: String, surveyVersionId: String, questionId: String,
                                          contentType: String, declaredLength: Int?) throws {
        guard let e = existing else { return }
        guard e.uploader == uploader, e.surveyVersionId == surveyVersionId, e.questionId == questionId, e.contentType == contentType,
              declaredLength.map({ Int64($0) == e.size }) ?? true else {
            throw ApiError(.idempotencyConflict, "This clientUploadId was already used for a different upload.")
        }
    }

    /// The question's checks: a file question that accepts the type, and the size within its limit.
    private func target(existing: UploadRecord?, uploader: String, clientUploadId: String, version: SurveyVersionRecord, definition: SurveyDefinition,
                        questionId: String, contentType type: String, declaredLength: Int?) throws -> UploadTarget {
        guard let question = definition.question(id: questionId), question.type == .file else {
            throw ApiError(.questionDoesNotAcceptFiles, "Question \(questionId) of this version is not a file question.")
        }
        guard question.accepts(contentType: type), FileSignature.knownTypes.contains(type) else {
            throw ApiError(.unsupportedFileType, "\(type) is not accepted by question \(questionId) (accepts \(question.accept.joined(separator: ", "))).")
        }
        let limit = min(question.maxBytes ?? Int.max, operations.limits.maxFileBytes)
        if let declaredLength, declaredLength > limit {
            throw ApiError(.payloadTooLarge, "The file is \(declaredLength) bytes; the limit for this question is \(limit).")
        }
        return UploadTarget(orgId: version.orgId, uploader: uploader, clientUploadId: clientUploadId, surveyVersionId: version.surveyVersionId,
                            questionId: questionId, contentType: type, limit: limit, existing: existing)
    }

    /// A file about to arrive for `target`, into a temp file.
    public func receive(_ target: UploadTarget, expectedSHA256: [UInt8]?) throws -> IncomingFile {
        IncomingFile(target: target, file: try operations.blobs.createTemp(), expectedSHA256: expectedSHA256)
    }

    /// The bytes are in: the replay comparison by content, signature and digest (1004, 1013,
    /// 1014), then the gate (1001) with the blob placed and the row written in one transaction.
    /// The temp file is gone afterwards, whatever the outcome.
    public func finish(_ incoming: IncomingFile) throws -> WriteGate.Outcome<UploadRecord> {
        defer { incoming.discard() }  // after a commit the temp file is gone and this does nothing
        switch try verify(incoming) {
        case .replay(let stored): return .replayed(stored)
        case .new(let record): return try commit(record, tempPath: incoming.file.path)
        }
    }

    /// What the bytes turned out to be.
    enum Verified {
        /// The upload already stored under this id, sent again: its answer, even while expired.
        case replay(UploadRecord)
        /// A new upload whose file passed every check.
        case new(UploadRecord)
    }

    func verify(_ incoming: IncomingFile) throws -> Verified {
        let sha = try incoming.file.finish()
        let t = incoming.target
        let record = UploadRecord(orgId: t.orgId, clientUploadId: t.clientUploadId, uploader: t.uploader, surveyVersionId: t.surveyVersionId,
                                  questionId: t.questionId, contentType: t.contentType, size: Int64(incoming.file.size), sha256: sha,
                                  receivedAt: operations.clock.nowMillis())
        if let e = t.existing {
            guard e.sha256 == sha, e.size == record.size else {
                throw ApiError(.idempotencyConflict, "This clientUploadId was already used for different bytes.")
            }
            return .replay(e)
        }
        try incoming.check.verdict()
        if let expected = incoming.expectedSHA256, Hex.encode(expected) != sha {
            throw ApiError(.digestMismatch, "Content-Digest does not match the bytes received.")
        }
        return .new(record)
    }

    /// A resumable upload's bytes, complete: read once for their size and SHA-256, and given the
    /// check every finished file gets (`FileCheck`). Its commit is `commit`, as for a plain upload.
    public func verify(_ r: ResumableUploadRecord, bytes: any ByteReader) throws -> UploadRecord {
        defer { bytes.close() }
        var digest = Digest(.sha256)
        var check = FileCheck(contentType: r.contentType)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n: Int
            do { n = try buffer.withUnsafeMutableBytes { try bytes.read(into: $0) } } catch {
                throw ApiError(.storageUnavailable, "The received bytes cannot be read.")
            }
            if n == 0 { break }
            buffer.withUnsafeBytes { chunk in
                let piece = UnsafeRawBufferPointer(rebasing: chunk[0..<n])
                digest.update(piece)
                check.update(piece)
            }
        }
        guard Int64(check.size) == r.length else { throw ApiError(.storageUnavailable, "The partial file has \(check.size) of \(r.length) bytes.") }
        try check.verdict()
        return UploadRecord(orgId: r.orgId, clientUploadId: r.clientUploadId, uploader: r.owner, surveyVersionId: r.surveyVersionId,
                            questionId: r.questionId, contentType: r.contentType, size: Int64(check.size), sha256: Hex.encode(digest.finalize()),
                            receivedAt: operations.clock.nowMillis())
    }

    /// Steps 5–6: the gate, with the blob placed and the row written in one transaction.
    /// Resumable uploads commit their finished file through here too.
    public func commit(_ record: UploadRecord, tempPath: String) throws -> WriteGate.Outcome<UploadRecord> {
        let blobs = operations.blobs
        let outcome: WriteGate.Outcome<UploadRecord> = try operations.gate.write(orgId: record.orgId, actor: record.uploader, replay: { db in
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
                                size: record.size, sha256: record.sha256, receivedAt: tx.now, fileName: record.fileName)
        }
        if case .written(let u) = outcome { operations.metrics.add(.uploadBytes, Int(u.size)) }
        return outcome
    }

    /// A file of a submission whose answers are yet to be checked: verified (type, signature,
    /// size) and waiting in its temp file, to be committed in the submission's own transaction —
    /// so a submission refused keeps none of its files. nil when it is a file stored already
    /// under its id (sent again), whose temp file is then gone.
    public func stage(_ incoming: IncomingFile) throws -> StagedUpload? {
        do {
            switch try verify(incoming) {
            case .replay:
                incoming.discard()
                return nil
            case .new(let record): return StagedUpload(record: record, file: incoming.file)
            }
        } catch {
            incoming.discard()
            throw error
        }
    }

    /// A file that arrived with a submission, before anything is read: into a temp file, hashed,
    /// and checked for what its type says as the bytes come (`ReceivedFile`).
    public func receive(fileName: String, contentType: String) throws -> ReceivedFile {
        ReceivedFile(fileName: fileName, contentType: FileSignature.normalizedType(contentType), file: try operations.blobs.createTemp(),
                     limit: operations.limits.maxFileBytes)
    }

    /// A received file bound to the upload `target` it turned out to be (in the submission's
    /// snapshot): verified like any upload's file and staged for the submission's transaction;
    /// nil when it is the file stored already under its id. The file stays its receiver's to discard.
    public func stage(_ received: ReceivedFile, as target: UploadTarget) throws -> StagedUpload? {
        let size = received.size
        guard size <= target.limit else {
            throw ApiError(.payloadTooLarge, "The file is \(size) bytes; the limit for question \(target.questionId) is \(target.limit).")
        }
        if let e = target.existing {
            guard e.sha256 == received.sha256, e.size == Int64(size) else {
                throw ApiError(.idempotencyConflict, "This clientUploadId was already used for different bytes.")
            }
            return nil
        }
        try received.check.verdict()
        let record = UploadRecord(orgId: target.orgId, clientUploadId: target.clientUploadId, uploader: target.uploader,
                                  surveyVersionId: target.surveyVersionId, questionId: target.questionId, contentType: target.contentType,
                                  size: Int64(size), sha256: received.sha256, receivedAt: operations.clock.nowMillis(),
                                  fileName: received.fileName)
        return StagedUpload(record: record, file: received.file)
    }

    /// A staged file stored as an upload on its own, through the gate: the files a split
    /// submission's last POST carried are kept when another file is still missing.
    public func keep(_ file: StagedUpload) throws {
        defer { file.discard() }
        _ = try commit(file.record, tempPath: file.tempPath)
    }

    /// The upload ids `answers` cite (each file answer is `{"clientUploadId": …}`), in key order,
    /// repeats included, each as often as cited.
    public static func citedIds(in answers: JSONValue) -> [String] {
        switch answers {
        case .object(let o):
            if case .string(let id)? = o["clientUploadId"], o.count == 1 { return [id] }
            return o.keys.sorted().flatMap { citedIds(in: o[$0] ?? .null) }
        case .array(let a): return a.flatMap(citedIds)
        default: return []
        }
    }

    /// Every file answer cites a completed upload of this organization, version and question that
    /// `submitter` made — stored, or among `staged` (the files sent with the submission) — so a
    /// response never takes another collector's file. (Uploads are never deleted, so a check
    /// before the transaction stays true.)
    /// `fileNames`: the name a door's sender knows a file by, by its upload id (an ODK app's
    /// file name), said in the refusal instead of the id.
    public func checkAttachments(_ files: [FileAnswer], orgId: String, surveyVersionId: String, submitter: String,
                                 staged: [StagedUpload] = [], fileNames: [String: String] = [:], in db: ReadContext) throws {
        for file in files {
            let upload = try staged.first(where: { $0.record.clientUploadId == file.clientUploadId })?.record
                ?? db.upload(orgId: orgId, clientUploadId: file.clientUploadId)
            guard let upload, upload.surveyVersionId == surveyVersionId, upload.questionId == file.questionId, upload.uploader == submitter else {
                if let name = fileNames[file.clientUploadId] {
                    throw ApiError(.attachmentNotUploaded, "The file \(name) (question \(file.questionId)) has not arrived: send the form again with it.",
                                   errors: [FieldError(path: "answers.\(file.questionId)", message: "the file \(name) has not arrived")])
                }
                throw ApiError(.attachmentNotUploaded, "No completed upload \(file.clientUploadId) for question \(file.questionId) of this version.",
                               errors: [FieldError(path: "answers.\(file.questionId)", message: "not a completed upload for this question")])
            }
        }
    }
}

/// A submission's file, verified and waiting in its temp file for the submission's transaction
/// (`Uploads.stage`); whatever the outcome, `discard` removes what is left of it.
public struct StagedUpload: Sendable {
    public let record: UploadRecord
    let file: TempFile
    var tempPath: String { file.path }
    public func discard() { file.discard() }
}

/// A submission's file as its POST carried it, before the submission is read: which question
/// it answers is known only then (`Uploads.stage(_:as:)`). Held to the server's file limit as
/// it arrives; text types checked to the last byte, as every upload's file is.
public final class ReceivedFile: @unchecked Sendable {
    // @unchecked: written by one thread, then only read.
    /// The name the sender gave it (an ODK app's part name, the file name its form names).
    public let fileName: String
    public let contentType: String
    let file: TempFile
    private let limit: Int
    private(set) var check: FileCheck
    /// Hex SHA-256, once `finish`ed.
    private(set) var sha256 = ""
    var size: Int { file.size }

    init(fileName: String, contentType: String, file: TempFile, limit: Int) {
        self.fileName = fileName
        self.contentType = contentType
        self.file = file
        self.limit = limit
        check = FileCheck(contentType: contentType)
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard file.size + bytes.count <= limit else {
            throw ApiError(.payloadTooLarge, "The file \(fileName) is over the server's limit of \(limit) bytes.")
        }
        check.update(bytes)
        try file.write(bytes)
    }

    /// Every byte written and fsynced.
    public func finish() throws { sha256 = try file.finish() }

    public func discard() { file.discard() }
}

/// An upload's file as it arrives: refused past the question's limit, text checked to the last
/// byte as it streams.
public final class IncomingFile: @unchecked Sendable {
    // @unchecked: one request's thread writes it at a time; see TempFile.
    public let target: UploadTarget
    let file: TempFile
    let expectedSHA256: [UInt8]?
    /// Checked as the bytes arrive (`FileCheck`, the same check a resumable upload's file gets).
    private(set) var check: FileCheck

    init(target: UploadTarget, file: TempFile, expectedSHA256: [UInt8]?) {
        self.target = target
        self.file = file
        self.expectedSHA256 = expectedSHA256
        check = FileCheck(contentType: target.contentType)
    }

    /// A refusal (too large, a failed write) ends the upload and removes its file.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        do {
            guard file.size + bytes.count <= target.limit else {
                throw ApiError(.payloadTooLarge, "The file is over the limit of \(target.limit) bytes for this question.")
            }
            check.update(bytes)
            try file.write(bytes)
        } catch {
            discard()
            throw error
        }
    }

    public func discard() { file.discard() }
}
