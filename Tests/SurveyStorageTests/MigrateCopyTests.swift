import Foundation
import Testing
@testable import SurveyStorage

/// `surveyd migrate` sends the rows with COPY, in text format: every awkward character of text
/// and every byte of a blob arrives as it was, and a row the target refuses leaves the target as
/// empty as it found it (one transaction).
@Suite struct MigrateCopyTests {
    /// Text with each of COPY's escapes, a NUL, U+10FFFF, non-ASCII and something that looks
    /// like COPY's NULL marker.
    static let awkward = "tab\there\nnew line\r\\N back\\slash \u{0} nul é 中文 \u{10FFFF} end\\"

    static func dataDir(_ dir: TempDir) throws -> DataDirectory {
        let layout = DataDirectory(dir.path)
        let db = try Database(.init(path: layout.database))
        _ = try db.securityWrite(orgId: "org_1", actor: "t") { tx in try tx.createOrg(orgId: "org_1", name: Self.awkward, expiresAt: 1) }
        db.close()
        return layout
    }

    @Test func textAndBytesArriveAsTheyWere() throws {
        let dir = TempDir()
        let layout = try Self.dataDir(dir)
        let conn = try Connection(path: layout.database, readOnly: false)
        try conn.run("INSERT INTO users(user_id, org_id, name, roles, created_at, email) VALUES ('usr_1', 'org_1', ?, 'admin', -5, NULL)",
                     [.text("")])
        let key = try conn.query("SELECT key FROM export_cursor_key").first?.blob("key")
        try PostgresConnectionTests.withCluster { url in
            let summary = try MigrateToPostgres.run(dataDir: dir.path, to: url)
            #expect(summary.check.ok, "\(summary.check.text)")
            let pg = try PostgresConnection(url: url)
            #expect(try pg.query("SELECT name FROM orgs WHERE org_id = 'org_1'").first?.string("name") == Self.awkward)
            let user = try #require(try pg.query("SELECT name, email, created_at FROM users WHERE user_id = 'usr_1'").first)
            #expect(try user.string("name") == "" && user.optionalString("email") == nil && user.int("created_at") == -5)
            #expect(try pg.query("SELECT key FROM export_cursor_key").first?.blob("key") == key)
        }
    }

    @Test func aRowTheTargetRefusesLeavesItEmpty() throws {
        let dir = TempDir()
        let layout = try Self.dataDir(dir)
        // A user of an organization that does not exist (SQLite enforces no foreign key here).
        let conn = try Connection(path: layout.database, readOnly: false)
        try conn.run("INSERT INTO users(user_id, org_id, name, roles, created_at) VALUES ('usr_x', 'org_missing', 'X', 'admin', 1)")
        try PostgresConnectionTests.withCluster { url in
            #expect(throws: PostgresError.self) { try MigrateToPostgres.run(dataDir: dir.path, to: url) }
            let pg = try PostgresConnection(url: url)
            for table in MigrateToPostgres.tables where !MigrateToPostgres.ownKeys.contains(table) {
                #expect(try pg.query("SELECT COUNT(*) AS n FROM \(table)").first?.int("n") == 0, "\(table)")
            }
        }
    }
}
