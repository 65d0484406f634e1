import SurveyDomain

extension ReadContext {
    /// A page of a survey's responses matching `filter`, newest first, before `before` (a responseId).
    public func queueRows(_ filter: ExportFilter, before: String?, limit: Int) throws -> [ResponseRecord] {
        var c = filter.condition
        if let before { c.sql += " AND response_id < ?"; c.args.append(.text(before)) }
        return try conn.query("SELECT \(ResponseRecord.columns) FROM responses WHERE \(c.sql) ORDER BY response_id DESC LIMIT ?",
                              c.args + [.int(Int64(limit))]).map(ResponseRecord.init)
    }

    /// How many of the responses matching `filter` are in each review state.
    public func stateCounts(_ filter: ExportFilter) throws -> [ReviewState: Int] {
        let c = filter.condition
        var counts: [ReviewState: Int] = [:]
        for r in try conn.query("SELECT review_state, COUNT(*) AS n FROM responses WHERE \(c.sql) GROUP BY review_state", c.args) {
            let n: Int = try r["n"]
            counts[try r["review_state"]] = n
        }
        return counts
    }

    /// The people who submitted to a survey (for the queue's filter).
    public func submitters(orgId: String, surveyId: String) throws -> [UserRecord] {
        try conn.query("""
            SELECT \(UserRecord.columns) FROM users u WHERE u.user_id IN
              (SELECT DISTINCT submitter FROM responses WHERE org_id = ? AND survey_id = ?) ORDER BY u.name
            """, [.text(orgId), .text(surveyId)]).map(UserRecord.init)
    }

    public func orgs() throws -> [OrgRecord] {
        try conn.query("SELECT \(OrgRecord.columns) FROM orgs ORDER BY name").map(OrgRecord.init)
    }
}
