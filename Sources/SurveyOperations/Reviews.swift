import SurveyDomain
import SurveyStorage

/// A review step as a door decoded it; the operation checks everything about it.
public struct ReviewRequest: Sendable {
    /// startReview, returnForCorrection, approve or reject.
    public let action: String
    /// The revision the reviewer saw: a step on anything else is 1021, never an overwrite.
    public let expectedRevision: Int
    public let comment: String?
    public init(action: String, expectedRevision: Int, comment: String?) {
        self.action = action; self.expectedRevision = expectedRevision; self.comment = comment
    }
}

/// A returned response, corrected by its collector.
public struct Resubmission: Sendable {
    public let expectedRevision: Int
    public let surveyVersionId: String
    public let contentHash: String
    public let answers: JSONValue
    public init(expectedRevision: Int, surveyVersionId: String, contentHash: String, answers: JSONValue) {
        self.expectedRevision = expectedRevision; self.surveyVersionId = surveyVersionId; self.contentHash = contentHash; self.answers = answers
    }
}

/// A reviewer's or admin's edit of a response's answers (`PUT …/answers`).
public struct AnswersEdit: Sendable {
    /// The revision the editor saw: an edit of anything else is 1021, never an overwrite.
    public let expectedRevision: Int
    public let answers: JSONValue
    public let comment: String?
    public init(expectedRevision: Int, answers: JSONValue, comment: String?) {
        self.expectedRevision = expectedRevision; self.answers = answers; self.comment = comment
    }
}

/// The review workflow: submitted → in_review → returned → submitted → in_review → approved (or
/// rejected). Each accepted step raises the revision by one and appends one audit entry in one
/// transaction; approval completes the linked field task in that same transaction.
public struct Reviews: Sendable {
    let operations: Operations

    /// A reviewer's step. Order: the response must be visible to the caller (404), the caller a
    /// reviewer (1006), then the key's replay, then `request` is decoded (1031/1002), the
    /// revision (1021), the transition (1020), the task (1022), and the gate (1001).
    public func review(orgId: String, responseId: String, by user: UserRecord, key: IdempotencyKey<ResponseRecord>? = nil,
                       _ request: () throws -> ReviewRequest) throws -> KeyedOutcome<ResponseRecord> {
        let ops = operations
        _ = try ops.visibleResponse(user, orgId: orgId, responseId: responseId)
        guard user.has(.reviewer) else { throw ApiError(.forbidden, "Review actions need the reviewer role.") }
        return counted(try ops.keyedWrite(orgId: orgId, caller: user.userId, target: responseId, key: key, prepare: {
            let r = try request()
            guard let action = ReviewAction(rawValue: r.action), ReviewAction.reviewerActions.contains(action) else {
                throw ApiError(.validationFailed, "Unknown review action.",
                               errors: [FieldError(path: "action", message: "one of " + ReviewAction.reviewerActions.map(\.rawValue).joined(separator: ", "))])
            }
            if action.requiresComment && (r.comment ?? "").trimmingCharacters(in: .whitespaces).isEmpty {
                throw ApiError(.validationFailed, "\(action.rawValue) needs a comment.", errors: [FieldError(path: "comment", message: "required")])
            }
            guard let current = try ops.database.read({ try $0.response(orgId: orgId, responseId: responseId) }) else { throw ApiError.notFound() }
            let (from, to) = try Self.plan(current, expected: r.expectedRevision, action: action)
            if to == .approved, let taskId = current.fieldTaskId,
               let task = try ops.database.read({ try $0.task(orgId: orgId, taskId: taskId) }), !Self.completable(task, by: responseId) {
                throw ApiError(.taskAlreadyCompleted, "The field task \(taskId) is already completed.")
            }
            return Step(responseId: responseId, expectedRevision: Int64(r.expectedRevision), from: from, to: to,
                        auditAction: "review.\(action.rawValue)", comment: r.comment, answers: nil)
        }, write: Self.apply))
    }

