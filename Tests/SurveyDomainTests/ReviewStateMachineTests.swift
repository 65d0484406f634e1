import Testing
@testable import SurveyDomain
@testable import SurveyForms

@Suite struct ReviewStateMachineTests {
    /// The complete table: every (state, action) pair, nil = 1020 InvalidTransition.
    /// An edit (`PUT …/answers`) moves a response to `edited` from any state; from `edited` it is
    /// approved, rejected or flagged (`hasIssues`).
    static let expected: [ReviewState: [ReviewAction: ReviewState?]] = [
        .none: row(edit: .edited),
        .submitted: row([.startReview: .inReview], edit: .edited),
        .inReview: row([.returnForCorrection: .returned, .approve: .approved, .reject: .rejected], edit: .edited),
        .returned: row([.resubmit: .submitted], edit: .edited),
        .approved: row(edit: .edited),
        .rejected: row(edit: .edited),
        .edited: row([.approve: .approved, .reject: .rejected, .flagIssues: .hasIssues], edit: .edited),
        .hasIssues: row(edit: .edited),
    ]

    /// A state's row: every action refused but those given.
    static func row(_ allowed: [ReviewAction: ReviewState] = [:], edit: ReviewState) -> [ReviewAction: ReviewState?] {
        var r: [ReviewAction: ReviewState?] = [:]
        for a in ReviewAction.allCases { r[a] = .some(allowed[a]) }
        r[.edit] = .some(edit)
        return r
    }

    @Test func tableCoversEveryPair() {
        #expect(Set(Self.expected.keys) == Set(ReviewState.allCases))
        for state in ReviewState.allCases {
            #expect(Set(Self.expected[state]!.keys) == Set(ReviewAction.allCases), "\(state)")
        }
    }

    @Test(arguments: ReviewState.allCases, ReviewAction.allCases)
    func everyPair(state: ReviewState, action: ReviewAction) {
        let want = Self.expected[state]![action]!
        #expect(ReviewStateMachine.apply(action, to: state) == want)
        let t = ReviewStateMachine.transition(action, from: state)
        #expect(t?.to == want)
        if let t {
            #expect(t.from == state && t.action == action)
            #expect(t.completesResponse == (action == .approve))
        }
    }

    @Test func exactlySixteenTransitions() {
        let allowed = ReviewState.allCases.flatMap { s in ReviewAction.allCases.compactMap { ReviewStateMachine.transition($0, from: s) } }
        // The five of the first workflow, an edit from each of the eight states, three from edited.
        #expect(allowed.count == 16)
        #expect(allowed.filter(\.completesResponse).map(\.from) == [.inReview, .edited])
    }

    @Test func wireNames() {
        #expect(ReviewState.allCases.map(\.rawValue) == ["none", "submitted", "in_review", "returned", "approved", "rejected", "edited", "hasIssues"])
        #expect(ReviewAction.allCases.map(\.rawValue) == ["startReview", "returnForCorrection", "approve", "reject", "flagIssues", "resubmit", "edit"])
        #expect(ReviewAction.reviewerActions.map(\.rawValue) == ["startReview", "returnForCorrection", "approve", "reject", "flagIssues"])
        #expect(ReviewState(rawValue: "inReview") == nil)
        #expect(ReviewAction.allCases.filter(\.requiresComment) == [.returnForCorrection, .reject, .flagIssues])
        #expect(ReviewAction.allCases.filter(\.completesResponse) == [.approve])
    }

    @Test func fullContractPath() {
        // submitted → in_review → returned → submitted → in_review → approved
        var state = ReviewState.submitted
        for action: ReviewAction in [.startReview, .returnForCorrection, .resubmit, .startReview, .approve] {
            state = ReviewStateMachine.apply(action, to: state)!
        }
        #expect(state == .approved)
    }
}
