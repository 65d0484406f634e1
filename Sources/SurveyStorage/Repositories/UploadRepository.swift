import Foundation
import SurveyDomain

extension ReadContext {
    public func upload(orgId: String, clientUploadId: String) throws -> UploadRecord? {
        try conn.query("SELECT \(UploadRecord.columns) FROM uploads WHERE org_id = ? AND client_upload_id = ?",
                       [.text(orgId), .text(clientUploadId)]).first.map(UploadRecord.init)
    }

    /// The content hashes that rows reference: every other blob file is garbage.
    public func referencedBlobHashes() throws -> Set<String> {
        Set(try conn.query("SELECT sha256 FROM uploads UNION SELECT sha256 FROM survey_version_attachments UNION SELECT sha256 FROM draft_files").map { try $0.string("sha256") })
    }

    public func resumableUpload(orgId: String, uploadId: String) throws -> ResumableUploadRecord? {
        try conn.query("SELECT \(ResumableUploadRecord.columns) FROM resumable_uploads WHERE upload_id = ? AND org_id = ?",
                       [.text(uploadId), .text(orgId)]).first.map(ResumableUploadRecord.init)
    }

    public func resumableUpload(orgId: String, clientUploadId: String) throws -> ResumableUploadRecord? {
        try conn.query("SELECT \(ResumableUploadRecord.columns) FROM resumable_uploads WHERE org_id = ? AND client_upload_id = ?",
                       [.text(orgId), .text(clientUploadId)]).first.map(ResumableUploadRecord.init)
    }

    /// Unfinished uploads, whose partial files are kept; any other partial file is a leftover.
    public func liveResumableUploadIds() throws -> Set<String> {
        Set(try conn.query("SELECT upload_id FROM resumable_uploads WHERE received_bytes < length").map { try $0.string("upload_id") })
    }

    /// Unfinished uploads past their expiry: their bytes are freed by `expireResumableUploads`.
    public func expiredResumableUploadIds(now: Int64) throws -> [String] {
        try conn.query("SELECT upload_id FROM resumable_uploads WHERE received_bytes < length AND expires_at <= ?", [.int(now)])
            .map { try $0.string("upload_id") }
    }

    /// Bytes the owner has declared for unfinished, unexpired uploads: what they may still fill.
    public func unfinishedResumableBytes(orgId: String, owner: String, now: Int64) throws -> Int64 {
        try conn.query("""
            SELECT COALESCE(SUM(length), 0) AS bytes FROM resumable_uploads
            WHERE org_id = ? AND owner = ? AND received_bytes < length AND expires_at > ?
            """, [.text(orgId), .text(owner), .int(now)]).first?.int("bytes") ?? 0
    }
}

extension ResumableUploadRecord {
    /// Past its expiry and not finished: HEAD and PATCH answer 410, a create starts afresh.
    public func isExpired(now: Int64) -> Bool { expiresAt <= now && receivedBytes < length }
    public var isComplete: Bool { receivedBytes == length }
}

extension Database {
    /// Housekeeping, not a survey-domain write (never gated): removes the rows of these uploads
    /// if they are still unfinished and expired, each with an audit entry. Returns the ids
    /// removed; their partial files are the caller's to unlink after this returns.
    public func expireResumableUploads(_ uploadIds: [String], now: Int64) throws -> [String] {
        guard !uploadIds.isEmpty else { return [] }
        return try writer.submit { conn in
            var removed: [String] = []
            for id in uploadIds {
                guard let row = try conn.query("""
                    SELECT org_id, client_upload_id FROM resumable_uploads
                    WHERE upload_id = ? AND received_bytes < length AND expires_at <= ?
                    """, [.text(id), .int(now)]).first else { continue }
                try WriteContext(conn, orgId: try row.string("org_id"), actor: "surveyd", now: now)
                    .removeExpiredResumableUpload(uploadId: id, clientUploadId: try row.string("client_upload_id"))
                removed.append(id)
            }
            return removed
        }
    }
}

extension GatedTransaction {
    /// Links the verified file to its content-addressed place and records the upload, in this
    /// transaction: if the transaction does not commit, a newly placed link is removed again.
    public func commitUpload(_ u: UploadRecord, tempPath: String, blobs: BlobStore) throws {
        try storeBlob(tempPath: tempPath, sha256: u.sha256, blobs: blobs)
        try recordUpload(u)
    }

    /// A verified, fsynced file becomes the blob `sha256` in this transaction: rows of PostgreSQL,
    /// or on SQLite a link to its content-addressed place, removed again if the transaction does
    /// not commit.
    func storeBlob(tempPath: String, sha256: String, blobs: BlobStore?) throws {
        if context.conn.dialect == .postgres {
            try PostgresFiles.storeBlob(context.conn, path: tempPath, sha256: sha256)
        } else if let blobs, try blobs.place(tempPath: tempPath, sha256: sha256) {
            context.undo.add { blobs.remove(sha256: sha256) }
        }
    }

