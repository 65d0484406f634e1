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
            guard let action = ReviewAction(rawValue: r.action), action != .resubmit else {
                throw ApiError(.validationFailed, "Unknown review action.",
                               errors: [FieldError(path: "action", message: "one of startReview, returnForCorrection, approve, reject")])
            }
            if action.requiresComment && (r.comment ?? "").trimmingCharacters(in: .whitespaces).isEmpty {
                throw ApiError(.validationFailed, "\(action.rawValue) needs a comment.", errors: [FieldError(path: "comment", message: "required")])
            }
            guard let current = try ops.database.read({ try $0.response(orgId: orgId, responseId: responseId) }) else { throw ApiError.notFound() }
            let (from, to) = try Self.plan(current, expected: r.expectedRevision, action: action)
            if to == .approved, let taskId = current.fieldTaskId,
               try ops.database.read({ try $0.task(orgId: orgId, taskId: taskId) })?.state != .open {
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
            let check = try ops.definitions.definition(of: version).validate(answers: r.answers)
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
                        comment: nil, answers: (r.surveyVersionId, CanonicalJSON.string(r.answers)))
        }, write: Self.apply))
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
        let answers: (surveyVersionId: String, text: String)?
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
        if step.to == .approved, let taskId = updated.fieldTaskId {
            try tx.completeTask(taskId: taskId, responseId: updated.responseId, completedBy: updated.submitter)
        }
        return updated
    }
}
