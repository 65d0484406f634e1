import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// The review workflow: submitted → in_review → returned → submitted → in_review → approved (or
/// rejected). Each accepted step raises the revision by one and appends one audit entry in one
/// transaction; approval completes the linked field task in that same transaction.
struct ReviewService {
    let services: Services

    func register(into router: inout Router) {
        // Any member: who may see the response decides 404 before the role decides 1006.
        services.route(&router, "POST", "/v1/orgs/{orgId}/responses/{responseId}/review", .member(anyOf: []), review)
        services.route(&router, "POST", "/v1/orgs/{orgId}/responses/{responseId}/resubmit", .member(anyOf: []), resubmit)
        services.route(&router, "GET", "/v1/orgs/{orgId}/responses/{responseId}/history", .member(anyOf: []), history)
    }

    private func visibleResponse(_ user: UserRecord, orgId: String, responseId: String) throws -> ResponseRecord {
        try ResponseService.visibleResponse(services, user, orgId: orgId, responseId: responseId)
    }

    static func stale(_ current: ResponseRecord, expected: Int) -> ApiError {
        ApiError(.staleRevision, "The response is at revision \(current.revision), not \(expected).",
                 extra: ["reviewState": .string(current.reviewState), "revision": .number(Double(current.revision))])
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

    /// The state the step applies to: 1021 for a stale revision (with the current state), then
    /// 1020 for a transition the state machine does not allow.
    private func plan(_ current: ResponseRecord, expected: Int, action: ReviewAction) throws -> (ReviewState, ReviewState) {
        guard current.revision == Int64(expected) else { throw Self.stale(current, expected: expected) }
        let from = ReviewState(rawValue: current.reviewState) ?? .none
        guard let to = ReviewStateMachine.apply(action, to: from) else {
            throw ApiError(.invalidTransition, "\(action.rawValue) is not allowed from \(from.rawValue).",
                           extra: ["reviewState": .string(from.rawValue), "revision": .number(Double(current.revision))])
        }
        return (from, to)
    }

    func review(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let responseId = request.parameter("responseId")
        let user = try context.member()
        _ = try visibleResponse(user, orgId: orgId, responseId: responseId)
        guard user.has(.reviewer) else { throw ApiError(.forbidden, "Review actions need the reviewer role.") }
        return try services.keyedWrite(request, orgId: orgId, caller: user.userId, target: responseId, prepare: {
            let body = try JSONBody(request)
            let actionName = try body.string("action")
            let expected = try body.int("expectedRevision")
            let comment = try body.optionalString("comment")
            guard let action = ReviewAction(rawValue: actionName), action != .resubmit else {
                throw ApiError(.validationFailed, "Unknown review action.",
                               errors: [FieldError(path: "action", message: "one of startReview, returnForCorrection, approve, reject")])
            }
            if action.requiresComment && (comment ?? "").trimmingCharacters(in: .whitespaces).isEmpty {
                throw ApiError(.validationFailed, "\(action.rawValue) needs a comment.", errors: [FieldError(path: "comment", message: "required")])
            }
            let current = try services.database.read { try $0.response(orgId: orgId, responseId: responseId) }!
            let (from, to) = try plan(current, expected: expected, action: action)
            if to == .approved, let taskId = current.fieldTaskId,
               try services.database.read({ try $0.task(orgId: orgId, taskId: taskId) })?.state != "open" {
                throw ApiError(.taskAlreadyCompleted, "The field task \(taskId) is already completed.")
            }
            return Step(responseId: responseId, expectedRevision: Int64(expected), from: from, to: to,
                        auditAction: "review.\(action.rawValue)", comment: comment, answers: nil)
        }, write: { step, tx in try Self.apply(step, tx) }).counted(services)
    }

    func resubmit(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let responseId = request.parameter("responseId")
        let user = try context.member()
        let response = try visibleResponse(user, orgId: orgId, responseId: responseId)
        // Both: the one who submitted it, and still a collector (a removed role counts at once).
        guard response.submitter == user.userId, user.has(.collector) else {
            throw ApiError(.forbidden, "Only the collector who submitted it may resubmit, and only while they hold the collector role.")
        }
        return try services.keyedWrite(request, orgId: orgId, caller: user.userId, target: responseId, prepare: {
            let body = try JSONBody(request)
            let expected = try body.int("expectedRevision")
            let versionId = try body.string("surveyVersionId")
            let contentHash = try body.string("contentHash")
            guard let answers = body.fields["answers"] else { throw ApiError.malformed("`answers` is required.") }
            guard let version = try services.database.read({ try $0.surveyVersion(orgId: orgId, surveyVersionId: versionId) }) else {
                throw ApiError.notFound()
            }
            guard version.surveyId == response.surveyId else {
                throw ApiError(.validationFailed, "The version is of another survey.",
                               errors: [FieldError(path: "surveyVersionId", message: "not a version of survey \(response.surveyId)")])
            }
            guard contentHash == version.contentHash else {
                throw ApiError(.surveyVersionMismatch, "contentHash does not match survey version \(versionId).")
            }
            let check = try services.definitions.definition(of: version).validate(answers: answers)
            guard check.errors.isEmpty else {
                services.metrics.add(.validationRefusals)
                throw ApiError(.validationFailed, "The answers break the survey version's rules.", errors: check.errors)
            }
            try ResponseService(services: services).checkAttachments(check.fileAnswers, orgId: orgId, surveyVersionId: versionId)
            let current = try services.database.read { try $0.response(orgId: orgId, responseId: responseId) }!
            let (from, to) = try plan(current, expected: expected, action: .resubmit)
            return Step(responseId: responseId, expectedRevision: Int64(expected), from: from, to: to, auditAction: "response.resubmit",
                        comment: nil, answers: (versionId, CanonicalJSON.string(answers)))
        }, write: { step, tx in try Self.apply(step, tx) }).counted(services)
    }

    /// Inside the gated transaction: the guarded update (1021 if the revision moved meanwhile),
    /// its audit entry, and the task completion when approved.
    static func apply(_ step: Step, _ tx: GatedTransaction) throws -> HTTPResponse {
        let updated = try tx.applyReview(responseId: step.responseId, expectedRevision: step.expectedRevision, from: step.from.rawValue,
                                         to: step.to.rawValue, action: step.auditAction, comment: step.comment, answers: step.answers)
        if step.to == .approved, let taskId = updated.fieldTaskId {
            try tx.completeTask(taskId: taskId, responseId: updated.responseId, completedBy: updated.submitter)
        }
        return .json(200, try ResponseService.responseJSON(updated)).logging(["responseId": updated.responseId, "transition": step.auditAction])
    }

    func history(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let responseId = request.parameter("responseId")
        let user = try context.member()
        _ = try visibleResponse(user, orgId: orgId, responseId: responseId)
        let trail = try services.database.read { try $0.auditTrail(orgId: orgId, targetType: "response", targetId: responseId) }
        return .json(200, ["items": .array(trail.map(Self.historyItem))])
    }

    static func historyItem(_ a: AuditRecord) -> JSONValue {
        var o: [String: JSONValue] = ["seq": .number(Double(a.seq)), "action": .string(a.action), "actor": .string(a.actor),
                                      "at": .string(Timestamp.format(a.at))]
        if let r = a.revision { o["revision"] = .number(Double(r)) }
        if let d = a.detail.flatMap({ try? JSONParser.parse(Array($0.utf8)) })?.objectValue {
            for k in ["fromState", "toState", "comment"] { if let v = d[k] { o[k] = v } }
        }
        return .object(o)
    }
}

extension HTTPResponse {
    /// Counts an accepted review step (not its replays) in the metrics.
    fileprivate func counted(_ services: Services) -> HTTPResponse {
        if status == 200 && !isReplay { services.metrics.add(.reviewTransitions) }
        return self
    }
}
