import Foundation
import SurveyDomain

/// A survey's draft: a `survey_versions` row marked `draft` (number 0, at most one a survey),
/// with its test submissions in `draft_responses` and their files in `draft_files`. Every read
/// of published versions leaves the draft out (`draft = 0`), and no read of the live survey
/// touches the draft tables, so nothing of a draft is shown or counted as the survey's.
extension ReadContext {
    /// The survey's draft, if it has one.
    public func draftVersion(orgId: String, surveyId: String) throws -> SurveyVersionRecord? {
        try conn.query("SELECT \(SurveyVersionRecord.columns) FROM survey_versions WHERE survey_id = ? AND org_id = ? AND draft = 1",
                       [.text(surveyId), .text(orgId)]).first.map(SurveyVersionRecord.init)
    }

    /// Every draft of the organization's surveys.
    public func draftVersions(orgId: String) throws -> [SurveyVersionRecord] {
        try conn.query("SELECT \(SurveyVersionRecord.columns) FROM survey_versions WHERE org_id = ? AND draft = 1 ORDER BY survey_id",
                       [.text(orgId)]).map(SurveyVersionRecord.init)
    }

    /// The test submission stored under `clientSubmissionId` for this draft, as a response record
    /// (no review, revision 1): what a replay is checked against.
    public func draftResponse(orgId: String, surveyVersionId: String, clientSubmissionId: String) throws -> ResponseRecord? {
        try conn.query("""
            SELECT response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id, request_digest, request_sha256,
                answers, captured_at, received_at FROM draft_responses WHERE survey_version_id = ? AND org_id = ? AND client_submission_id = ?
            """, [.text(surveyVersionId), .text(orgId), .text(clientSubmissionId)]).first.map { row in
            ResponseRecord(responseId: try row["response_id"], orgId: try row["org_id"], clientSubmissionId: try row["client_submission_id"],
                           submitter: try row["submitter"], surveyId: try row["survey_id"], surveyVersionId: try row["survey_version_id"],
                           requestDigest: try row["request_digest"], requestSHA256: try row.blob("request_sha256"), answers: try row["answers"],
                           fieldTaskId: nil, capturedAt: try row["captured_at"], receivedAt: try row["received_at"], reviewState: .none, revision: 1)
        }
    }

    /// How many test submissions the draft has.
    public func draftResponseCount(orgId: String, surveyVersionId: String) throws -> Int64 {
        try conn.query("SELECT COUNT(*) AS n FROM draft_responses WHERE survey_version_id = ? AND org_id = ?",
                       [.text(surveyVersionId), .text(orgId)]).first?.int("n") ?? 0
    }
}

