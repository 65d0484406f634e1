import Foundation
import Testing
import SurveyDomain

/// The table of cases SurveySync's local check runs too (`Tests/Fixtures/form-cases.json`),
/// submitted to a real server: each case is accepted exactly when the table says so, and a
/// refusal lists the table's errors and leaves nothing (no response, no audit entry, its
/// `clientSubmissionId` still free).
@Suite struct FormCaseTableTests {
    typealias P = FoundationTests

    static let tableURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/form-cases.json")

    @Test func theServerRefusesWhatTheTableSays() throws {
        let table = try JSONParser.parse([UInt8](try Data(contentsOf: Self.tableURL)))
        let cases = try #require(table["cases"]?.arrayValue)
        #expect(cases.count >= 20)
        let f = try Fixture()
        let v = try f.publishSurvey(definition: try #require(table["definition"]))
        var accepted: Int64 = 0
        for (i, c) in cases.enumerated() {
            let name = c["name"]?.stringValue ?? "?"
            let expected = (c["errors"]?.arrayValue ?? []).compactMap(\.stringValue)
            let answers = try #require(c["answers"])
            let id = "form-case-\(i)"
            let auditBefore = try f.server.count("SELECT COUNT(*) AS n FROM audit")
            let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, ResponseTests.submission(id, v, answers: answers))
            if expected.isEmpty {
                #expect(r.status == 201, "\(name): \(r.text)")
                accepted += 1
            } else {
                P.expectProblem(r, .validationFailed)
                let errors = (r.json?["errors"]?.arrayValue ?? []).map { "\($0["path"]?.stringValue ?? "?"): \($0["message"]?.stringValue ?? "?")" }
                #expect(errors == expected, "\(name)")
                #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit") == auditBefore, "\(name)")
                let taken = try f.server.count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id = '\(id)'")
                #expect(taken == 0, "\(name)")
            }
        }
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses") == accepted)
    }
}
