import SurveyDomain
import SurveyStorage

/// ODK Central's `PATCH …/submissions/{instanceId} {reviewState}` as surveyd's review steps
/// (Docs/central-api.md): Central sets a state, surveyd moves through steps, so a state is
/// reached by the one or two steps the table names, in one transaction, each audited as the
/// review API's own step. The state it is already in answers 200 and writes nothing.
public struct CentralReviews: Sendable {
    let operations: Operations

    public enum Outcome: Sendable {
        case unchanged(ResponseRecord)
        case written(ResponseRecord)
    }

    /// Central's names of the states a PATCH may set.
    public static let targets = ["hasIssues", "approved", "rejected"]

    /// Central's name for a state, as every Central read writes it: not yet decided is nil
    /// (`null`); returned is `hasIssues`.
    public static func centralName(_ state: ReviewState) -> String? {
        switch state {
        case .none, .submitted, .inReview: nil
        case .returned, .hasIssues: "hasIssues"
        case .edited: "edited"
        case .approved: "approved"
        case .rejected: "rejected"
        }
    }

    /// The steps from `from` to Central's `target`; nil when none leads there (1020).
    static func steps(from: ReviewState, to target: String) -> [ReviewAction]? {
        let last: ReviewAction
        switch target {
        case "hasIssues": last = from == .edited ? .flagIssues : .returnForCorrection
        case "approved": last = .approve
        default: last = .reject
        }
        switch from {
        case .submitted: return [.startReview, last]
        case .inReview, .edited: return [last]
        case .none, .returned, .approved, .rejected, .hasIssues: return nil
        }
    }

    /// Whether `state` already reads as Central's `target`.
    static func reads(_ state: ReviewState, as target: String) -> Bool {
        switch (state, target) {
        case (.returned, "hasIssues"), (.hasIssues, "hasIssues"), (.approved, "approved"), (.rejected, "rejected"): true
        default: false
        }
    }

    /// Order: the response visible to the caller (404), the reviewer role (1006), the body
    /// (1031), the state (1020), the gate (1001), one transaction.
    public func setState(orgId: String, responseId: String, by user: UserRecord, _ target: () throws -> String?) throws -> Outcome {
        let ops = operations
        _ = try ops.visibleResponse(user, orgId: orgId, responseId: responseId)
        guard user.has(.reviewer) else { throw ApiError(.forbidden, "Review actions need the reviewer role.") }
        guard let wanted = try target(), Self.targets.contains(wanted) else {
            throw ApiError.malformed("reviewState must be one of \(Self.targets.joined(separator: ", ")); null and edited are not set by a review.")
        }
        guard let current = try ops.database.read({ try $0.response(orgId: orgId, responseId: responseId) }) else { throw ApiError.notFound() }
        if Self.reads(current.reviewState, as: wanted) { return .unchanged(current) }
        guard let actions = Self.steps(from: current.reviewState, to: wanted) else {
            throw ApiError(.invalidTransition, "A response in state \(current.reviewState.rawValue) cannot be set to \(wanted).",
                           extra: ["reviewState": .string(current.reviewState.rawValue), "revision": .number(Double(current.revision))])
        }
        if wanted == "approved", let taskId = current.fieldTaskId,
           let task = try ops.database.read({ try $0.task(orgId: orgId, taskId: taskId) }), !Reviews.completable(task, by: responseId) {
            throw ApiError(.taskAlreadyCompleted, "The field task \(taskId) is already completed.")
        }
        var steps: [Reviews.Step] = []
        var state = current.reviewState, revision = current.revision
        for action in actions {
            guard let next = ReviewStateMachine.apply(action, to: state) else {
                throw ApiError(.invalidTransition, "\(action.rawValue) is not allowed from \(state.rawValue).")
            }
            let comment = action.requiresComment ? "Set to \(wanted) through the Central API" : nil
            steps.append(Reviews.Step(responseId: responseId, expectedRevision: revision, from: state, to: next,
                                      auditAction: "review.\(action.rawValue)", comment: comment, answers: nil))
            state = next
            revision += 1
        }
        let planned = steps
        let written = try ops.gate.write(orgId: orgId, actor: user.userId) { tx -> ResponseRecord in
            var last = current
            for step in planned { last = try Reviews.apply(step, tx) }
            return last
        }.value
        ops.metrics.add(.reviewTransitions)
        return .written(written)
    }
}
