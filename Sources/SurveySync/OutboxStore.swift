import Foundation
import Synchronization

/// The outbox's SQLite file: every read and write of commands and owners, one connection behind a
/// mutex. Writes that matter are in transactions with `synchronous=FULL`, so a commit is on disk
/// before the call returns.
final class OutboxStore: Sendable {
    private let db: Mutex<SQLiteDatabase>
    let path: String

    /// Opens (creating or migrating) the store and reads it whole once, so damage is found now and
    /// not in the middle of a sync. Throws `SQLiteError` or `OutboxError` for a store that cannot
    /// be read; the caller quarantines it.
    init(path: String, maxPageCount: Int? = nil) throws {
        let connection = try SQLiteDatabase(path: path)
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA synchronous=FULL")
        if let maxPageCount { try connection.execute("PRAGMA max_page_count=\(maxPageCount)") }
        let check = try connection.query("PRAGMA quick_check").first?.first?.string
        guard check == "ok" else { throw OutboxError.unreadable(check ?? "quick_check answered nothing") }
        try OutboxSchema.migrate(connection)
        _ = try connection.query("SELECT \(Self.columns) FROM commands").map(Self.command)
        self.path = path
        db = Mutex(connection)
    }

    func close() { db.withLock { $0.close() } }

    // MARK: commands

    static let columns = """
        id, server, organization, user, kind, title, method, path, headers, body, file_path, file_size, file_sha256,
        depends_on, state, attempts, next_attempt_at, ambiguous, last_answer, attention, response_id, revision,
        upload_location, upload_offset, captured_at, updated_at
        """

    static func command(_ row: [SQLValue]) throws -> OutboxCommand {
        guard row.count == 26, let id = row[0].string, let kindText = row[4].string, let kind = CommandKind(rawValue: kindText),
              let stateText = row[14].string, let state = CommandState(rawValue: stateText) else {
            throw OutboxError.unreadable("a command row does not read back")
        }
        return OutboxCommand(
            id: id, owner: Owner(server: row[1].string ?? "", organization: row[2].string ?? "", user: row[3].string ?? ""),
            kind: kind, title: row[5].string ?? "", method: row[6].string ?? "POST", path: row[7].string ?? "",
            headers: JSONText.decode([String: String].self, row[8].string, default: [:]), body: row[9].bytes ?? [],
            filePath: row[10].string, fileSize: row[11].int ?? 0, fileSHA256: row[12].string,
            dependsOn: JSONText.decode([String].self, row[13].string, default: []), state: state,
            attempts: Int(row[15].int ?? 0), nextAttemptAt: Date(timeIntervalSince1970: row[16].double ?? 0),
            ambiguous: row[17].int == 1, lastAnswer: row[18].string,
            attention: JSONText.decode([String].self, row[19].string, default: []), responseId: row[20].string,
            revision: row[21].int.map(Int.init), uploadLocation: row[22].string, uploadOffset: row[23].int ?? 0,
            capturedAt: Date(timeIntervalSince1970: row[24].double ?? 0), updatedAt: Date(timeIntervalSince1970: row[25].double ?? 0))
    }

    /// Commits the commands of one user action together: all of them or none.
    func insert(_ commands: [OutboxCommand]) throws {
        try db.withLock { db in
            try db.transaction {
                for c in commands {
                    try db.query("""
                        INSERT INTO commands(id, server, organization, user, kind, title, method, path, headers, body, file_path,
                            file_size, file_sha256, depends_on, state, attempts, next_attempt_at, ambiguous, attention,
                            captured_at, updated_at)
                        VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, 0, '[]', ?, ?)
                        """, [.text(c.id), .text(c.owner.server), .text(c.owner.organization), .text(c.owner.user),
                              .text(c.kind.rawValue), .text(c.title), .text(c.method), .text(c.path),
                              .text(JSONText.encode(c.headers)), .blob(c.body), c.filePath.map(SQLValue.text) ?? .null,
                              .integer(c.fileSize), c.fileSHA256.map(SQLValue.text) ?? .null,
                              .text(JSONText.encode(c.dependsOn)), .text(c.state.rawValue),
                              .real(c.nextAttemptAt.timeIntervalSince1970), .real(c.capturedAt.timeIntervalSince1970),
                              .real(c.updatedAt.timeIntervalSince1970)])
                }
            }
        }
    }