    /// The collector's corrected answers for a returned response: only the one who submitted
    /// it, and only while they hold the collector role (a removed role counts at once).
    public func resubmit(orgId: String, responseId: String, by user: UserRecord, key: IdempotencyKey<ResponseRecord>? = nil,
                         _ request: () throws -> Resubmission) throws -> KeyedOutcome<ResponseRecord> {
        let ops = operations
        let response = try ops.visibleResponse(user, orgId: orgId, responseId: responseId)
        guard response.submitter == user.userId, user.has(.collector) else {
            throw ApiError(.forbidden, "Only the collector who submitted it may resubmit, and only while they hold the collector role.")
        }
        return counted(try ops.keyedWrite(orgId: orgId, caller: user.userId, target: responseId, key: key, prepare: {
            let r = try request()
            guard let version = try ops.database.read({ try $0.surveyVersion(orgId: orgId, surveyVersionId: r.surveyVersionId) }) else {
                throw ApiError.notFound()
            }
            guard version.surveyId == response.surveyId else {
                throw ApiError(.validationFailed, "The version is of another survey.",
                               errors: [FieldError(path: "surveyVersionId", message: "not a version of survey \(response.surveyId)")])
            }
            guard r.contentHash == version.contentHash else {
                throw ApiError(.surveyVersionMismatch, "contentHash does not match survey version \(r.surveyVersionId).")
            }
            let definition = try ops.definitions.definition(of: version)
            let check = definition.validate(answers: r.answers)
            guard check.errors.isEmpty else {
                ops.metrics.add(.validationRefusals)
                throw ApiError(.validationFailed, "The answers break the survey version's rules.", errors: check.errors)
            }
            guard let current = try ops.database.read({ db -> ResponseRecord? in
                try ops.uploads.checkAttachments(check.fileAnswers, orgId: orgId, surveyVersionId: r.surveyVersionId, submitter: response.submitter, in: db)
                return try db.response(orgId: orgId, responseId: responseId)
            }) else { throw ApiError.notFound() }
            let (from, to) = try Self.plan(current, expected: r.expectedRevision, action: .resubmit)
            return Step(responseId: responseId, expectedRevision: Int64(r.expectedRevision), from: from, to: to, auditAction: "response.resubmit",
                        comment: nil, answers: (r.surveyVersionId, CanonicalJSON.string(r.answers),
                                                SummaryFacts(definition: definition, answers: r.answers, check: check).bytes))
        }, write: Self.apply))
    }

    /// A reviewer's or admin's edit of the answers (a collector, the submitter included, is
    /// 1006): checked like a resubmission against the response's own survey version (1031, 1002
    /// at every path, 1014), then the revision (1021), then the gate (1001). The accepted edit
    /// keeps the new version beside the earlier ones, moves the review state to `edited` (the
    /// review machine's `edit`, from any state), raises the revision and writes one audit entry
    /// (`response.edit`, the `response.edited` event), in one transaction. `responseId`,
    /// `clientSubmissionId` and the submitter stay as they were: the submission sent again is
    /// still its replay.
    public func edit(orgId: String, responseId: String, by user: UserRecord, source: String = "api",
                     key: IdempotencyKey<ResponseRecord>? = nil, _ request: () throws -> AnswersEdit) throws -> KeyedOutcome<ResponseRecord> {
        let ops = operations
        let response = try ops.visibleResponse(user, orgId: orgId, responseId: responseId)
        guard user.has(.reviewer) || user.has(.admin) else {
            throw ApiError(.forbidden, "Editing a response's answers needs the reviewer or admin role.")
        }
        return counted(try ops.keyedWrite(orgId: orgId, caller: user.userId, target: responseId, key: key, prepare: { () throws -> Edit in
            let r = try request()
            guard let current = try ops.database.read({ try $0.response(orgId: orgId, responseId: responseId) }),
                  let version = try ops.database.read({ try $0.surveyVersion(orgId: orgId, surveyVersionId: current.surveyVersionId) }) else {
                throw ApiError.notFound()
            }
            let definition = try ops.definitions.definition(of: version)
            let check = definition.validate(answers: r.answers)
            guard check.errors.isEmpty else {
                ops.metrics.add(.validationRefusals)
                throw ApiError(.validationFailed, "The answers break the survey version's rules.", errors: check.errors)
            }
            let entity = try ops.database.read { db -> EntityEdit? in
                try ops.uploads.checkAttachments(check.fileAnswers, orgId: orgId, surveyVersionId: version.surveyVersionId,
                                                 submitter: response.submitter, in: db)
                return try EntityEdit.plan(definition: definition, responseId: responseId, orgId: orgId, stored: current.answers,
                                           edited: r.answers, in: db)
            }
            let (_, to) = try Self.plan(current, expected: r.expectedRevision, action: .edit)
            return Edit(responseId: responseId, expectedRevision: Int64(r.expectedRevision), to: to, answers: CanonicalJSON.string(r.answers),
                        facts: SummaryFacts(definition: definition, answers: r.answers, check: check).bytes,
                        source: source, comment: r.comment, entity: entity, actor: user.userId)
        }, write: { e, tx in
            let edited = try tx.editResponse(responseId: e.responseId, expectedRevision: e.expectedRevision, to: e.to, answers: e.answers,
                                             facts: e.facts, source: e.source, comment: e.comment).response
            try e.entity?.apply(in: tx, responseId: e.responseId, actor: e.actor)
            return edited
        }))
    }

