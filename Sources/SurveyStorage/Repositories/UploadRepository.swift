import Foundation
import SurveyDomain

extension ReadContext {
    private static let uploadColumns = "org_id, client_upload_id, uploader, survey_version_id, question_id, content_type, size, sha256, received_at"
    private static func upload(_ r: Row) -> UploadRecord {
        UploadRecord(orgId: r.string(0), clientUploadId: r.string(1), uploader: r.string(2), surveyVersionId: r.string(3),
                     questionId: r.string(4), contentType: r.string(5), size: r.int(6), sha256: r.string(7), receivedAt: r.int(8))
    }

    public func upload(orgId: String, clientUploadId: String) throws -> UploadRecord? {
        try conn.query("SELECT \(Self.uploadColumns) FROM uploads WHERE org_id = ? AND client_upload_id = ?",
                       [.text(orgId), .text(clientUploadId)]).first.map(Self.upload)
    }

    /// The content hashes that rows reference: every other blob file is garbage.
    public func referencedBlobHashes() throws -> Set<String> {
        Set(try conn.query("SELECT DISTINCT sha256 FROM uploads").map { $0.string(0) })
    }

    private static let resumableColumns = """
        upload_id, org_id, client_upload_id, owner, survey_version_id, question_id, content_type, length, received_bytes, expires_at, created_at
        """
    private static func resumable(_ r: Row) -> ResumableUploadRecord {
        ResumableUploadRecord(uploadId: r.string(0), orgId: r.string(1), clientUploadId: r.string(2), owner: r.string(3),
                              surveyVersionId: r.string(4), questionId: r.string(5), contentType: r.string(6), length: r.int(7),
                              receivedBytes: r.int(8), expiresAt: r.int(9), createdAt: r.int(10))
    }

    public func resumableUpload(orgId: String, uploadId: String) throws -> ResumableUploadRecord? {
        try conn.query("SELECT \(Self.resumableColumns) FROM resumable_uploads WHERE upload_id = ? AND org_id = ?",
                       [.text(uploadId), .text(orgId)]).first.map(Self.resumable)
    }

    public func resumableUpload(orgId: String, clientUploadId: String) throws -> ResumableUploadRecord? {
        try conn.query("SELECT \(Self.resumableColumns) FROM resumable_uploads WHERE org_id = ? AND client_upload_id = ?",
                       [.text(orgId), .text(clientUploadId)]).first.map(Self.resumable)
    }

    public func liveResumableUploadIds() throws -> Set<String> {
        Set(try conn.query("SELECT upload_id FROM resumable_uploads").map { $0.string(0) })
    }
}

extension GatedTransaction {
    /// Links the verified file to its content-addressed place and records the upload, in this
    /// transaction: if the transaction does not commit, a newly placed link is removed again.
    public func commitUpload(_ u: UploadRecord, tempPath: String, blobs: BlobStore) throws {
        if try blobs.place(tempPath: tempPath, sha256: u.sha256) {
            let sha = u.sha256
            context.undo.add { blobs.remove(sha256: sha) }
        }
        try context.conn.run("""
            INSERT INTO uploads(org_id, client_upload_id, uploader, survey_version_id, question_id, content_type, size, sha256, received_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(orgId), .text(u.clientUploadId), .text(u.uploader), .text(u.surveyVersionId), .text(u.questionId),
                  .text(u.contentType), .int(u.size), .text(u.sha256), .int(now)])
        try audit(action: "upload.commit", targetType: "upload", targetId: u.clientUploadId, detail: "sha256=\(u.sha256) size=\(u.size)")
    }

    public func createResumableUpload(_ r: ResumableUploadRecord) throws {
        try context.conn.run("""
            INSERT INTO resumable_uploads(upload_id, org_id, client_upload_id, owner, survey_version_id, question_id, content_type,
                length, received_bytes, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
            """, [.text(r.uploadId), .text(orgId), .text(r.clientUploadId), .text(r.owner), .text(r.surveyVersionId),
                  .text(r.questionId), .text(r.contentType), .int(r.length), .int(r.expiresAt), .int(now)])
        try audit(action: "upload.resumable.create", targetType: "upload", targetId: r.clientUploadId, detail: "uploadId=\(r.uploadId) length=\(r.length)")
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

    public func deleteResumableUpload(uploadId: String, action: String) throws {
        try context.conn.run("DELETE FROM resumable_uploads WHERE upload_id = ? AND org_id = ?", [.text(uploadId), .text(orgId)])
        try audit(action: action, targetType: "resumable_upload", targetId: uploadId)
    }
}

