import SurveyDomain
import SurveyStorage

/// A collector's submission, as any door received it.
public struct SubmitResponse: Sendable {
    public let orgId: String
    /// Authenticated in the same read snapshot as the replay lookup (one reader checkout).
    public let bearerToken: String?
    /// An `Idempotency-Key` the client also sent: checked for format only, since
    /// `clientSubmissionId` is this write's key.
    public let idempotencyKey: String?
    /// The submission document exactly as sent: a retry of the same bytes is recognised by them.
    public let document: [UInt8]

    public init(orgId: String, bearerToken: String?, idempotencyKey: String?, document: [UInt8]) {
        self.orgId = orgId; self.bearerToken = bearerToken; self.idempotencyKey = idempotencyKey; self.document = document
    }
}

public enum SubmissionOutcome: Sendable {
    case accepted(ResponseRecord)
    /// The response already stored under this `clientSubmissionId`, for this very submission.
    case replayed(ResponseRecord)
}

/// Responses, keyed by `clientSubmissionId`: accepted exactly once however often retried.
public struct Submissions: Sendable {
    let operations: Operations

    /// What the snapshot read of a submission found.
    private enum Seen {
        /// A retry of the very bytes of a stored submission: answered without parsing the body.
        case sameBytes(ResponseRecord)
        case parsed(UserRecord, JSONBody, TaskRecord?, ResponseRecord?, OrgRecord?)
    }

    /// The outcome of looking for a same-bytes replay.
    private enum SameBytes {
        case replay(ResponseRecord)
        /// The id the scan found and what is stored under it, for the full path to reuse.
        case lookedUp(String, ResponseRecord?)
        case notFound
    }

    /// Runs the contract's order of checks for a submission. A replay found in the read
    /// snapshot is returned at once; otherwise the write is queued, this thread is free to serve
    /// others, and `whenWritten` is called after the writer's COMMIT (with `.accepted`, a
    /// `.replayed` of a submission committed meanwhile, or the refusal) and nil is returned.
    /// A refusal before the queue is thrown; it leaves nothing behind.
    public func submit(_ c: SubmitResponse,
                       whenWritten: @escaping @Sendable (Result<SubmissionOutcome, any Error>) -> Void) throws -> SubmissionOutcome? {
        let ops = operations, orgId = c.orgId
        // Steps 1–3 read one snapshot: who is calling, the task they cite, and what is already
        // stored under this clientSubmissionId (one reader checkout, one BEGIN, one cache refill).
        let seen = try ops.database.read { db -> Seen in
            let user = try ops.member(try ops.authenticate(bearerToken: c.bearerToken, in: db), of: orgId, withAnyOf: [.collector])
            if let raw = c.idempotencyKey { _ = try IdempotencyKey<Done>.normalized(raw) }
            let sameBytes = try Self.sameBytesReplay(c.document, orgId: orgId, submitter: user.userId, in: db)
            if case .replay(let stored) = sameBytes { return .sameBytes(stored) }
            let body = try JSONBody(c.document)
            let clientSubmissionId = try body.string("clientSubmissionId")
            guard ClientIdentifier.isValid(clientSubmissionId) else {
                throw ApiError(.invalidIdentifier, "clientSubmissionId must be 8–128 characters of A-Z a-z 0-9 _ - : .")
            }
            // 2. a cited field task must be the caller's own; any other is the 404 of nothing.
            let task: TaskRecord? = try body.optionalString("fieldTaskId").map { id in
                guard let t = try db.task(orgId: orgId, taskId: id), t.assigneeUserId == user.userId else { throw ApiError.notFound() }
                return t
            }
            let stored: ResponseRecord?
            if case .lookedUp(clientSubmissionId, let found) = sameBytes { stored = found } else {
                stored = try db.response(orgId: orgId, clientSubmissionId: clientSubmissionId)
            }
            // The organization too: the gate's expiry pre-check below then needs no read of its own.
            return .parsed(user, body, task, stored, try db.org(orgId))
        }
        let user: UserRecord, body: JSONBody, task: TaskRecord?, stored: ResponseRecord?, organization: OrgRecord?
        switch seen {
        case .sameBytes(let replayed): return replayedOutcome(replayed)
        case .parsed(let u, let b, let t, let s, let o): (user, body, task, stored, organization) = (u, b, t, s, o)
        }
        let clientSubmissionId = try body.string("clientSubmissionId")
        let surveyVersionId = try body.string("surveyVersionId")
        let contentHash = try body.string("contentHash")
        guard let answers = body.fields["answers"] else { throw ApiError.malformed("`answers` is required.") }
        let fieldTaskId = try body.optionalString("fieldTaskId")
        let bodySHA256 = Digest.sha256(c.document)
        // The canonical digest costs a re-encoding and a hash: a replay sent with the same bytes
        // never needs it, so it is computed only when the bytes differ or the request is new.
        let bodyValue = body.value

        // 3. replay — answered even while the subscription has expired.
        if let stored {
            return replayedOutcome(try counted {
                try Self.replay(of: stored, submitter: user.userId, bodySHA256: bodySHA256, digest: { Self.digest(bodyValue) })
            })
        }

        // 4. validate, reported as itself and never as 1001.
        guard let published = try ops.definitions.published(orgId: orgId, surveyVersionId: surveyVersionId, database: ops.database) else {
            throw ApiError.notFound()
        }
        let version = published.version, survey = published.survey
        guard contentHash == version.contentHash else {
            throw ApiError(.surveyVersionMismatch, "contentHash does not match survey version \(surveyVersionId).")
        }
        let capturedAt: Int64?
        do { capturedAt = try body.optionalTimestamp("capturedAt") } catch { ops.metrics.add(.validationRefusals); throw error }
        let check = published.definition.validate(answers: answers)
        guard check.errors.isEmpty else {
            ops.metrics.add(.validationRefusals)
            throw ApiError(.validationFailed, "The answers break the survey version's rules.", errors: check.errors)
        }
        try ops.uploads.checkAttachments(check.fileAnswers, orgId: orgId, surveyVersionId: version.surveyVersionId)
        if let task {
            guard task.surveyId == survey.surveyId else {
                throw ApiError(.validationFailed, "The field task is for another survey.",
                               errors: [FieldError(path: "fieldTaskId", message: "task is for survey \(task.surveyId)")])
            }
            guard task.state == .open else { throw ApiError(.taskAlreadyCompleted, "The field task \(task.taskId) is already completed.") }
        }
        // A survey without review is complete on acceptance, and so is its task.
        let completesTask = fieldTaskId != nil && !survey.reviewRequired

        // 5–6. the gate: replay re-checked, subscription, insert + audit, one transaction.
        // The stored answers and the body's digest share one canonical encoding of the answers.
        let canonicalAnswers = CanonicalJSON.encode(answers)
        let digest = "sha256:" + Digest.sha256Hex(CanonicalJSON.encode(body.fields, adding: "answers", encoded: canonicalAnswers))
        let responseId = Ids.make("rsp", nowMillis: ops.clock.nowMillis())
        let answersText = String(decoding: canonicalAnswers, as: UTF8.self)
        let reviewState: ReviewState = survey.reviewRequired ? .submitted : .none
        let submitter = user.userId, surveyId = survey.surveyId, versionId = version.surveyVersionId
        let metrics = ops.metrics
        // The insert's UNIQUE (org_id, client_submission_id) finds a duplicate committed since the
        // snapshot above; only then is the stored one read (`.onConflict`).
        ops.gate.writeAsync(orgId: orgId, actor: submitter, organization: organization, replay: { db in
            try db.response(orgId: orgId, clientSubmissionId: clientSubmissionId).map {
                try Self.replay(of: $0, submitter: submitter, bodySHA256: bodySHA256, digest: { digest })
            }
        }, replayCheck: .onConflict, { tx in
            let stored = ResponseRecord(
                responseId: responseId, orgId: orgId, clientSubmissionId: clientSubmissionId, submitter: submitter,
                surveyId: surveyId, surveyVersionId: versionId, requestDigest: digest, requestSHA256: bodySHA256,
                answers: answersText, fieldTaskId: fieldTaskId, capturedAt: capturedAt, receivedAt: tx.now,
                reviewState: reviewState, revision: 1)
            try tx.insertResponse(stored)
            if completesTask, let taskId = fieldTaskId {
                try tx.completeTask(taskId: taskId, responseId: stored.responseId, completedBy: submitter)
            }
            return stored
        }, then: { result in
            switch result {
            case .success(.replayed(let stored)):
                metrics.add(.responsesReplayed)
                whenWritten(.success(.replayed(stored)))
            case .success(.written(let stored)):
                metrics.add(.responsesAccepted)
                if let c = stored.capturedAt { metrics.syncAge(seconds: Double(stored.receivedAt - c) / 1000) }
                whenWritten(.success(.accepted(stored)))
            case .failure(let e):
                if let e = e as? ApiError, e.code == .idempotencyConflict { metrics.add(.idempotencyConflicts) }
                whenWritten(.failure(e))
            }
        })
        return nil
    }