    struct Edit: Sendable {
        let responseId: String
        let expectedRevision: Int64
        let to: ReviewState
        let answers: String
        /// The edited answers' `SummaryFacts`.
        let facts: [UInt8]
        let source: String
        let comment: String?
        /// The entity the response made, when the edit changes what the form saves to it.
        let entity: EntityEdit?
        let actor: String
    }

    /// A response's versions, oldest first (1: as submitted), for anyone who may see it.
    public func versions(orgId: String, responseId: String, by user: UserRecord) throws -> [ResponseVersionRecord] {
        _ = try operations.visibleResponse(user, orgId: orgId, responseId: responseId)
        return try operations.database.read { db in
            guard let r = try db.response(orgId: orgId, responseId: responseId) else { throw ApiError.notFound() }
            return try db.responseVersions(of: r)
        }
    }

    /// Version `number` of a response and the one before it (nil for version 1); 404 for a
    /// number it does not have.
    public func version(orgId: String, responseId: String, number: Int, by user: UserRecord) throws -> (ResponseVersionRecord, previous: ResponseVersionRecord?) {
        let all = try versions(orgId: orgId, responseId: responseId, by: user)
        guard let i = all.firstIndex(where: { $0.number == Int64(number) }) else {
            throw ApiError(.notFound, "The response has no version \(number).")
        }
        return (all[i], i > 0 ? all[i - 1] : nil)
    }

    /// Whether approving the response may complete `task`: it is open, or this very response
    /// completed it already (an approved response edited and approved again).
    static func completable(_ task: TaskRecord, by responseId: String) -> Bool {
        task.state == .open || task.responseId == responseId
    }

    /// The response's audit trail, oldest first, for anyone who may see the response.
    public func history(orgId: String, responseId: String, by user: UserRecord) throws -> [AuditRecord] {
        _ = try operations.visibleResponse(user, orgId: orgId, responseId: responseId)
        return try operations.database.read { try $0.auditTrail(orgId: orgId, targetType: "response", targetId: responseId) }
    }

    /// An accepted step is counted; its replays are not.
    private func counted(_ outcome: KeyedOutcome<ResponseRecord>) -> KeyedOutcome<ResponseRecord> {
        if case .written = outcome { operations.metrics.add(.reviewTransitions) }
        return outcome
    }

    struct Step: Sendable {
        let responseId: String
        let expectedRevision: Int64
        let from: ReviewState
        let to: ReviewState
        let auditAction: String
        let comment: String?
        let answers: (surveyVersionId: String, text: String, facts: [UInt8])?
    }

    /// 1021 for a stale revision (with the current state), then 1020 for a transition the state
    /// machine does not allow.
    private static func plan(_ current: ResponseRecord, expected: Int, action: ReviewAction) throws -> (ReviewState, ReviewState) {
        guard current.revision == Int64(expected) else { throw stale(current, expected: expected) }
        let from = current.reviewState
        guard let to = ReviewStateMachine.apply(action, to: from) else {
            throw ApiError(.invalidTransition, "\(action.rawValue) is not allowed from \(from.rawValue).",
                           extra: ["reviewState": .string(from.rawValue), "revision": .number(Double(current.revision))])
        }
        return (from, to)
    }

    static func stale(_ current: ResponseRecord, expected: Int) -> ApiError {
        ApiError(.staleRevision, "The response is at revision \(current.revision), not \(expected).",
                 extra: ["reviewState": .string(current.reviewState.rawValue), "revision": .number(Double(current.revision))])
    }

    /// Inside the gated transaction: the guarded update (1021 if the revision moved meanwhile),
    /// its audit entry, and the task completion when approved.
    @Sendable static func apply(_ step: Step, _ tx: GatedTransaction) throws -> ResponseRecord {
        let updated = try tx.applyReview(responseId: step.responseId, expectedRevision: step.expectedRevision, from: step.from,
                                         to: step.to, action: step.auditAction, comment: step.comment, answers: step.answers)
        if step.to == .approved, let taskId = updated.fieldTaskId,
           try tx.read.task(orgId: tx.orgId, taskId: taskId).map({ $0.state == .completed && $0.responseId == updated.responseId }) != true {
            try tx.completeTask(taskId: taskId, responseId: updated.responseId, completedBy: updated.submitter)
        }
        return updated
    }
}
