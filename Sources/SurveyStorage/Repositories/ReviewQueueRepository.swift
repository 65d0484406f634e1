import SurveyDomain

extension ReadContext {
    /// A page of a survey's responses matching `filter`, newest first, before `before` (a responseId).
    public func queueRows(_ filter: ExportFilter, before: String?, limit: Int) throws -> [ResponseRecord] {
        var c = filter.condition
        if let before { c.sql += " AND response_id < ?"; c.args.append(.text(before)) }
        return try conn.query("SELECT \(ResponseRecord.columns) FROM responses WHERE \(c.sql) ORDER BY response_id DESC LIMIT ?",
                              c.args + [.int(Int64(limit))]).map(ResponseRecord.init)
    }

    /// How many of the responses matching `filter` are in each review state (states with none
    /// left out), each counted as `count(_:in:upTo:)` counts.
    public func stateCounts(_ filter: ExportFilter, upTo cap: Int) throws -> [ReviewState: Int] {
        var counts: [ReviewState: Int] = [:]
        for state in ReviewState.allCases {
            let n = try count(filter, in: state, upTo: cap)
            if n > 0 { counts[state] = n }
        }
        return counts
    }

    /// How many of the responses matching `filter` are in `state`, counted no further than
    /// `cap` + 1: a result above `cap` means "more than `cap`". Counting reads one entry of
    /// responses_survey_state a response, so a count without a cap grows with the survey (a
    /// second at a million responses).
    public func count(_ filter: ExportFilter, in state: ReviewState, upTo cap: Int) throws -> Int {
        let c = filter.condition
        let sql = "SELECT COUNT(*) AS n FROM (SELECT 1 FROM responses WHERE \(c.sql) AND review_state = ? LIMIT ?) counted"
        return Int(try conn.query(sql, c.args + [.text(state.rawValue), .int(Int64(cap) + 1)]).first?.int("n") ?? 0)
    }

    /// The people who have submitted to the organization (for a queue's filter), each found by
    /// one step of responses_submitter (the next submitter after the one before): the work
    /// grows with the people, not with the responses, where a DISTINCT over a survey's million
    /// took a second. Not narrowed to one survey: that would take an index of its own on every
    /// submission, and a name with no response in the survey only filters to an empty page.
    public func submitters(orgId: String) throws -> [UserRecord] {
        try conn.query("""
            WITH RECURSIVE submitter_ids(id) AS (
              SELECT MIN(submitter) FROM responses WHERE org_id = ?
              UNION ALL
              SELECT (SELECT MIN(submitter) FROM responses WHERE org_id = ? AND submitter > s.id)
              FROM submitter_ids s WHERE s.id IS NOT NULL)
            SELECT \(UserRecord.columns) FROM users u WHERE u.user_id IN (SELECT id FROM submitter_ids) ORDER BY u.name
            """, [.text(orgId), .text(orgId)]).map(UserRecord.init)
    }

    public func orgs() throws -> [OrgRecord] {
        try conn.query("SELECT \(OrgRecord.columns) FROM orgs ORDER BY name").map(OrgRecord.init)
    }
}
