import SurveyDomain

extension ReadContext {
    public func response(orgId: String, responseId: String) throws -> ResponseRecord? {
        try conn.query("SELECT \(ResponseRecord.columns) FROM responses WHERE response_id = ? AND org_id = ?",
                       [.text(responseId), .text(orgId)]).first.map(ResponseRecord.init)
    }

    /// The response stored under a client submission id — or under the instanceID an OpenRosa
    /// edit of it carried, which is that response's id from then on: a submission sent under it
    /// is that response's (its replay, or 1004), never a second response.
    public func response(orgId: String, clientSubmissionId: String) throws -> ResponseRecord? {
        try conn.query(Self.responseByClientId, Self.byClientIdArgs(orgId, clientSubmissionId)).first.map(ResponseRecord.init)
    }

    /// `response(orgId:clientSubmissionId:)` will be read later in this read: on PostgreSQL it
    /// goes with the read's next statement, in the same round trip (`SQLConnection.prefetch`).
    public func prefetchResponse(orgId: String, clientSubmissionId: String) {
        conn.prefetch(Self.responseByClientId, Self.byClientIdArgs(orgId, clientSubmissionId))
    }

    private static let responseByClientId = """
        SELECT \(ResponseRecord.columns) FROM responses WHERE org_id = ? AND client_submission_id = ?
        UNION ALL
        SELECT \(ResponseRecord.columns) FROM responses WHERE org_id = ? AND response_id =
            (SELECT v.response_id FROM response_versions v WHERE v.org_id = ? AND v.instance_id = ? LIMIT 1)
        LIMIT 1
        """

    private static func byClientIdArgs(_ orgId: String, _ id: String) -> [SQLValue] {
        [.text(orgId), .text(id), .text(orgId), .text(orgId), .text(id)]
    }

    /// A page in response-id order (ids are time-ordered), optionally one submitter's, one state's.
    public func responses(orgId: String, submitter: String?, reviewState: ReviewState?, after: String?, limit: Int,
                          surveyId: String? = nil) throws -> [ResponseRecord] {
        var sql = "SELECT \(ResponseRecord.columns) FROM responses WHERE org_id = ? AND response_id > ?"
        var args: [SQLValue] = [.text(orgId), .text(after ?? "")]
        if let surveyId { sql += " AND survey_id = ?"; args.append(.text(surveyId)) }
        if let submitter { sql += " AND submitter = ?"; args.append(.text(submitter)) }
        if let reviewState { sql += " AND review_state = ?"; args.append(.text(reviewState.rawValue)) }
        sql += " ORDER BY response_id LIMIT ?"
        args.append(.int(Int64(limit)))
        return try conn.query(sql, args).map(ResponseRecord.init)
    }

    public func auditTrail(orgId: String, targetType: String, targetId: String) throws -> [AuditRecord] {
        try conn.query("""
            SELECT \(AuditRecord.columns) FROM audit WHERE org_id = ? AND target_type = ? AND target_id = ? ORDER BY seq
            """, [.text(orgId), .text(targetType), .text(targetId)]).map(AuditRecord.init)
    }
}

