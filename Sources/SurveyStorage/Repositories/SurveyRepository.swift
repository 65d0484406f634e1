import SurveyDomain

extension ReadContext {
    /// A survey of this organization (another organization's is simply not found).
    public func survey(orgId: String, surveyId: String) throws -> SurveyRecord? {
        try conn.query("SELECT \(SurveyRecord.columns) FROM surveys WHERE survey_id = ? AND org_id = ?",
                       [.text(surveyId), .text(orgId)]).first.map(SurveyRecord.init)
    }

    /// Where a survey is in its life now: read on every submission, never cached (another
    /// process may have closed it).
    public func surveyState(orgId: String, surveyId: String) throws -> SurveyState? {
        try conn.query("SELECT state FROM surveys WHERE survey_id = ? AND org_id = ?", [.text(surveyId), .text(orgId)]).first
            .flatMap { SurveyState(rawValue: try $0.string("state")) }
    }

    public func surveys(orgId: String, after: String?, limit: Int) throws -> [SurveyRecord] {
        try conn.query("SELECT \(SurveyRecord.columns) FROM surveys WHERE org_id = ? AND survey_id > ? ORDER BY survey_id LIMIT ?",
                       [.text(orgId), .text(after ?? ""), .int(Int64(limit))]).map(SurveyRecord.init)
    }

    public func surveyVersion(orgId: String, surveyVersionId: String) throws -> SurveyVersionRecord? {
        try conn.query("SELECT \(SurveyVersionRecord.columns) FROM survey_versions WHERE survey_version_id = ? AND org_id = ? AND draft = 0",
                       [.text(surveyVersionId), .text(orgId)]).first.map(SurveyVersionRecord.init)
    }

    /// What a version of this organization was published from, when it was not JSON.
    public func versionSource(orgId: String, surveyVersionId: String) throws -> VersionSourceRecord? {
        try conn.query("""
            SELECT s.format, s.content_type, s.source, s.xform, s.warnings FROM survey_version_sources s
            JOIN survey_versions v ON v.survey_version_id = s.survey_version_id
            WHERE s.survey_version_id = ? AND v.org_id = ?
            """, [.text(surveyVersionId), .text(orgId)]).first.map { row in
            VersionSourceRecord(format: try row.string("format"), contentType: try row.string("content_type"),
                                source: try row.blob("source"), xform: try row.blob("xform"),
                                warnings: VersionSourceRecord.warnings(fromColumn: try row.optionalString("warnings")))
        }
    }

    /// The files a version of this organization was published with, by name.
    public func versionAttachments(orgId: String, surveyVersionId: String) throws -> [VersionAttachmentRecord] {
        try conn.query("""
            SELECT \(VersionAttachmentRecord.columns) FROM survey_version_attachments a
            JOIN survey_versions v ON v.survey_version_id = a.survey_version_id
            WHERE a.survey_version_id = ? AND v.org_id = ? ORDER BY a.file_name
            """, [.text(surveyVersionId), .text(orgId)]).map(VersionAttachmentRecord.init)
    }

    public func versionAttachment(orgId: String, surveyVersionId: String, fileName: String) throws -> VersionAttachmentRecord? {
        try conn.query("""
            SELECT \(VersionAttachmentRecord.columns) FROM survey_version_attachments a
            JOIN survey_versions v ON v.survey_version_id = a.survey_version_id
            WHERE a.survey_version_id = ? AND v.org_id = ? AND a.file_name = ?
            """, [.text(surveyVersionId), .text(orgId), .text(fileName)]).first.map(VersionAttachmentRecord.init)
    }

    /// The files each version of a survey was published with (by version id; a version without
    /// files is not there).
    public func versionAttachments(orgId: String, surveyId: String) throws -> [String: [VersionAttachmentRecord]] {
        var found: [String: [VersionAttachmentRecord]] = [:]
        for row in try conn.query("""
            SELECT \(VersionAttachmentRecord.columns) FROM survey_version_attachments a
            JOIN survey_versions v ON v.survey_version_id = a.survey_version_id
            WHERE v.survey_id = ? AND v.org_id = ? AND v.draft = 0 ORDER BY a.survey_version_id, a.file_name
            """, [.text(surveyId), .text(orgId)]) {
            let a = try VersionAttachmentRecord(row: row)
            found[a.surveyVersionId, default: []].append(a)
        }
        return found
    }

    /// The format and type of each version of a survey that was published from a file (by
    /// version id), without the bytes: versions published as JSON are not there.
    public func versionSourceSummaries(orgId: String, surveyId: String) throws -> [String: VersionSourceSummary] {
        var found: [String: VersionSourceSummary] = [:]
        for row in try conn.query("""
            SELECT s.survey_version_id, s.format, s.content_type FROM survey_version_sources s
            JOIN survey_versions v ON v.survey_version_id = s.survey_version_id WHERE v.survey_id = ? AND v.org_id = ? AND v.draft = 0
            """, [.text(surveyId), .text(orgId)]) {
            found[try row.string("survey_version_id")] = VersionSourceSummary(format: try row.string("format"), contentType: try row.string("content_type"))
        }
        return found
    }

    /// Every version of the organization, by survey and number, without definitions: the ids an
    /// app's form names are looked up among.
    public func versionKeys(orgId: String) throws -> [(surveyVersionId: String, surveyId: String, number: Int64)] {
        try conn.query("SELECT survey_version_id, survey_id, number FROM survey_versions WHERE org_id = ? AND draft = 0 ORDER BY survey_id, number",
                       [.text(orgId)]).map { (try $0["survey_version_id"], try $0["survey_id"], try $0["number"]) }
    }

