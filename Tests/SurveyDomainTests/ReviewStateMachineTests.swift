import Testing
@testable import SurveyDomain
@testable import SurveyForms

@Suite struct ReviewStateMachineTests {
    /// The complete table: every (state, action) pair, nil = 1020 InvalidTransition.
    static let expected: [ReviewState: [ReviewAction: ReviewState?]] = [
        .none: [.startReview: nil, .returnForCorrection: nil, .approve: nil, .reject: nil, .resubmit: nil],
        .submitted: [.startReview: .inReview, .returnForCorrection: nil, .approve: nil, .reject: nil, .resubmit: nil],
        .inReview: [.startReview: nil, .returnForCorrection: .returned, .approve: .approved, .reject: .rejected, .resubmit: nil],
        .returned: [.startReview: nil, .returnForCorrection: nil, .approve: nil, .reject: nil, .resubmit: .submitted],
        .approved: [.startReview: nil, .returnForCorrection: nil, .approve: nil, .reject: nil, .resubmit: nil],
        .rejected: [.startReview: nil, .returnForCorrection: nil, .approve: nil, .reject: nil, .resubmit: nil],
    ]

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

    @Test func exactlyFiveTransitions() {
        let allowed = ReviewState.allCases.flatMap { s in ReviewAction.allCases.compactMap { ReviewStateMachine.transition($0, from: s) } }
        #expect(allowed.count == 5)
        #expect(allowed.filter(\.completesResponse).map(\.to) == [.approved])
    }

    @Test func wireNames() {
        #expect(ReviewState.allCases.map(\.rawValue) == ["none", "submitted", "in_review", "returned", "approved", "rejected"])
        #expect(ReviewAction.allCases.map(\.rawValue) == ["startReview", "returnForCorrection", "approve", "reject", "resubmit"])
        #expect(ReviewState(rawValue: "inReview") == nil)
        #expect(ReviewAction.allCases.filter(\.requiresComment) == [.returnForCorrection, .reject])
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
