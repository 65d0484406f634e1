import Foundation
import Testing
@testable import SurveyStorage
import SurveyDomain

/// Rows are read by column name, and a row that does not read as its record expects fails
/// loudly, naming the column: never a "" or a 0 in its place.
@Suite struct RowDecodingTests {
    /// A database with one organization, through the real migrations and repository.
    static func withOrg(_ body: (Database, Connection) throws -> Void) throws {
        let dir = TempDir()
        let db = try Database(.init(path: dir.db))
        defer { db.close() }
        _ = try db.securityWrite(orgId: "org_1", actor: "op") { tx in try tx.createOrg(orgId: "org_1", name: "Field team", expiresAt: 5) }
        try body(db, try Connection(path: dir.db, readOnly: false))
    }

    @Test func aSelectWhoseColumnWasRenamedFailsNamingTheColumnAndTheColumnsItHas() throws {
        try Self.withOrg { _, conn in
            let row = try #require(try conn.query("SELECT org_id, name, expires_at AS expiry, created_at FROM orgs").first)
            #expect(throws: RowDecodingError.columnNotFound("expires_at", in: ["org_id", "name", "expiry", "created_at"])) {
                _ = try OrgRecord(row: row)
            }
            do {
                _ = try OrgRecord(row: row)
            } catch {
                #expect("\(error)" == "the row has no column 'expires_at' (its columns: org_id, name, expiry, created_at)")
            }
        }
    }

    /// SQLite keeps whatever type it is given: text where an integer belongs reads back as an
    /// error about that column, through the repository the services call.
    @Test func aStoredValueOfTheWrongTypeFailsNamingTheColumn() throws {
        try Self.withOrg { db, conn in
            try conn.run("UPDATE orgs SET expires_at = 'soon' WHERE org_id = 'org_1'")
            #expect(throws: RowDecodingError.typeMismatch(column: "expires_at", expected: "an integer", found: "text")) {
                _ = try db.read { try $0.org("org_1") }
            }
            try conn.run("UPDATE orgs SET expires_at = 5, name = x'00ff' WHERE org_id = 'org_1'")
            #expect(throws: RowDecodingError.typeMismatch(column: "name", expected: "text", found: "a blob")) {
                _ = try db.read { try $0.org("org_1") }
            }
        }
    }

    /// Review and task states are read as their enums, once, here: a stored name that is no
    /// case is an error naming the column and the value, never a state chosen for it.
    @Test func aStoredStateThatIsNoCaseFailsNamingTheColumn() throws {
        try Self.withOrg { db, conn in
            try conn.run("""
                INSERT INTO responses(response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id,
                    request_digest, request_body, answers, received_at, review_state, revision)
                VALUES ('rsp_1', 'org_1', 'csid-1', 'usr_1', 'srv_1', 'sv_1', 'sha256:x', x'', '{}', 1, 'pending', 1)
                """)
            #expect(throws: RowDecodingError.unknownValue(column: "review_state", value: "pending", type: "ReviewState")) {
                _ = try db.read { try $0.response(orgId: "org_1", responseId: "rsp_1") }
            }
            try conn.run("UPDATE responses SET review_state = 'in_review'")
            #expect(try db.read { try $0.response(orgId: "org_1", responseId: "rsp_1") }?.reviewState == .inReview)
            try conn.run("""
                INSERT INTO tasks(task_id, org_id, title, survey_id, assignee_user_id, state, created_by, created_at)
                VALUES ('tsk_1', 'org_1', 'T', 'srv_1', 'usr_1', 'done', 'usr_1', 1)
                """)
            #expect(throws: RowDecodingError.unknownValue(column: "state", value: "done", type: "TaskState")) {
                _ = try db.read { try $0.task(orgId: "org_1", taskId: "tsk_1") }
            }
        }
    }

    @Test func nullReadsOnlyAsAnOptional() throws {
        try Self.withOrg { _, conn in
            let row = try #require(try conn.query("SELECT NULL AS completed_at, 7 AS size").first)
            #expect(try row.optionalInt("completed_at") == nil)
            #expect(throws: RowDecodingError.typeMismatch(column: "completed_at", expected: "an integer", found: "NULL")) {
                _ = try row.int("completed_at")
            }
            let size: Int64 = try row["size"]
            #expect(size == 7)
            let optionalSize: Int64? = try row["size"]
            #expect(optionalSize == 7)
            #expect(throws: RowDecodingError.typeMismatch(column: "size", expected: "text", found: "an integer")) {
                _ = try row.optionalString("size")
            }
        }
    }

    /// Of two columns of one name the first is read, whatever was read before it.
    @Test func theFirstOfTwoColumnsOfOneNameIsRead() throws {
        try Self.withOrg { _, conn in
            let row = try #require(try conn.query("SELECT 1 AS a, 2 AS b, 3 AS a").first)
            #expect(try row.int("b") == 2)
            #expect(try row.int("a") == 1)
            #expect(try row.int("a") == 1)
        }
    }

    /// PostgreSQL gives its rows their names too (PQfname).
    @Test func postgresRowsAreReadByNameAndARenamedColumnFails() throws {
        try PostgresConnectionTests.withCluster { url in
            let c = try PostgresConnection(url: url)
            let row = try #require(try c.query("SELECT 'org_1' AS org_id, 'A' AS name, 5::bigint AS expiry, 1::bigint AS created_at").first)
            #expect(row.columns.names == ["org_id", "name", "expiry", "created_at"])
            #expect(try row.string("org_id") == "org_1")
            #expect(throws: RowDecodingError.columnNotFound("expires_at", in: ["org_id", "name", "expiry", "created_at"])) {
                _ = try OrgRecord(row: row)
            }
        }
    }
}
