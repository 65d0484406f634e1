import SurveyDomain

extension ReadContext {
    /// A survey of this organization (another organization's is simply not found).
    public func survey(orgId: String, surveyId: String) throws -> SurveyRecord? {
        try conn.query("SELECT \(SurveyRecord.columns) FROM surveys WHERE survey_id = ? AND org_id = ?",
                       [.text(surveyId), .text(orgId)]).first.map(SurveyRecord.init)
    }

    public func surveys(orgId: String, after: String?, limit: Int) throws -> [SurveyRecord] {
        try conn.query("SELECT \(SurveyRecord.columns) FROM surveys WHERE org_id = ? AND survey_id > ? ORDER BY survey_id LIMIT ?",
                       [.text(orgId), .text(after ?? ""), .int(Int64(limit))]).map(SurveyRecord.init)
    }

    public func surveyVersion(orgId: String, surveyVersionId: String) throws -> SurveyVersionRecord? {
        try conn.query("SELECT \(SurveyVersionRecord.columns) FROM survey_versions WHERE survey_version_id = ? AND org_id = ?",
                       [.text(surveyVersionId), .text(orgId)]).first.map(SurveyVersionRecord.init)
    }

    public func surveyVersions(surveyId: String) throws -> [SurveyVersionRecord] {
        try conn.query("SELECT \(SurveyVersionRecord.columns) FROM survey_versions WHERE survey_id = ? ORDER BY number",
                       [.text(surveyId)]).map(SurveyVersionRecord.init)
    }
}

extension GatedTransaction {
    public func createSurvey(surveyId: String, title: String, reviewRequired: Bool, createdBy: String) throws -> SurveyRecord {
        try context.conn.run("""
            INSERT INTO surveys(survey_id, org_id, title, review_required, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)
            """, [.text(surveyId), .text(orgId), .text(title), .bool(reviewRequired), .text(createdBy), .int(now)])
        try audit(action: "survey.create", targetType: "survey", targetId: surveyId)
        return SurveyRecord(surveyId: surveyId, orgId: orgId, title: title, reviewRequired: reviewRequired, createdAt: now)
    }

    /// Publishes the next version number of a survey; versions are immutable once written.
    public func publishVersion(surveyVersionId: String, surveyId: String, contentHash: String, definition: String) throws -> SurveyVersionRecord {
        let number = try context.conn.query("SELECT COALESCE(MAX(number), 0) + 1 AS next FROM survey_versions WHERE survey_id = ?",
                                            [.text(surveyId)]).first?.int("next") ?? 1
        try context.conn.run("""
            INSERT INTO survey_versions(survey_version_id, survey_id, org_id, number, content_hash, definition, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.text(surveyVersionId), .text(surveyId), .text(orgId), .int(number), .text(contentHash), .text(definition), .int(now)])
        try audit(action: "survey.version.publish", targetType: "survey_version", targetId: surveyVersionId, detail: "number=\(number)")
        return SurveyVersionRecord(surveyVersionId: surveyVersionId, surveyId: surveyId, orgId: orgId, number: number,
                                   contentHash: contentHash, definition: definition, createdAt: now)
    }
}
