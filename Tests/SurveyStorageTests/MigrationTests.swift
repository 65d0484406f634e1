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
        let names = try conn.query("SELECT name FROM schema_migrations ORDER BY version").map { $0.string(0) }
        #expect(names == Migrations.steps.map(\.name))
        for table in ["orgs", "users", "tokens", "audit", "surveys", "survey_versions", "responses"] {
            #expect(try !conn.query("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", [.text(table)]).isEmpty, "\(table)")
        }
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
        #expect(try conn.query("SELECT COUNT(*) FROM schema_migrations").first?.int(0) == Int64(Migrations.steps.count))
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
        #expect(try conn.query("SELECT MAX(version) FROM schema_migrations").first?.int(0) == future)
        _ = before
    }

    @Test func synchronousIsFullByDefaultAndConfigurable() throws {
        let dir = TempDir()
        let db = try Database(.init(path: dir.db))
        #expect(db.configuration.synchronous == "FULL")
        let sync = try db.writer.submit { conn in try conn.pragma("synchronous") }
        #expect(sync == "2")  // FULL
        db.close()
        let normal = try Database(.init(path: dir.db, synchronous: "NORMAL"))
        #expect(try normal.writer.submit { conn in try conn.pragma("synchronous") } == "1")
        normal.close()
        #expect(throws: SQLiteError.self) { _ = try Database(.init(path: dir.db, synchronous: "SOMETIMES")) }
    }
}
