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
        try conn.execute(try #require(Migrations.steps[0].sql(for: .sqlite)))
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

    /// Organizations and users that exist before the integer ids get theirs in creation order
    /// (a tie broken by the text id), and the next ones continue the sequence, never reusing one.
    @Test func existingRowsGetIntegerIdsInCreationOrderAndNewOnesContinue() throws {
        let dir = TempDir()
        let conn = try Connection(path: dir.db, readOnly: false)
        try conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")
        let before = try #require(Migrations.steps.firstIndex { $0.name == "integer-ids" })
        for (i, step) in Migrations.steps[..<before].enumerated() {
            if let sql = step.sql(for: .sqlite) { try conn.execute(sql) }
            try conn.run("INSERT INTO schema_migrations VALUES (?, ?, 0)", [.int(Int64(i + 1)), .text(step.name)])
        }
        for (org, at) in [("org_b", 20), ("org_a", 30), ("org_c", 10), ("org_0", 30)] {
            try conn.run("INSERT INTO orgs(org_id, name, expires_at, created_at) VALUES (?, ?, 0, ?)", [.text(org), .text(org), .int(Int64(at))])
        }
        for (user, at) in [("usr_2", 5), ("usr_1", 7), ("usr_3", 5)] {
            try conn.run("INSERT INTO users(user_id, org_id, name, roles, created_at) VALUES (?, 'org_a', ?, 'admin', ?)", [.text(user), .text(user), .int(Int64(at))])
        }
        let db = try Database(.init(path: dir.db))
        defer { db.close() }
        let projects = try db.read { db in try ["org_c", "org_b", "org_0", "org_a"].map { try db.org($0)?.projectId } }
        #expect(projects == [1, 2, 3, 4])
        let actors = try db.read { db in try ["usr_2", "usr_3", "usr_1"].map { try db.user($0)?.actorId } }
        #expect(actors == [1, 2, 3])
        let next = try db.securityWrite(orgId: "org_d", actor: "test") { tx in try tx.createOrg(orgId: "org_d", name: "D", expiresAt: 1) }
        #expect(next.projectId == 5)
        let user = try db.securityWrite(orgId: "org_d", actor: "test") { tx in try tx.createUser(userId: "usr_4", orgId: "org_d", name: "U", roles: ["admin"]) }
        #expect(user.actorId == 4)
        // A creation that rolls back gives its number back: none is skipped or used twice.
        #expect(throws: (any Error).self) {
            try db.securityWrite(orgId: "org_d", actor: "test") { tx in
                _ = try tx.createOrg(orgId: "org_e", name: "E", expiresAt: 1)
                throw ApiError(.internalError, "rolled back")
            }
        }
        #expect(try db.securityWrite(orgId: "org_f", actor: "test") { tx in try tx.createOrg(orgId: "org_f", name: "F", expiresAt: 1) }.projectId == 6)
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

    /// Steps are known by name, not by how many there are: a database whose last step is one
    /// this build lacks is refused even when its count matches, with a sentence naming it.
    @Test func anUnknownAppliedMigrationNameStopsStartUpWithASentenceNamingIt() throws {
        let dir = TempDir()
        try Database(.init(path: dir.db)).close()
        let last = Int64(Migrations.steps.count)
        do {
            let conn = try Connection(path: dir.db, readOnly: false)
            try conn.run("UPDATE schema_migrations SET name = 'sealed-exports' WHERE version = ?", [.int(last)])
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: dir.db))
        #expect {
            _ = try Database(.init(path: dir.db))
        } throws: { error in
            "\(error)".hasPrefix("""
                This database has migration 'sealed-exports' applied, which this surveyd does not know: it was written by a \
                newer surveyd. Run that version, or restore a backup made before it.
                """)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.db)) == before)
    }

    /// A step this build has that the database never applied runs, wherever it stands in the
    /// list (a database may have met the steps in another order); the others do not run again.
    @Test func aStepNotAppliedRunsWhereverItStandsAndTheOthersDoNotRunAgain() throws {
        let dir = TempDir()
        try Database(.init(path: dir.db)).close()
        do {
            let conn = try Connection(path: dir.db, readOnly: false)
            try conn.execute("DROP INDEX responses_survey; DELETE FROM schema_migrations WHERE name = 'responses-by-survey'")
        }
        let db = try Database(.init(path: dir.db))  // every other step would fail if it ran again (its tables exist)
        db.close()
        let conn = try Connection(path: dir.db, readOnly: true)
        #expect(try !conn.query("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'responses_survey'").isEmpty)
        let names = try conn.query("SELECT name FROM schema_migrations ORDER BY version").map { try $0.string("name") }
        #expect(Set(names) == Set(Migrations.steps.map(\.name)) && names.count == Migrations.steps.count)
        #expect(names.last == "responses-by-survey")
    }

    /// A step that fails part-way is rolled back whole: nothing it did before the failing
    /// statement stays, its name is not recorded, the start is refused with the cause; once the
    /// cause is gone, the next start runs the step again from its beginning.
    @Test func aStepThatFailsPartWayIsRolledBackWholeAndRunsAgainAtTheNextStart() throws {
        let dir = TempDir()
        do {
            let db = try Database(.init(path: dir.db))
            _ = try db.securityWrite(orgId: "org_1", actor: "test") { tx in try tx.createOrg(orgId: "org_1", name: "A", expiresAt: 1) }
            db.close()
        }
        // The database as it was before the console step, with an object of its own named as the
        // step's last table: the step's ALTERs and first tables succeed, then it fails.
        do {
            let conn = try Connection(path: dir.db, readOnly: false)
            try conn.execute("""
                DROP TABLE console_sessions; DROP TABLE invitations; DROP INDEX users_email;
                ALTER TABLE users DROP COLUMN password_hash; ALTER TABLE users DROP COLUMN email;
                DELETE FROM schema_migrations WHERE name = 'console';
                CREATE TABLE console_sessions (note TEXT);
                """)
        }
        func columns(_ conn: Connection) throws -> [String] {
            try conn.query("SELECT name FROM pragma_table_info('users') ORDER BY cid").map { try $0.string("name") }
        }
        #expect {
            _ = try Database(.init(path: dir.db))
        } throws: { error in
            "\(error)".contains("console_sessions already exists")
        }
        do {
            let conn = try Connection(path: dir.db, readOnly: true)
            #expect(try !columns(conn).contains("email"), "the step's first statements were rolled back")
            #expect(try conn.query("SELECT 1 FROM sqlite_master WHERE name IN ('invitations', 'users_email', 'invitations_user')").isEmpty)
            #expect(try conn.query("SELECT 1 FROM schema_migrations WHERE name = 'console'").isEmpty)
            #expect(try conn.query("SELECT name FROM orgs").map { try $0.string("name") } == ["A"], "the data is as it was")
        }
        do {
            let conn = try Connection(path: dir.db, readOnly: false)
            try conn.execute("DROP TABLE console_sessions")
        }
        let db = try Database(.init(path: dir.db))
        db.close()
        let conn = try Connection(path: dir.db, readOnly: true)
        #expect(try columns(conn).suffix(2) == ["email", "password_hash"])
        #expect(try conn.query("SELECT name FROM schema_migrations WHERE name = 'console'").count == 1)
        #expect(try !conn.query("SELECT 1 FROM pragma_table_info('console_sessions') WHERE name = 'csrf_token'").isEmpty)
    }

    /// PostgreSQL's text is written out where it differs; a step that is one engine's alone is
    /// recorded on the other with nothing run.
    @Test func eachStepHasEachEnginesText() throws {
        #expect(Set(Migrations.steps.map(\.name)).count == Migrations.steps.count)
        let postgresOnly = Migrations.steps.filter { $0.sql(for: .sqlite) == nil }.map(\.name)
        #expect(postgresOnly == ["files-in-database", "keyed-in-flight", "sign-in-attempts", "responses-replay-index"])
        let sqliteOnly = Migrations.steps.filter { $0.sql(for: .postgres) == nil }.map(\.name)
        #expect(sqliteOnly == ["entity-search"])
        for step in Migrations.steps where !sqliteOnly.contains(step.name) {
            let pg = try #require(step.sql(for: .postgres))
            #expect(!pg.contains("INTEGER") && !pg.contains("BLOB") && !pg.contains("WITHOUT ROWID") && !pg.contains("randomblob"), "\(step.name)")
        }
        let dir = TempDir()
        try Database(.init(path: dir.db)).close()
        let conn = try Connection(path: dir.db, readOnly: true)
        #expect(try conn.query("SELECT 1 FROM sqlite_master WHERE name IN ('blob_chunks', 'keyed_in_flight', 'sign_in_attempts')").isEmpty)
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