extension GatedTransaction {
    /// Stores a test submission of a draft and the files sent with it (their bytes as blobs,
    /// their rows in `draft_files`, never uploads of the organization), audited as a draft's.
    public func insertDraftResponse(_ r: ResponseRecord, files: [(record: UploadRecord, tempPath: String)], blobs: BlobStore) throws {
        try context.conn.run("""
            INSERT INTO draft_responses(response_id, org_id, survey_id, survey_version_id, client_submission_id, submitter,
                request_digest, request_sha256, answers, captured_at, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(r.responseId), .text(orgId), .text(r.surveyId), .text(r.surveyVersionId), .text(r.clientSubmissionId), .text(r.submitter),
                  .text(r.requestDigest), .blob(r.requestSHA256), .text(r.answers), .optional(r.capturedAt), .int(r.receivedAt)])
        for (file, tempPath) in files {
            try storeBlob(tempPath: tempPath, sha256: file.sha256, blobs: blobs)
            try context.conn.run("""
                INSERT INTO draft_files(response_id, client_upload_id, question_id, content_type, size, sha256) VALUES (?, ?, ?, ?, ?, ?)
                """, [.text(r.responseId), .text(file.clientUploadId), .text(file.questionId), .text(file.contentType), .int(file.size),
                      .text(file.sha256)])
        }
        try audit(action: "draft.response.accept", targetType: "draft_response", targetId: r.responseId,
                  detail: CanonicalJSON.string(["clientSubmissionId": .string(r.clientSubmissionId), "surveyVersionId": .string(r.surveyVersionId)]))
    }

    /// Removes the survey's draft, if any, with its test submissions and their files; answers
    /// the draft removed (nil when there was none). Not audited: the caller's write is.
    @discardableResult
    public func removeDraft(surveyId: String, blobs: BlobStore?) throws -> SurveyVersionRecord? {
        guard let draft = try read.draftVersion(orgId: orgId, surveyId: surveyId) else { return nil }
        let id = draft.surveyVersionId
        try removeDraftResponses(surveyVersionId: id, blobs: blobs)
        try context.conn.run("DELETE FROM survey_version_attachments WHERE survey_version_id = ?", [.text(id)])
        try context.conn.run("DELETE FROM survey_version_sources WHERE survey_version_id = ?", [.text(id)])
        try context.conn.run("DELETE FROM survey_versions WHERE survey_version_id = ? AND draft = 1", [.text(id)])
        return draft
    }

    /// Deletes a draft's test submissions and their files; a file's bytes go with them unless
    /// another row (an upload, a version's file, another test submission's) holds the same bytes.
    /// On SQLite the bytes are unlinked in the single writer's turn, so no other write can take
    /// the same content-addressed file meanwhile.
    func removeDraftResponses(surveyVersionId: String, blobs: BlobStore?) throws {
        let shas = Set(try context.conn.query("""
            SELECT DISTINCT f.sha256 FROM draft_files f JOIN draft_responses r ON r.response_id = f.response_id
            WHERE r.survey_version_id = ? AND r.org_id = ?
            """, [.text(surveyVersionId), .text(orgId)]).map { try $0.string("sha256") })
        try context.conn.run("""
            DELETE FROM draft_files WHERE response_id IN (SELECT response_id FROM draft_responses WHERE survey_version_id = ? AND org_id = ?)
            """, [.text(surveyVersionId), .text(orgId)])
        try context.conn.run("DELETE FROM draft_responses WHERE survey_version_id = ? AND org_id = ?", [.text(surveyVersionId), .text(orgId)])
        for sha in shas.sorted() {
            let held = try !context.conn.query("""
                SELECT 1 AS held FROM uploads WHERE sha256 = ? UNION ALL SELECT 1 FROM survey_version_attachments WHERE sha256 = ?
                UNION ALL SELECT 1 FROM draft_files WHERE sha256 = ? LIMIT 1
                """, [.text(sha), .text(sha), .text(sha)]).isEmpty
            guard !held else { continue }
            if context.conn.dialect == .postgres {
                try context.conn.run("DELETE FROM blob_chunks WHERE sha256 = ?", [.text(sha)])
            } else {
                blobs?.remove(sha256: sha)
            }
        }
    }

    /// The survey's draft becomes its next published version, under the new id `surveyVersionId`
    /// (its definition, source and files copied; the draft's rows and test submissions go), audited
    /// like any publication. nil when the survey has no draft. `xform`: the XForm the version
    /// serves instead of the draft's (its version attribute set on publishing); an uploaded
    /// XForm is its source too.
    public func publishDraft(surveyId: String, as surveyVersionId: String, xform: [UInt8]? = nil, blobs: BlobStore?) throws -> SurveyVersionRecord? {
        guard let draft = try read.draftVersion(orgId: orgId, surveyId: surveyId) else { return nil }
        let number = try context.conn.query("SELECT COALESCE(MAX(number), 0) + 1 AS next FROM survey_versions WHERE survey_id = ? AND draft = 0",
                                            [.text(surveyId)]).first?.int("next") ?? 1
        try context.conn.run("""
            INSERT INTO survey_versions(survey_version_id, survey_id, org_id, number, content_hash, definition, created_at, draft)
            SELECT ?, survey_id, org_id, ?, content_hash, definition, ?, 0 FROM survey_versions WHERE survey_version_id = ?
            """, [.text(surveyVersionId), .int(number), .int(now), .text(draft.surveyVersionId)])
        if let xform {
            try context.conn.run("""
                INSERT INTO survey_version_sources(survey_version_id, format, content_type, source, xform, warnings)
                SELECT ?, format, content_type, CASE WHEN format = 'xform' THEN ? ELSE source END, ?, warnings
                FROM survey_version_sources WHERE survey_version_id = ?
                """, [.text(surveyVersionId), .blob(xform), .blob(xform), .text(draft.surveyVersionId)])
        } else {
            try context.conn.run("""
                INSERT INTO survey_version_sources(survey_version_id, format, content_type, source, xform, warnings)
                SELECT ?, format, content_type, source, xform, warnings FROM survey_version_sources WHERE survey_version_id = ?
                """, [.text(surveyVersionId), .text(draft.surveyVersionId)])
        }
        try context.conn.run("""
            INSERT INTO survey_version_attachments(survey_version_id, file_name, content_type, size, sha256, md5)
            SELECT ?, file_name, content_type, size, sha256, md5 FROM survey_version_attachments WHERE survey_version_id = ?
            """, [.text(surveyVersionId), .text(draft.surveyVersionId)])
        try removeDraft(surveyId: surveyId, blobs: blobs)
        try audit(action: "survey.version.publish", targetType: "survey_version", targetId: surveyVersionId,
                  detail: "number=\(number) draft=\(draft.surveyVersionId)")
        return try read.surveyVersion(orgId: orgId, surveyVersionId: surveyVersionId)
    }

    /// Discards the survey's draft with its test submissions, audited; false when it has none.
    public func discardDraft(surveyId: String, blobs: BlobStore?) throws -> Bool {
        guard let draft = try removeDraft(surveyId: surveyId, blobs: blobs) else { return false }
        try audit(action: "survey.draft.discard", targetType: "survey_version", targetId: draft.surveyVersionId)
        return true
    }
}
