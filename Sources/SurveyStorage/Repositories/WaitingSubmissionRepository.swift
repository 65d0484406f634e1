import SurveyDomain

/// A submission's XML that arrived before its files (ODK Central's order: the XML, then each
/// file POSTed to the submission). It waits here, the organization's and its submitter's, until
/// its last file is an upload; then the submission that stores it as a response removes it in
/// the same transaction.
public struct WaitingSubmissionRecord: Sendable, Equatable {
    public let orgId: String
    public let clientSubmissionId: String
    public let surveyId: String
    public let submitter: String
    public let instance: [UInt8]
    /// Hex SHA-256 of `instance`: the same XML sent again is the same waiting submission.
    public let instanceSHA256: String
    public let receivedAt: Int64

    public init(orgId: String, clientSubmissionId: String, surveyId: String, submitter: String, instance: [UInt8],
                instanceSHA256: String, receivedAt: Int64) {
        self.orgId = orgId; self.clientSubmissionId = clientSubmissionId; self.surveyId = surveyId; self.submitter = submitter
        self.instance = instance; self.instanceSHA256 = instanceSHA256; self.receivedAt = receivedAt
    }
}

extension ReadContext {
    public func waitingSubmission(orgId: String, clientSubmissionId: String) throws -> WaitingSubmissionRecord? {
        try conn.query("""
            SELECT org_id, client_submission_id, survey_id, submitter, instance, instance_sha256, received_at
            FROM waiting_submissions WHERE org_id = ? AND client_submission_id = ?
            """, [.text(orgId), .text(clientSubmissionId)]).first.map { row in
            WaitingSubmissionRecord(orgId: try row["org_id"], clientSubmissionId: try row["client_submission_id"], surveyId: try row["survey_id"],
                                    submitter: try row["submitter"], instance: try row.blob("instance"),
                                    instanceSHA256: try row["instance_sha256"], receivedAt: try row["received_at"])
        }
    }
}

extension GatedTransaction {
    /// Keeps a submission's XML until its files arrive, audited like an upload is.
    public func holdSubmission(_ w: WaitingSubmissionRecord) throws {
        try context.conn.run("""
            INSERT INTO waiting_submissions(org_id, client_submission_id, survey_id, submitter, instance, instance_sha256, received_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.text(orgId), .text(w.clientSubmissionId), .text(w.surveyId), .text(w.submitter), .blob(w.instance),
                  .text(w.instanceSHA256), .int(now)])
        try audit(action: "submission.wait", targetType: "waiting_submission", targetId: w.clientSubmissionId,
                  detail: CanonicalJSON.string(["surveyId": .string(w.surveyId), "sha256": .string(w.instanceSHA256)]))
    }

    /// The waiting XML, now stored as a response in this transaction, no longer waits.
    public func releaseWaitingSubmission(clientSubmissionId: String) throws {
        try context.conn.run("DELETE FROM waiting_submissions WHERE org_id = ? AND client_submission_id = ?",
                             [.text(orgId), .text(clientSubmissionId)])
    }
}
