import SurveyDomain

extension ReadContext {
    /// A response's versions, oldest first: the rows its edits wrote, or — never edited — its one
    /// version, the response as submitted.
    public func responseVersions(of r: ResponseRecord) throws -> [ResponseVersionRecord] {
        let rows = try conn.query("""
            SELECT \(ResponseVersionRecord.columns) FROM response_versions WHERE response_id = ? AND org_id = ? ORDER BY number
            """, [.text(r.responseId), .text(r.orgId)]).map(ResponseVersionRecord.init)
        return rows.isEmpty ? [Self.asSubmitted(r)] : rows
    }

    /// Version 1 of a response never edited: its answers as they stand.
    static func asSubmitted(_ r: ResponseRecord) -> ResponseVersionRecord {
        ResponseVersionRecord(number: 1, answers: r.answers, createdAt: r.receivedAt, createdBy: r.submitter, source: "submission",
                              instanceId: nil)
    }
}

extension GatedTransaction {
    /// An edit of a response's answers: the state moves to `to` (the review machine's `edit`),
    /// the revision by one — only if it is still `expectedRevision` (1021 otherwise, carrying the
    /// current state) — the new version is kept beside the earlier ones (the first edit writes
    /// version 1, the answers as submitted, too), and one audit entry (`response.edit`) records
    /// it, all in this transaction.
    public func editResponse(responseId: String, expectedRevision: Int64, to: ReviewState, answers: String, facts: [UInt8], source: String,
                             instanceId: String? = nil, comment: String?) throws -> (response: ResponseRecord, version: Int64) {
        guard let current = try read.response(orgId: orgId, responseId: responseId), current.revision == expectedRevision else {
            let current = try read.response(orgId: orgId, responseId: responseId)
            throw ApiError(.staleRevision, "The response is at revision \(current?.revision ?? 0), not \(expectedRevision).",
                           extra: ["reviewState": .string(current?.reviewState.rawValue ?? ""), "revision": .number(Double(current?.revision ?? 0))])
        }
        try context.keepForWebhooks(responseId: responseId)
        var last = try read.lastStoredVersion(responseId: responseId)
        if last == 0 {
            try insertVersion(responseId: responseId, ReadContext.asSubmitted(current))
            last = 1
        }
        let number = last + 1
        try insertVersion(responseId: responseId, ResponseVersionRecord(number: number, answers: answers, createdAt: now, createdBy: context.actor,
                                                                        source: source, instanceId: instanceId))
        try context.conn.run("""
            UPDATE responses SET review_state = ?, revision = revision + 1, answers = ?, edits = edits + 1,
                first_review_state = COALESCE(first_review_state, CASE WHEN review_state = 'none' THEN 'none' ELSE 'submitted' END)
            WHERE response_id = ? AND org_id = ? AND revision = ?
            """, [.text(to.rawValue), .text(answers), .text(responseId), .text(orgId), .int(expectedRevision)])
        guard context.conn.changes == 1, let updated = try read.response(orgId: orgId, responseId: responseId) else {
            throw ApiError(.staleRevision, "The response changed meanwhile; nothing was written.")
        }
        try updateFacts(of: responseId, reviewState: to, answers: (current.surveyVersionId, facts))
        var detail: [String: JSONValue] = ["fromState": .string(current.reviewState.rawValue), "toState": .string(to.rawValue),
                                           "version": .number(Double(number)), "source": .string(source)]
        if let comment { detail["comment"] = .string(comment) }
        try audit(action: "response.edit", targetType: "response", targetId: responseId, revision: updated.revision,
                  detail: CanonicalJSON.string(.object(detail)))
        return (updated, number)
    }

    private func insertVersion(responseId: String, _ v: ResponseVersionRecord) throws {
        try context.conn.run("""
            INSERT INTO response_versions(response_id, org_id, number, answers, created_at, created_by, source, instance_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(responseId), .text(orgId), .int(v.number), .text(v.answers), .int(v.createdAt), .text(v.createdBy),
                  .text(v.source), .optional(v.instanceId)])
    }
}

extension ReadContext {
    /// The number of the last version an edit stored (0: never edited).
    func lastStoredVersion(responseId: String) throws -> Int64 {
        try conn.query("SELECT COALESCE(MAX(number), 0) AS n FROM response_versions WHERE response_id = ?", [.text(responseId)]).first?.int("n") ?? 0
    }
}

extension ReadContext {
    /// The response an instanceID names: its `clientSubmissionId`, or the instanceID an OpenRosa
    /// edit of it carried.
    public func response(orgId: String, instanceId: String) throws -> ResponseRecord? {
        if let r = try response(orgId: orgId, clientSubmissionId: instanceId) { return r }
        guard let id = try conn.query("SELECT response_id FROM response_versions WHERE org_id = ? AND instance_id = ? LIMIT 1",
                                      [.text(orgId), .text(instanceId)]).first?.string("response_id") else { return nil }
        return try response(orgId: orgId, responseId: id)
    }

    /// The version an OpenRosa edit with this instanceID made, if one did.
    public func responseVersion(orgId: String, instanceId: String) throws -> (responseId: String, version: ResponseVersionRecord)? {
        try conn.query("SELECT response_id, \(ResponseVersionRecord.columns) FROM response_versions WHERE org_id = ? AND instance_id = ? LIMIT 1",
                       [.text(orgId), .text(instanceId)]).first.map { (try $0.string("response_id"), try ResponseVersionRecord(row: $0)) }
    }

    /// A response's current instanceID: the one its last OpenRosa edit carried, else its
    /// `clientSubmissionId` (an edit from the API or the console carries none).
    public func currentInstanceId(of r: ResponseRecord) throws -> String {
        try conn.query("""
            SELECT instance_id FROM response_versions WHERE response_id = ? AND instance_id IS NOT NULL ORDER BY number DESC LIMIT 1
            """, [.text(r.responseId)]).first?.optionalString("instance_id") ?? r.clientSubmissionId
    }
}
