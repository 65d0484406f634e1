import Foundation
import Testing
import SurveySync

/// The app's local check against the table of cases the server's tests run too
/// (`Tests/Fixtures/form-cases.json`): the same answers refused at the same paths with the same
/// messages, and the same answers accepted.
@Suite struct LocalFormCheckTests {
    struct Table: Decodable {
        struct Case: Decodable {
            let name: String
            let errors: [String]
        }
        let cases: [Case]
    }

    static let tableURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/form-cases.json")

    /// The table's definition and each case's answers, as an app holds them: JSON it decoded.
    static func load() throws -> (form: SurveyForm, table: Table, answers: [[String: any Sendable]]) {
        let data = try Data(contentsOf: tableURL)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let definition = try JSONSerialization.data(withJSONObject: try #require(object["definition"]))
        let answers = try (try #require(object["cases"] as? [[String: Any]])).map {
            try AnswersJSON.decode(try JSONSerialization.data(withJSONObject: try #require($0["answers"])))
        }
        return (try SurveyForm(definition: definition), try JSONDecoder().decode(Table.self, from: data), answers)
    }

    @Test func theDeviceRefusesWhatTheServerRefuses() throws {
        let (form, table, answers) = try Self.load()
        #expect(table.cases.count >= 20)
        for (c, given) in zip(table.cases, answers) {
            let found = form.check(given).map { "\($0.path): \($0.message)" }
            #expect(found == c.errors, "\(c.name)")
        }
    }

    @Test func aProblemReadsAsTheSentenceARefusalShows() throws {
        let (form, _, _) = try Self.load()
        let problems = form.check(["region": "n", "consent": "yes", "size": 0, "members": [any Sendable](), "extra_visits": [["visit_note": "x"]]])
        #expect(problems.map(\.sentence) == ["Check the answer to size: Between 1 and 30."])
        #expect(form.notRelevant(["region": "s", "consent": "no"]).contains("answers.hh"))
    }

    /// The example of Docs/sdk.md, "Checking answers on the device", as it reads there.
    @Test func theGuidesRosterExampleAnswersAsDocumented() throws {
        let (form, _, _) = try Self.load()
        let members: [[String: any Sendable]] = [["name": "Ama", "age": 34], ["name": "Kofi", "age": 140]]
        let answers: [String: any Sendable] = [
            "region": "n", "consent": "yes", "size": 2, "members": members, "extra_visits": [["visit_note": "morning"]],
        ]
        #expect(form.check(answers).map(\.sentence) == ["Check the answer to members[1].age: does not meet the constraint . >= 0 and . < 130."])
        #expect(form.notRelevant(answers) == ["answers.members[0].school", "answers.members[1].school", "answers.callback_reason"])
    }

    @Test func aDefinitionTheServerWouldNotPublishIsRefused() throws {
        #expect(throws: OutboxError.self) { try SurveyForm(definition: Data(#"{"title": "t", "questions": [{"id": "a", "type": "integer", "relevant": "${b} > 1"}]}"#.utf8)) }
        #expect(throws: OutboxError.self) { try SurveyForm(definition: Data("not json".utf8)) }
    }
}
