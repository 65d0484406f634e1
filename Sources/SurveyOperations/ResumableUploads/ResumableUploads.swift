import Foundation
import SurveyDomain
import SurveyStorage

/// What a door does for a `ResumableUpload`'s actions that touches the store: every read of an
/// upload's row (for the caller it admitted), the writes through the gate and the partial files.
public struct ResumableUploads: Sendable {
    let operations: Operations

    /// Where a PATCH's body goes: the partial file at the upload's offset (SQLite's data dir), or
    /// a staging file of its own that the offset's transaction copies into the database (PostgreSQL).
    public struct ChunkFile: Sendable {
        public let path: String
        /// Where in `path` the chunk starts.
        public let start: Int64
        public let staged: Bool
    }

    /// `.readRow` of HEAD, PATCH and DELETE: the upload under the path's id in the caller's
    /// organization (nil: none). Whose it is, and whether it expired, the machine decides.
    public func upload(_ user: UserRecord, uploadId: String) throws -> ResumableUploadRecord? {
        try operations.admit(user, to: Uploads.access, orgId: user.orgId)
        return try operations.database.read { try $0.resumableUpload(orgId: user.orgId, uploadId: uploadId) }
    }

    /// `.readRow` of a create: the upload under its clientUploadId (nil: none), in a snapshot.
    public func upload(_ user: UserRecord, orgId: String, clientUploadId: String) throws -> ResumableUploadRecord? {
        try operations.admit(user, to: Uploads.access, orgId: orgId)
        return try operations.database.read { try $0.resumableUpload(orgId: orgId, clientUploadId: clientUploadId) }
    }

    /// `.createPartialThenWrite`. The empty partial file exists before its row commits, so a PATCH
    /// never has to create it (creating could revive the file of an upload deleted meanwhile); if
    /// the row does not commit it goes again (after a crash, the start-up sweep removes it).
    public func create(_ record: ResumableUploadRecord, as asked: ResumableUpload.Creation) throws -> WriteGate.Outcome<ResumableUploadRecord> {
        let blobs = operations.blobs, clock = operations.clock, allowed = operations.limits.maxUnfinishedBytesPerCaller
        let partial = blobs.partialPath(uploadId: record.uploadId)
        if !blobs.keepsFilesInDatabase { try blobs.createPartial(uploadId: record.uploadId) }
        let outcome: WriteGate.Outcome<(ResumableUploadRecord, replaced: String?)>
        do {
            outcome = try operations.gate.write(orgId: record.orgId, actor: record.owner, replay: { db in
                switch asked.replay(of: try db.resumableUpload(orgId: record.orgId, clientUploadId: record.clientUploadId),
                                    owner: record.owner, now: clock.nowMillis()) {
                case .none: return nil
                case .replay(let r): return (r, nil)
                case .conflict: throw ResumableUploadRefusal.conflict
                }
            }) { tx in
                let held = try tx.read.unfinishedResumableBytes(orgId: record.orgId, owner: record.owner, now: tx.now)
                if let refusal = ResumableUpload.quotaRefusal(held: held, length: record.length, allowed: allowed) { throw refusal }
                return (record, try tx.createResumableUpload(record))
            }
        } catch {
            unlink(partial)
            throw error
        }
        switch outcome {
        case .replayed(let r):
            unlink(partial)
            return .replayed(r.0)
        case .written(let r):
            if let old = r.replaced { unlink(blobs.partialPath(uploadId: old)) }
            return .written(r.0)
        }
    }

    /// `.streamChunk`: 1001 now while the organization is expired, before a byte is read (the
    /// gate asks again at commit); else the file the chunk goes into.
    public func chunkFile(for r: ResumableUploadRecord) throws -> ChunkFile {
        if let org = try operations.database.read({ try $0.org(r.orgId) }) { try operations.gate.refuseIfExpired(org) }
        let blobs = operations.blobs
        if blobs.keepsFilesInDatabase { return ChunkFile(path: try blobs.createStaging(), start: 0, staged: true) }
        return ChunkFile(path: blobs.partialPath(uploadId: r.uploadId), start: r.receivedBytes, staged: false)
    }