extension GatedTransaction {
    /// The INSERT is sent with the transaction's next awaited statement (the gate awaits it before
    /// the commit): a taken client id is thrown there.
    /// `facts`: its `SummaryFacts`, stored beside it.
    public func insertResponse(_ r: ResponseRecord, facts: [UInt8]) throws {
        try context.conn.enqueue("""
            INSERT INTO responses(response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id,
                request_digest, request_body, request_sha256, answers, field_task_id, captured_at, received_at, review_state, revision)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(r.responseId), .text(orgId), .text(r.clientSubmissionId), .text(r.submitter), .text(r.surveyId),
                  .text(r.surveyVersionId), .text(r.requestDigest), .blob([]), .blob(r.requestSHA256), .text(r.answers),
                  .optional(r.fieldTaskId), .optional(r.capturedAt), .int(r.receivedAt), .text(r.reviewState.rawValue), .int(r.revision)])
        try insertFacts(of: r, facts)
        try audit(action: "response.accept", targetType: "response", targetId: r.responseId, revision: r.revision,
                  detail: CanonicalJSON.string(["toState": .string(r.reviewState.rawValue), "clientSubmissionId": .string(r.clientSubmissionId)]))
    }
}

extension GatedTransaction {
    /// One review step: the state and revision move only if the revision is still `expected`
    /// (1021 otherwise, carrying the current state). Audited with the transition.
    public func applyReview(responseId: String, expectedRevision: Int64, from: ReviewState, to: ReviewState, action: String,
                            comment: String?, answers: (surveyVersionId: String, text: String, facts: [UInt8])? = nil) throws -> ResponseRecord {
        try context.keepForWebhooks(responseId: responseId)
        if let answers {
            try context.conn.run("""
                UPDATE responses SET review_state = ?, revision = revision + 1, survey_version_id = ?, answers = ?,
                    accepted_survey_version_id = COALESCE(accepted_survey_version_id, survey_version_id)
                WHERE response_id = ? AND org_id = ? AND revision = ? AND review_state = ?
                """, [.text(to.rawValue), .text(answers.surveyVersionId), .text(answers.text), .text(responseId), .text(orgId), .int(expectedRevision),
                      .text(from.rawValue)])
        } else {
            try context.conn.run("""
                UPDATE responses SET review_state = ?, revision = revision + 1
                WHERE response_id = ? AND org_id = ? AND revision = ? AND review_state = ?
                """, [.text(to.rawValue), .text(responseId), .text(orgId), .int(expectedRevision), .text(from.rawValue)])
        }
        guard context.conn.changes == 1, let updated = try read.response(orgId: orgId, responseId: responseId) else {
            let current = try read.response(orgId: orgId, responseId: responseId)
            throw ApiError(.staleRevision, "The response is at revision \(current?.revision ?? 0), not \(expectedRevision).",
                           extra: ["reviewState": .string(current?.reviewState.rawValue ?? ""), "revision": .number(Double(current?.revision ?? 0))])
        }
        try updateFacts(of: responseId, reviewState: to, answers: answers.map { ($0.surveyVersionId, $0.facts) })
        var detail: [String: JSONValue] = ["fromState": .string(from.rawValue), "toState": .string(to.rawValue)]
        if let comment { detail["comment"] = .string(comment) }
        try audit(action: action, targetType: "response", targetId: responseId, revision: updated.revision,
                  detail: CanonicalJSON.string(.object(detail)))
        return updated
    }
}

extension ReadContext {
    /// The changes feed: audit entries about responses (and tasks) the caller may follow, after a
    /// cursor, in server order. `userId` nil means the whole organization (reviewers, admins).
    public func changes(orgId: String, userId: String?, after: Int64, limit: Int) throws -> [ChangeRecord] {
        var sql = "SELECT \(ChangeRecord.columns) FROM audit a WHERE a.org_id = ? AND a.seq > ?"
        var args: [SQLValue] = [.text(orgId), .int(after)]
        if let userId {
            sql += """
                 AND ((a.target_type = 'response' AND a.target_id IN (SELECT response_id FROM responses WHERE org_id = ? AND submitter = ?))
                   OR (a.target_type = 'task' AND a.target_id IN (SELECT task_id FROM tasks WHERE org_id = ? AND assignee_user_id = ?)))
                """
            args += [.text(orgId), .text(userId), .text(orgId), .text(userId)]
        } else {
            sql += " AND a.target_type IN ('response', 'task')"
        }
        if let auditHorizon {
            sql += " AND a.seq <= ?"
            args.append(.int(auditHorizon))
        }
        sql += " ORDER BY a.seq LIMIT ?"
        args.append(.int(Int64(limit)))
        return try conn.query(sql, args).map(ChangeRecord.init)
    }
}
