/// Where a response is in the review workflow. `none`: the survey needs no review. `edited`: a
/// reviewer or admin changed its answers (from any state); `hasIssues`: an edited response
/// flagged as still having issues.
public enum ReviewState: String, Sendable, CaseIterable {
    case none
    case submitted
    case inReview = "in_review"
    case returned
    case approved
    case rejected
    case edited
    case hasIssues
}

/// A step of the review workflow; raw values are the wire names. `resubmit` is the owning
/// collector's step (its own route), `edit` a reviewer's or admin's change of the answers (its
/// own route, `PUT …/answers`); the others are reviewers' `action`s.
public enum ReviewAction: String, Sendable, CaseIterable {
    case startReview
    case returnForCorrection
    case approve
    case reject
    case flagIssues
    case resubmit
    case edit

    /// The actions a reviewer sends as `action` (the review route's).
    public static let reviewerActions: [ReviewAction] = [.startReview, .returnForCorrection, .approve, .reject, .flagIssues]

    /// Approval is the only way a review-required response is completed (and its task with it).
    public var completesResponse: Bool { self == .approve }

    /// The contract requires a `comment` when returning or rejecting.
    public var requiresComment: Bool { self == .returnForCorrection || self == .reject || self == .flagIssues }
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
        // An edit moves a response to `edited` from any state (`none`, `approved` and
        // `rejected` included); from there it is approved, rejected or flagged.
        case (_, .edit): .edited
        case (.edited, .approve): .approved
        case (.edited, .reject): .rejected
        case (.edited, .flagIssues): .hasIssues
        // none (no review), approved, rejected and hasIssues take no other step; every other
        // pair is out of order.
        default: nil
        }
        return next.map { ReviewTransition(from: state, action: action, to: $0) }
    }
}
