import Foundation
import Testing
@testable import SurveyStorage
import SurveyDomain

/// A fresh temp directory per test, removed afterwards.
final class TempDir {
    let path = NSTemporaryDirectory() + "surveyd-unit-" + UUID().uuidString
    init() { try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    var db: String { path + "/surveyd.sqlite" }
}

@Suite struct MigrationTests {
    @Test func freshDatabaseGetsEverySchemaStepAndWAL() throws {
        let dir = TempDir()
        let db = try Database(.init(path: dir.db))
        db.close()
        let conn = try Connection(path: dir.db, readOnly: true)
        #expect(try Migrations.currentVersion(conn) == Migrations.steps.count)
        #expect(try conn.pragma("journal_mode") == "wal")
        let names = try conn.query("SELECT name FROM schema_migrations ORDER BY version").map { try $0.string("name") }
        #expect(names == Migrations.steps.map(\.name))
        for table in ["orgs", "users", "tokens", "audit", "surveys", "survey_versions", "responses"] {
            #expect(try !conn.query("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", [.text(table)]).isEmpty, "\(table)")
        }
    }

    /// Step 2 keeps the SHA-256 of a response's body instead of the body: a row written before it
    /// still answers with the hash of the body it kept, so its byte-identical replay is recognised.
    @Test func rowsFromBeforeStepTwoKeepTheirBodyAndAnswerItsHash() throws {
        let dir = TempDir()
        let conn = try Connection(path: dir.db, readOnly: false)
        try conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")
        try conn.execute(Migrations.steps[0].sql)
        try conn.run("INSERT INTO schema_migrations VALUES (1, ?, 0)", [.text(Migrations.steps[0].name)])
        let body = Array(#"{"answers":{"q1":1},"clientSubmissionId":"old-body-1","contentHash":"sha256:0","surveyVersionId":"ver_1"}"#.utf8)
        try conn.run("""
            INSERT INTO responses(response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id,
                request_digest, request_body, answers, field_task_id, captured_at, received_at, review_state, revision)
            VALUES ('rsp_1', 'org_1', 'old-body-1', 'usr_1', 'srv_1', 'ver_1', 'sha256:x', ?, '{"q1":1}', NULL, NULL, 1, 'none', 1)
            """, [.blob(body)])
        let db = try Database(.init(path: dir.db))
        defer { db.close() }
        let stored = try #require(try db.read { try $0.response(orgId: "org_1", clientSubmissionId: "old-body-1") })
        #expect(stored.requestSHA256 == Digest.sha256(body))
        #expect(try conn.query("SELECT 1 FROM sqlite_master WHERE name = 'responses_task'").isEmpty)
        #expect(try conn.query("SELECT request_body FROM responses").first?.blob("request_body") == body)
    }

    @Test func reopeningRunsNothingTwiceAndKeepsData() throws {
        let dir = TempDir()
        let first = try Database(.init(path: dir.db))
        _ = try first.securityWrite(orgId: "org_1", actor: "test") { tx in try tx.createOrg(orgId: "org_1", name: "A", expiresAt: 1) }
        first.close()
        let second = try Database(.init(path: dir.db))
        #expect(try second.read { try $0.org("org_1") }?.name == "A")
        second.close()
        let conn = try Connection(path: dir.db, readOnly: true)
        #expect(try conn.query("SELECT COUNT(*) AS n FROM schema_migrations").first?.int("n") == Int64(Migrations.steps.count))
    }

    @Test func newerSchemaIsRefusedAndLeftUntouched() throws {
        let dir = TempDir()
        try Database(.init(path: dir.db)).close()
        let future = Int64(Migrations.steps.count + 1)
        do {
            let conn = try Connection(path: dir.db, readOnly: false)
            try conn.run("INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, 'from-the-future', 0)", [.int(future)])
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: dir.db))
        #expect {
            _ = try Database(.init(path: dir.db))
        } throws: { error in
            "\(error)".contains("newer surveyd") && "\(error)".contains("schema version \(future)")
        }
        let conn = try Connection(path: dir.db, readOnly: true)
        #expect(try conn.query("SELECT MAX(version) AS version FROM schema_migrations").first?.int("version") == future)
        _ = before
    }

    @Test func synchronousIsFullByDefaultAndConfigurable() throws {
        let dir = TempDir()
        let db = try Database(.init(path: dir.db))
        #expect(db.configuration.synchronous == "FULL")
        let sync = try db.writer.submit { conn in try (conn as! Connection).pragma("synchronous") }
        #expect(sync == "2")  // FULL
        db.close()
        let normal = try Database(.init(path: dir.db, synchronous: "NORMAL"))
        #expect(try normal.writer.submit { conn in try (conn as! Connection).pragma("synchronous") } == "1")
        normal.close()
        #expect(throws: StorageError.self) { _ = try Database(.init(path: dir.db, synchronous: "SOMETIMES")) }
    }
}
