/// Where a response is in the review workflow. `none`: the survey needs no review.
public enum ReviewState: String, Sendable, CaseIterable {
    case none
    case submitted
    case inReview = "in_review"
    case returned
    case approved
    case rejected
}

/// A step of the review workflow; raw values are the wire names. `resubmit` is the owning
/// collector's step (its own route); the others are reviewers' `action`s.
public enum ReviewAction: String, Sendable, CaseIterable {
    case startReview
    case returnForCorrection
    case approve
    case reject
    case resubmit

    /// Approval is the only way a review-required response is completed (and its task with it).
    public var completesResponse: Bool { self == .approve }

    /// The contract requires a `comment` when returning or rejecting.
    public var requiresComment: Bool { self == .returnForCorrection || self == .reject }
}

/// One allowed step, from a state to the next.
public struct ReviewTransition: Sendable, Equatable {
    public let from: ReviewState
    public let action: ReviewAction
    public let to: ReviewState

    public var completesResponse: Bool { action.completesResponse }
}

public struct ReviewStateMachine {
    /// The next state, or nil when the action is not allowed from `state` (1020).
    public static func apply(_ action: ReviewAction, to state: ReviewState) -> ReviewState? {
        transition(action, from: state)?.to
    }

    public static func transition(_ action: ReviewAction, from state: ReviewState) -> ReviewTransition? {
        let next: ReviewState? = switch (state, action) {
        case (.submitted, .startReview): .inReview
        case (.inReview, .returnForCorrection): .returned
        case (.inReview, .approve): .approved
        case (.inReview, .reject): .rejected
        case (.returned, .resubmit): .submitted
        // none (no review), approved and rejected are final; every other pair is out of order.
        default: nil
        }
        return next.map { ReviewTransition(from: state, action: action, to: $0) }
    }
}
