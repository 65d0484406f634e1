import SurveyDomain
import SurveyStorage

public enum SubmissionOutcome: Sendable {
    case accepted(ResponseRecord)
    /// The response already stored under this `clientSubmissionId`, for this very submission.
    case replayed(ResponseRecord)
    /// Nothing was written (the contract's refusal, as an `ApiError`, or the store's failure).
    case refused(any Error)
}

/// Responses, keyed by `clientSubmissionId`: accepted exactly once however often retried, from
/// whichever door (`SubmissionDoor`) they arrive.
public struct Submissions: Sendable {
    let operations: Operations
    /// Who may submit, checked in the submission's own snapshot; doors declare their routes with it.
    public static let access = Access.member(anyOf: [.collector])

    /// Runs the contract's order of checks for a submission and calls `then` once with its
    /// outcome, after the write's COMMIT or once a replay or a refusal is decided (the thread is
    /// free to serve others meanwhile). A refusal leaves nothing behind. The reads and checks run
    /// in the gate's `prepare`: on SQLite in a reader's snapshot before the write is queued, on
    /// PostgreSQL inside the write's own transaction.
    /// `store`: the organization's responses, or a draft's test submissions (`SubmissionStore`).
    public func submit(orgId: String, from door: some SubmissionDoor, store: SubmissionStore = .live,
                       then: @escaping @Sendable (SubmissionOutcome) -> Void) {
        let metrics = operations.metrics
        // On PostgreSQL the reads that need nothing read before them (the caller's token, what
        // is stored under the body's id, the organization) go with the transaction's BEGIN.
        operations.gate.writeAsync(orgId: orgId, opening: { db in
            door.prefetch(in: db, orgId: orgId)
            db.prefetchOrg(orgId)
        }, prepare: { db in
            try prepare(orgId: orgId, from: door, store: store, in: db)
        }, then: { result in
            switch result {
            case .success(.replayed(let stored)):
                metrics.add(.responsesReplayed)
                then(.replayed(stored))
            case .success(.written(let stored)):
                metrics.add(.responsesAccepted)
                if let c = stored.capturedAt { metrics.syncAge(seconds: Double(stored.receivedAt - c) / 1000) }
                then(.accepted(stored))
            case .failure(let e):
                if let e = e as? ApiError, e.code == .idempotencyConflict { metrics.add(.idempotencyConflicts) }
                then(.refused(e))
            }
        })
    }