    public func surveyVersions(surveyId: String) throws -> [SurveyVersionRecord] {
        try conn.query("SELECT \(SurveyVersionRecord.columns) FROM survey_versions WHERE survey_id = ? AND draft = 0 ORDER BY number",
                       [.text(surveyId)]).map(SurveyVersionRecord.init)
    }
}

extension GatedTransaction {
    /// Moves a survey to `state`, audited with where it came from.
    public func setSurveyState(_ survey: SurveyRecord, to state: SurveyState) throws -> SurveyRecord {
        try context.conn.run("UPDATE surveys SET state = ? WHERE survey_id = ? AND org_id = ?",
                             [.text(state.rawValue), .text(survey.surveyId), .text(orgId)])
        try audit(action: "survey.state", targetType: "survey", targetId: survey.surveyId, detail: "from=\(survey.state.rawValue) to=\(state.rawValue)")
        return SurveyRecord(surveyId: survey.surveyId, orgId: survey.orgId, title: survey.title, reviewRequired: survey.reviewRequired,
                            createdAt: survey.createdAt, state: state, entityListScope: survey.entityListScope)
    }

    /// Which entities of a list the survey's forms read reach a collector's phone from now on:
    /// each phone's copy and its manifest hash follow at its next update check.
    public func setEntityListScope(_ survey: SurveyRecord, to scope: EntityListScope) throws -> SurveyRecord {
        try context.conn.run("UPDATE surveys SET entity_list_scope = ? WHERE survey_id = ? AND org_id = ?",
                             [.text(scope.rawValue), .text(survey.surveyId), .text(orgId)])
        try audit(action: "survey.entityListScope", targetType: "survey", targetId: survey.surveyId,
                  detail: "from=\(survey.entityListScope.rawValue) to=\(scope.rawValue)")
        return SurveyRecord(surveyId: survey.surveyId, orgId: survey.orgId, title: survey.title, reviewRequired: survey.reviewRequired,
                            createdAt: survey.createdAt, state: survey.state, entityListScope: scope)
    }

    /// Publications of one organization run one after the other (on PostgreSQL; SQLite's one
    /// writer already does): what a publication checks against the versions already published —
    /// that its form id names no other survey — still holds when it commits.
    public func takePublishingTurn() throws {
        try context.conn.takeTurn("publish\u{1}" + orgId)
    }

    public func createSurvey(surveyId: String, title: String, reviewRequired: Bool, entityListScope: EntityListScope = .all,
                             createdBy: String) throws -> SurveyRecord {
        try context.conn.run("""
            INSERT INTO surveys(survey_id, org_id, title, review_required, entity_list_scope, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.text(surveyId), .text(orgId), .text(title), .bool(reviewRequired), .text(entityListScope.rawValue), .text(createdBy), .int(now)])
        try audit(action: "survey.create", targetType: "survey", targetId: surveyId)
        return SurveyRecord(surveyId: surveyId, orgId: orgId, title: title, reviewRequired: reviewRequired, createdAt: now, state: .open,
                            entityListScope: entityListScope)
    }

    /// Publishes the next version number of a survey; versions are immutable once written. As a
    /// `draft` it is the survey's draft instead (number 0), replacing an earlier one and its test
    /// submissions in this transaction.
    public func publishVersion(surveyVersionId: String, surveyId: String, contentHash: String, definition: String,
                               source: VersionSourceRecord? = nil, attachments: [(record: VersionAttachmentRecord, tempPath: String)] = [],
                               blobs: BlobStore? = nil, draft: Bool = false) throws -> SurveyVersionRecord {
        let number: Int64
        if draft {
            try removeDraft(surveyId: surveyId, blobs: blobs)
            number = 0
        } else {
            number = try context.conn.query("SELECT COALESCE(MAX(number), 0) + 1 AS next FROM survey_versions WHERE survey_id = ? AND draft = 0",
                                            [.text(surveyId)]).first?.int("next") ?? 1
        }
        try context.conn.run("""
            INSERT INTO survey_versions(survey_version_id, survey_id, org_id, number, content_hash, definition, created_at, draft)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(surveyVersionId), .text(surveyId), .text(orgId), .int(number), .text(contentHash), .text(definition), .int(now),
                  .int(draft ? 1 : 0)])
        if let source {
            try context.conn.run("""
                INSERT INTO survey_version_sources(survey_version_id, format, content_type, source, xform, warnings) VALUES (?, ?, ?, ?, ?, ?)
                """, [.text(surveyVersionId), .text(source.format), .text(source.contentType), .blob(source.source), .blob(source.xform),
                      VersionSourceRecord.warningsColumn(source.warnings)])
        }
        for (a, tempPath) in attachments {
            try storeBlob(tempPath: tempPath, sha256: a.sha256, blobs: blobs)
            try context.conn.run("""
                INSERT INTO survey_version_attachments(survey_version_id, file_name, content_type, size, sha256, md5) VALUES (?, ?, ?, ?, ?, ?)
                """, [.text(surveyVersionId), .text(a.fileName), .text(a.contentType), .int(a.size), .text(a.sha256), .text(a.md5)])
        }
        try audit(action: draft ? "survey.draft.create" : "survey.version.publish", targetType: "survey_version", targetId: surveyVersionId,
                  detail: "number=\(number)" + (attachments.isEmpty ? "" : " attachments=\(attachments.count)"))
        return SurveyVersionRecord(surveyVersionId: surveyVersionId, surveyId: surveyId, orgId: orgId, number: number,
                                   contentHash: contentHash, definition: definition, createdAt: now, warnings: source?.warnings ?? [], draft: draft)
    }
}
