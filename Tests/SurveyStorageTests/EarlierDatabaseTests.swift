import Foundation
import Testing
@testable import SurveyStorage
import SurveyDomain

/// `Fixtures/surveyd-7e589bd.sqlite` was written by surveyd at commit 7e589bd (`serve --demo`,
/// two field tasks, three responses taken to approved, returned and rejected; stopped cleanly):
/// every later build must open it, migrate it and read its rows back as they were written.
@Suite struct EarlierDatabaseTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/surveyd-7e589bd.sqlite").path
    static let orgId = "org_01a23560-897c-7ca1-ad11-6f922919d19b"

    /// A copy of the fixture in a fresh directory (a test never changes the committed file).
    static func copy(into dir: TempDir) throws -> String {
        try FileManager.default.copyItem(atPath: fixture, toPath: dir.db)
        return dir.db
    }

    @Test func aDatabaseOfCommit7e589bdOpensAndReadsBackAsWritten() throws {
        let dir = TempDir()
        let db = try Database(.init(path: try Self.copy(into: dir)))
        defer { db.close() }
        // Its steps are recognised by name: none runs again, none is missing.
        let conn = try Connection(path: dir.db, readOnly: true)
        #expect(try Migrations.applied(conn) == Migrations.steps.map(\.name))
        let org = try #require(try db.read { try $0.org(Self.orgId) })
        #expect(org.name == "Demo Field Team")
        let responses = try db.read { try $0.responses(orgId: Self.orgId, submitter: nil, reviewState: nil, after: nil, limit: 10) }
        #expect(responses.map(\.clientSubmissionId) == ["fixture-0002", "fixture-0003", "fixture-0001"])
        #expect(responses.map(\.reviewState.rawValue) == ["returned", "rejected", "approved"])
        #expect(responses.map(\.revision) == [3, 3, 3])
        let tasks = try db.read { try $0.tasks(orgId: Self.orgId, assignee: nil, after: nil, limit: 10) }
        #expect(tasks.map(\.title) == ["Visit the north well", "Visit the south well"])
        #expect(tasks.map(\.state.rawValue) == ["completed", "open"])
        #expect(tasks.first?.responseId == responses.last?.responseId)
        #expect(tasks.first?.notes == "bring a bucket")
        #expect(tasks.last?.dueAt == 1_798_761_600_000)
    }
}