    private func replayedOutcome(_ stored: ResponseRecord) -> SubmissionOutcome {
        operations.metrics.add(.responsesReplayed)
        return .replayed(stored)
    }

    /// Counts a 1004 on its way out.
    private func counted<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as ApiError where e.code == .idempotencyConflict {
            operations.metrics.add(.idempotencyConflicts)
            throw e
        }
    }

    /// The canonical digest of a submission document: equal for re-encodings of the same content.
    static func digest(_ body: JSONValue) -> String { "sha256:" + Digest.sha256Hex(CanonicalJSON.encode(body)) }

    /// Step 3, the replay: the same submitter and the same request → the stored response;
    /// anything else under that id → 1004, revealing nothing of what is stored.
    static func replay(of stored: ResponseRecord, submitter: String, bodySHA256: [UInt8], digest: () -> String) throws -> ResponseRecord {
        guard stored.submitter == submitter, stored.requestSHA256 == bodySHA256 || stored.requestDigest == digest() else {
            throw ApiError(.idempotencyConflict, "This clientSubmissionId was already used for a different submission.")
        }
        return stored
    }

    /// Most replays are a phone resending the bytes it sent before. Those are recognised before
    /// the body is parsed (a parse was ~10 % of a replay's CPU): the id is found by a scan, and
    /// the stored row's SHA-256 of its request decides. A match means these bytes are the body
    /// that was validated and accepted under this very id, so a parse could only agree. A row
    /// citing a field task is left to the full path, which checks the task before the replay.
    private static func sameBytesReplay(_ body: [UInt8], orgId: String, submitter: String, in db: ReadContext) throws -> SameBytes {
        guard let id = ClientIdentifier.scan(body, key: "clientSubmissionId") else { return .notFound }
        let stored = try db.response(orgId: orgId, clientSubmissionId: id)
        if let stored, stored.submitter == submitter, stored.fieldTaskId == nil,
           !stored.requestSHA256.isEmpty, stored.requestSHA256 == Digest.sha256(body) {
            return .replay(stored)
        }
        return .lookedUp(id, stored)
    }
}