    func commands(of owner: Owner) throws -> [OutboxCommand] {
        try db.withLock { db in
            try db.query("SELECT \(Self.columns) FROM commands WHERE server = ? AND organization = ? AND user = ? ORDER BY seq",
                         [.text(owner.server), .text(owner.organization), .text(owner.user)]).map(Self.command)
        }
    }

    func allCommands() throws -> [OutboxCommand] {
        try db.withLock { db in try db.query("SELECT \(Self.columns) FROM commands ORDER BY seq").map(Self.command) }
    }

    func command(_ id: String) throws -> OutboxCommand? {
        try db.withLock { db in try db.query("SELECT \(Self.columns) FROM commands WHERE id = ?", [.text(id)]).first.map(Self.command) }
    }

    /// Writes back what the engine learnt about a command (everything but the captured request).
    func update(_ c: OutboxCommand) throws {
        try db.withLock { db in
            _ = try db.query("""
                UPDATE commands SET state = ?, attempts = ?, next_attempt_at = ?, ambiguous = ?, last_answer = ?, attention = ?,
                    response_id = ?, revision = ?, upload_location = ?, upload_offset = ?, updated_at = ?
                WHERE id = ?
                """, [.text(c.state.rawValue), .integer(Int64(c.attempts)), .real(c.nextAttemptAt.timeIntervalSince1970),
                      .integer(c.ambiguous ? 1 : 0), c.lastAnswer.map(SQLValue.text) ?? .null, .text(JSONText.encode(c.attention)),
                      c.responseId.map(SQLValue.text) ?? .null, c.revision.map { .integer(Int64($0)) } ?? .null,
                      c.uploadLocation.map(SQLValue.text) ?? .null, .integer(c.uploadOffset),
                      .real(c.updatedAt.timeIntervalSince1970), .text(c.id)])
        }
    }

    /// A person discarded a command (only offered for ones that need attention).
    func delete(_ id: String) throws {
        try db.withLock { db in _ = try db.query("DELETE FROM commands WHERE id = ?", [.text(id)]) }
    }

    // MARK: owners and organizations

    struct OwnerRecord: Sendable {
        var changesCursor: String?
        /// SHA-256 of the token the server refused (401), never the token: that token will not be
        /// used again; signing in with another lifts it.
        var refusedTokenSHA256: String?
        var lastSyncAt: Date?
    }

    func ownerRecord(_ owner: Owner) throws -> OwnerRecord {
        try db.withLock { db in
            let row = try db.query("SELECT changes_cursor, refused_token_sha256, last_sync_at FROM owners WHERE server = ? AND organization = ? AND user = ?",
                                   [.text(owner.server), .text(owner.organization), .text(owner.user)]).first
            guard let row else { return OwnerRecord(changesCursor: nil, refusedTokenSHA256: nil, lastSyncAt: nil) }
            return OwnerRecord(changesCursor: row[0].string, refusedTokenSHA256: row[1].string,
                               lastSyncAt: row[2].double.map { Date(timeIntervalSince1970: $0) })
        }
    }

    func saveOwnerRecord(_ owner: Owner, _ record: OwnerRecord) throws {
        try db.withLock { db in
            _ = try db.query("""
                INSERT INTO owners(server, organization, user, changes_cursor, refused_token_sha256, last_sync_at) VALUES(?, ?, ?, ?, ?, ?)
                ON CONFLICT(server, organization, user) DO UPDATE SET changes_cursor = excluded.changes_cursor,
                    refused_token_sha256 = excluded.refused_token_sha256, last_sync_at = excluded.last_sync_at
                """, [.text(owner.server), .text(owner.organization), .text(owner.user), record.changesCursor.map(SQLValue.text) ?? .null,
                      record.refusedTokenSHA256.map(SQLValue.text) ?? .null, record.lastSyncAt.map { .real($0.timeIntervalSince1970) } ?? .null])
        }
    }

    func renewalRequired(server: String, organization: String) throws -> Bool {
        try db.withLock { db in
            try db.query("SELECT renewal_required FROM organizations WHERE server = ? AND organization = ?",
                         [.text(server), .text(organization)]).first?.first?.int == 1
        }
    }

    func setRenewalRequired(_ required: Bool, server: String, organization: String) throws {
        try db.withLock { db in
            _ = try db.query("""
                INSERT INTO organizations(server, organization, renewal_required) VALUES(?, ?, ?)
                ON CONFLICT(server, organization) DO UPDATE SET renewal_required = excluded.renewal_required
                """, [.text(server), .text(organization), .integer(required ? 1 : 0)])
        }
    }
}
