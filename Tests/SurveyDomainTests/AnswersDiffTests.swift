import Testing
@testable import SurveyDomain
@testable import SurveyForms

/// What a version of a response changed: one entry per changed answer, at the path validation
/// errors use, repeats compared instance by instance.
@Suite struct AnswersDiffTests {
    func paths(_ old: JSONValue?, _ new: JSONValue) -> [String] { AnswersDiff.changes(from: old, to: new).map(\.path) }

    @Test func plainAnswersChangedAddedAndRemoved() {
        let changes = AnswersDiff.changes(from: ["size": 4, "source": "well", "notes": "x"], to: ["size": 5, "source": "well", "photo": ["clientUploadId": "u-00000001"]])
        #expect(changes == [
            .init(path: "answers.notes", old: "x", new: nil),
            .init(path: "answers.photo", old: nil, new: ["clientUploadId": "u-00000001"]),
            .init(path: "answers.size", old: 4, new: 5),
        ])
        #expect(paths(["a": 1], ["a": 1]).isEmpty)
        // Version 1 is compared with nothing.
        #expect(AnswersDiff.changes(from: nil, to: ["a": 1]) == [.init(path: "answers.a", old: nil, new: 1)])
    }

    @Test func repeatsByIndexAndOtherListsWhole() {
        let old: JSONValue = ["people": [["name": "Ana", "visits": [["on": "2026-10-01"]]], ["name": "Leo"]], "tags": ["a", "b"]]
        let new: JSONValue = ["people": [["name": "Ana", "visits": [["on": "2026-10-02"]]], ["name": "Leo", "age": 6], ["name": "Mia"]],
                              "tags": ["a"]]
        #expect(AnswersDiff.changes(from: old, to: new) == [
            .init(path: "answers.people[0].visits[0].on", old: "2026-10-01", new: "2026-10-02"),
            .init(path: "answers.people[1].age", old: nil, new: 6),
            .init(path: "answers.people[2].name", old: nil, new: "Mia"),
            .init(path: "answers.tags", old: ["a", "b"], new: ["a"]),
        ])
        // A select_multiple that becomes empty is a change of the whole answer.
        #expect(paths(["tags": ["a"]], ["tags": []]) == ["answers.tags"])
        #expect(paths(nil, ["tags": []]) == ["answers.tags"])
    }
}