    /// Steps 1–4 on one read (who is calling, the task they cite, what is already stored under
    /// this clientSubmissionId, the survey version and the answers' checks), then the write the
    /// gate runs as steps 5–6.
    private func prepare(orgId: String, from door: some SubmissionDoor, store: SubmissionStore,
                         in db: ReadContext) throws -> WriteGate.Prepared<ResponseRecord> {
        let ops = operations
        let user = try ops.admit(try door.caller(in: db, operations: ops), to: Self.access, orgId: orgId, in: db).member()
        let (submission, lookup): (Submission, SubmissionArrival.StoredLookup)
        switch try door.arrival(in: db, orgId: orgId, submitter: user, operations: ops) {
        case .replay(let stored): return .answered(stored)
        case .submission(let s, let l): (submission, lookup) = (s, l)
        }
        // 2. a cited field task must be the caller's own; any other is the 404 of nothing.
        let task: TaskRecord? = try submission.fieldTaskId.map { id in
            guard let t = try db.task(orgId: orgId, taskId: id), t.assigneeUserId == user.userId else { throw ApiError.notFound() }
            return t
        }
        let stored: ResponseRecord?
        if case .draft = store {
            stored = try db.draftResponse(orgId: orgId, surveyVersionId: submission.surveyVersionId, clientSubmissionId: submission.clientSubmissionId)
        } else if case .lookedUp(submission.clientSubmissionId, let found) = lookup { stored = found } else {
            stored = try db.response(orgId: orgId, clientSubmissionId: submission.clientSubmissionId)
        }
        let clientSubmissionId = submission.clientSubmissionId, fieldTaskId = submission.fieldTaskId
        let bodySHA256 = submission.bytesSHA256

        // 3. replay — answered even while the subscription has expired. The canonical digest
        // costs a re-encoding and a hash: a replay of the same bytes never needs it.
        if let stored {
            return .answered(try Self.replay(of: stored, submitter: user.userId, bodySHA256: bodySHA256,
                                             digest: { submission.digest(canonicalAnswers: CanonicalJSON.encode(submission.answers)) }))
        }

        // 4. validate, reported as itself and never as 1001.
        guard let published = try Self.version(submission.surveyVersionId, orgId: orgId, store: store, in: db, operations: ops) else {
            throw ApiError.notFound()
        }
        let version = published.version, survey = published.survey, live = store == .live
        guard submission.contentHash == version.contentHash else {
            throw ApiError(.surveyVersionMismatch, "contentHash does not match survey version \(submission.surveyVersionId).")
        }
        // A closing survey still takes what phones hold; a closed one takes nothing new. Read
        // now, not from the cached version: another process may have closed it.
        let closed = live ? try db.surveyState(orgId: orgId, surveyId: survey.surveyId) == .closed : false
        guard !closed else {
            throw ApiError(.surveyClosed, "The survey \(survey.title) is closed: it takes no new responses. Keep this response and ask your admin.")
        }
        let capturedAt: Int64?
        do { capturedAt = try submission.capturedAtMillis() } catch { ops.metrics.add(.validationRefusals); throw error }
        let answers = submission.answers
        let check = published.definition.validate(answers: answers)
        guard check.errors.isEmpty && submission.doorProblems.isEmpty else {
            ops.metrics.add(.validationRefusals)
            throw ApiError(.validationFailed, "The answers break the survey version's rules.", errors: check.errors + submission.doorProblems)
        }
        let entityChanges: [EntityChange]
        do {
            entityChanges = try SubmissionEntities.changes(entity: submission.entity, entities: submission.entities,
                                                           definition: published.definition, answers: answers)
        } catch {
            ops.metrics.add(.validationRefusals); throw error
        }
        try ops.uploads.checkAttachments(check.fileAnswers, orgId: orgId, surveyVersionId: version.surveyVersionId, submitter: user.userId,
                                        staged: submission.stagedUploads, fileNames: submission.fileNames, in: db)
        if let task {
            guard task.surveyId == survey.surveyId else {
                throw ApiError(.validationFailed, "The field task is for another survey.",
                               errors: [FieldError(path: "fieldTaskId", message: "task is for survey \(task.surveyId)")])
            }
            guard task.state == .open else { throw ApiError(.taskAlreadyCompleted, "The field task \(task.taskId) is already completed.") }
        }
        // A survey without review is complete on acceptance, and so is its task.
        let completesTask = live && fieldTaskId != nil && !survey.reviewRequired
        // A follow-up citing no task that updates an entity: the caller's open task of this survey
        // naming that entity is linked as if cited (Docs/entities.md), looked up in the write,
        // where the task read is the one completed.
        let followsUp: [(list: String, entityId: String)] = live && fieldTaskId == nil
            ? entityChanges.filter(\.update).map { (list: $0.list, entityId: $0.entityId) } : []
        let reviewRequired = survey.reviewRequired

        // 5–6. the gate: replay re-checked, subscription, insert + audit, one transaction.
        // The stored answers and the body's digest share one canonical encoding of the answers.
        let canonicalAnswers = CanonicalJSON.encode(answers)
        let digest = submission.digest(canonicalAnswers: canonicalAnswers)
        let responseId = Ids.make("rsp", nowMillis: ops.clock.nowMillis())
        let answersText = String(decoding: canonicalAnswers, as: UTF8.self)
        let reviewState: ReviewState = live && survey.reviewRequired ? .submitted : .none
        let facts = SummaryFacts(plan: published.facts, answers: answers,
                                 hidden: published.facts.hidden(published.definition, answers: answers, check: check)).bytes
        let submitter = user.userId, surveyId = survey.surveyId, versionId = version.surveyVersionId
        let staged = submission.stagedUploads, blobs = ops.blobs, releasesWaiting = submission.releasesWaiting
        // The insert's UNIQUE (org_id, client_submission_id) finds a duplicate committed since the
        // read above; only then is the stored one read (`.onConflict`). The organization as read
        // above spares SQLite's expiry pre-check a read of its own.
        return .write(WriteGate.PreparedWrite(actor: submitter, organization: try db.org(orgId), replay: { db in
            try (live ? db.response(orgId: orgId, clientSubmissionId: clientSubmissionId)
                      : db.draftResponse(orgId: orgId, surveyVersionId: versionId, clientSubmissionId: clientSubmissionId)).map {
                try Self.replay(of: $0, submitter: submitter, bodySHA256: bodySHA256, digest: { digest })
            }
        }, replayCheck: .onConflict) { tx in
            // The first of its updates that an open task of the caller's names.
            var followed: TaskRecord?
            for f in followsUp where followed == nil {
                followed = try tx.openEntityTask(surveyId: surveyId, assignee: submitter, list: f.list, entityId: f.entityId)
            }
            let stored = ResponseRecord(
                responseId: responseId, orgId: orgId, clientSubmissionId: clientSubmissionId, submitter: submitter,
                surveyId: surveyId, surveyVersionId: versionId, requestDigest: digest, requestSHA256: bodySHA256,
                answers: answersText, fieldTaskId: fieldTaskId ?? followed?.taskId, capturedAt: capturedAt, receivedAt: tx.now,
                reviewState: reviewState, revision: 1)
            // A draft's test submission and its files are stored apart, and nothing else is written.
            guard live else {
                try tx.insertDraftResponse(stored, files: staged.map { ($0.record, $0.tempPath) }, blobs: blobs)
                return stored
            }
            // The files sent with it are stored with it, or not at all.
            for file in staged { try tx.commitUpload(file.record, tempPath: file.tempPath, blobs: blobs) }
            try tx.insertResponse(stored, facts: facts)
            if releasesWaiting { try tx.releaseWaitingSubmission(clientSubmissionId: clientSubmissionId) }
            // The entities it creates or updates, in its transaction and in order: a refused submission changes none.
            for change in entityChanges { try change.apply(in: tx, responseId: stored.responseId, actor: submitter) }
            if completesTask, let taskId = fieldTaskId {
                try tx.completeTask(taskId: taskId, responseId: stored.responseId, completedBy: submitter)
            }
            // The same rule for a task the follow-up completes: now, or on the response's approval.
            if let followed, !reviewRequired {
                try tx.completeTask(taskId: followed.taskId, responseId: stored.responseId, completedBy: submitter)
            }
            return stored
        })
    }