    /// The last chunk of a resumable upload finishes it: on PostgreSQL its received pieces, with
    /// `lastChunkPath` appended at `lastChunkStart`, become the blob; on SQLite the partial file
    /// (`lastChunkPath` is then the whole file) is linked into place like a plain upload's.
    public func commitResumableUpload(_ u: UploadRecord, uploadId: String, lastChunkPath: String, lastChunkStart: Int64, blobs: BlobStore) throws {
        guard context.conn.dialect == .postgres else { return try commitUpload(u, tempPath: lastChunkPath, blobs: blobs) }
        try PostgresFiles.appendPartial(context.conn, uploadId: uploadId, start: lastChunkStart, path: lastChunkPath)
        try PostgresFiles.blobFromPartial(context.conn, uploadId: uploadId, sha256: u.sha256)
        try recordUpload(u)
    }

    /// On PostgreSQL, a PATCH's bytes join the upload's received pieces in the transaction that
    /// moves its offset (on SQLite they are in the partial file already).
    public func appendResumableChunk(uploadId: String, start: Int64, path: String) throws {
        guard context.conn.dialect == .postgres else { return }
        try PostgresFiles.appendPartial(context.conn, uploadId: uploadId, start: start, path: path)
    }

    /// The received pieces of an upload that a plain upload of the same bytes finished.
    public func dropResumableChunks(uploadId: String) throws {
        guard context.conn.dialect == .postgres else { return }
        try PostgresFiles.dropPartial(context.conn, uploadId: uploadId)
    }

    private func recordUpload(_ u: UploadRecord) throws {
        try context.conn.run("""
            INSERT INTO uploads(org_id, client_upload_id, uploader, survey_version_id, question_id, content_type, size, sha256, received_at,
                file_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(orgId), .text(u.clientUploadId), .text(u.uploader), .text(u.surveyVersionId), .text(u.questionId),
                  .text(u.contentType), .int(u.size), .text(u.sha256), .int(now), .optional(u.fileName)])
        try audit(action: "upload.commit", targetType: "upload", targetId: u.clientUploadId, detail: "sha256=\(u.sha256) size=\(u.size)")
    }

    /// Creates the upload. An unfinished upload under the same clientUploadId that has expired
    /// is removed first (a create after expiry starts afresh); its id is returned so that the
    /// caller can unlink its partial file after the commit.
    public func createResumableUpload(_ r: ResumableUploadRecord) throws -> String? {
        var replaced: String?
        if let old = try read.resumableUpload(orgId: orgId, clientUploadId: r.clientUploadId), old.isExpired(now: now) {
            try context.removeExpiredResumableUpload(uploadId: old.uploadId, clientUploadId: old.clientUploadId)
            replaced = old.uploadId
        }
        try context.conn.run("""
            INSERT INTO resumable_uploads(upload_id, org_id, client_upload_id, owner, survey_version_id, question_id, content_type,
                length, received_bytes, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
            """, [.text(r.uploadId), .text(orgId), .text(r.clientUploadId), .text(r.owner), .text(r.surveyVersionId),
                  .text(r.questionId), .text(r.contentType), .int(r.length), .int(r.expiresAt), .int(now)])
        try audit(action: "upload.resumable.create", targetType: "upload", targetId: r.clientUploadId, detail: "uploadId=\(r.uploadId) length=\(r.length)")
        return replaced
    }

    /// Records bytes appended (and fsynced) to the partial file. The offset only moves forward:
    /// the update applies only if the stored offset is still `from`.
    public func advanceResumableUpload(uploadId: String, from: Int64, to: Int64) throws -> Bool {
        try context.conn.run("UPDATE resumable_uploads SET received_bytes = ? WHERE upload_id = ? AND org_id = ? AND received_bytes = ?",
                             [.int(to), .text(uploadId), .text(orgId), .int(from)])
        guard context.conn.changes == 1 else { return false }
        try audit(action: "upload.resumable.append", targetType: "resumable_upload", targetId: uploadId, detail: "offset=\(to)")
        return true
    }

    /// False (and nothing written) when the upload is already gone.
    public func deleteResumableUpload(uploadId: String, action: String) throws -> Bool {
        try context.conn.run("DELETE FROM resumable_uploads WHERE upload_id = ? AND org_id = ?", [.text(uploadId), .text(orgId)])
        guard context.conn.changes == 1 else { return false }
        try dropResumableChunks(uploadId: uploadId)
        try audit(action: action, targetType: "resumable_upload", targetId: uploadId)
        return true
    }
}

extension WriteContext {
    /// An unfinished upload past its expiry goes: its row, with an audit entry (the sweep and a
    /// create under the same clientUploadId both call this). Its partial file is the caller's.
    func removeExpiredResumableUpload(uploadId: String, clientUploadId: String) throws {
        try conn.run("DELETE FROM resumable_uploads WHERE upload_id = ?", [.text(uploadId)])
        if conn.dialect == .postgres { try PostgresFiles.dropPartial(conn, uploadId: uploadId) }
        try audit(action: "upload.resumable.expire", targetType: "resumable_upload", targetId: uploadId,
                  revision: nil, detail: "clientUploadId=\(clientUploadId)")
    }
}