    /// `.commitOffset`: the chunk is fsynced; its offset (and on PostgreSQL its bytes) commit.
    public func commitOffset(_ r: ResumableUploadRecord, to offset: Int64, chunk: ChunkFile) throws {
        let path = chunk.path
        try gatedWrite(r) { tx in
            try Self.advance(r, to: offset, tx)
            try tx.appendResumableChunk(uploadId: r.uploadId, start: r.receivedBytes, path: path)
        }
    }

    /// `.verifyWholeFile`: the received bytes, read back once through the check every finished
    /// file gets (`Uploads.verify`).
    public func verifyWholeFile(_ r: ResumableUploadRecord, chunk: ChunkFile) throws -> UploadRecord {
        let whole: any ByteReader = chunk.staged
            ? ChainedByteReader([operations.database.partialRows(uploadId: r.uploadId), try FileByteReader(path: chunk.path)])
            : try FileByteReader(path: chunk.path)
        return try operations.uploads.verify(r, bytes: whole)
    }

    /// `.commitWholeFile`, like a plain upload's commit. Nil when a plain upload of the same id
    /// stored the same bytes meanwhile, which finishes this one too.
    public func commitWholeFile(_ r: ResumableUploadRecord, _ record: UploadRecord, chunk: ChunkFile) throws -> UploadRecord? {
        let blobs = operations.blobs, path = chunk.path
        let stored = try gatedWrite(r) { tx -> UploadRecord? in
            try Self.advance(r, to: r.length, tx)
            // Different bytes under the id are 1004: the chunk is kept for a retry after a
            // DELETE, never silently dropped.
            if let e = try tx.read.upload(orgId: r.orgId, clientUploadId: r.clientUploadId) {
                guard e.uploader == record.uploader, e.sha256 == record.sha256, e.surveyVersionId == record.surveyVersionId,
                      e.questionId == record.questionId, e.contentType == record.contentType else {
                    throw ResumableUploadRefusal.conflict
                }
                try tx.dropResumableChunks(uploadId: r.uploadId)
                return nil
            }
            try tx.commitResumableUpload(record, uploadId: r.uploadId, lastChunkPath: path, lastChunkStart: r.receivedBytes, blobs: blobs)
            return record
        }
        if let stored { operations.metrics.add(.uploadBytes, Int(stored.size)) }
        // The blob is a hard link made inside the transaction; the partial name goes now.
        unlink(path)
        return stored
    }

    /// `.delete`: the row through the gate, then its partial file.
    public func delete(_ r: ResumableUploadRecord) throws {
        try gatedWrite(r) { tx in
            guard try tx.deleteResumableUpload(uploadId: r.uploadId, action: "upload.resumable.terminate") else {
                throw ResumableUploadRefusal.notFound
            }
        }
        // After the commit: a crash before this unlink leaves a file the start-up sweep removes.
        unlink(operations.blobs.partialPath(uploadId: r.uploadId))
    }

    /// Housekeeping: unfinished uploads past their expiry lose their row and partial file. An
    /// upload with a request in progress is left for the next sweep.
    public static func sweepExpired(database: Database, blobs: BlobStore, busy: BusySet) throws -> Int {
        let now = database.clock.nowMillis()
        let claims = try database.read { try $0.expiredResumableUploadIds(now: now) }.compactMap(busy.hold)
        // The claims are held until the files are gone.
        return try withExtendedLifetime(claims) {
            let removed = try database.expireResumableUploads(claims.map(\.id), now: now)
            for id in removed { unlink(blobs.partialPath(uploadId: id)) }
            return removed.count
        }
    }

    /// A gated write of this upload's owner.
    @discardableResult
    private func gatedWrite<T: Sendable>(_ r: ResumableUploadRecord, _ body: @escaping @Sendable (GatedTransaction) throws -> T) throws -> T {
        switch try operations.gate.write(orgId: r.orgId, actor: r.owner, body) {
        case .written(let v), .replayed(let v): return v
        }
    }

    /// Moves the offset from the one this PATCH started at; when the upload was removed or moved
    /// meanwhile (a DELETE, an expiry sweep, another process), the transaction is refused and rolled back.
    private static func advance(_ r: ResumableUploadRecord, to offset: Int64, _ tx: GatedTransaction) throws {
        guard try tx.advanceResumableUpload(uploadId: r.uploadId, from: r.receivedBytes, to: offset) else {
            throw ResumableUploadRefusal.removedMeanwhile
        }
    }
}

extension Operations {
    public var resumableUploads: ResumableUploads { ResumableUploads(operations: self) }
}