    /// The version a submission cites, where `store` takes submissions: any published version of
    /// the organization, or the survey's draft alone.
    static func version(_ surveyVersionId: String, orgId: String, store: SubmissionStore, in db: ReadContext,
                        operations: Operations) throws -> DefinitionCache.Published? {
        guard case .draft(let surveyId) = store else {
            return try operations.definitions.published(orgId: orgId, surveyVersionId: surveyVersionId, in: db)
        }
        guard let draft = try db.draftVersion(orgId: orgId, surveyId: surveyId), draft.surveyVersionId == surveyVersionId,
              let survey = try db.survey(orgId: orgId, surveyId: surveyId) else { return nil }
        return DefinitionCache.Published(version: draft, survey: survey, definition: try operations.definitions.definition(of: draft))
    }

    /// Step 3, the replay: the same submitter and the same request → the stored response;
    /// anything else under that id → 1004, revealing nothing of what is stored.
    static func replay(of stored: ResponseRecord, submitter: String, bodySHA256: [UInt8], digest: () -> String) throws -> ResponseRecord {
        let sameBytes = !bodySHA256.isEmpty && stored.requestSHA256 == bodySHA256
        guard stored.submitter == submitter, sameBytes || stored.requestDigest == digest() else {
            throw ApiError(.idempotencyConflict, "This clientSubmissionId was already used for a different submission.")
        }
        return stored
    }
}
