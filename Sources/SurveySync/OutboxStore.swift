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

    /// Commits the commands of one user action together: all of them or none. `entityChanges`:
    /// by command id, what the command does to an entity, shown on the phone until the server's copy shows it.
    func insert(_ commands: [OutboxCommand], entityChanges: [String: CapturedEntityChange] = [:]) throws {
        try db.withLock { db in
            try db.transaction {
                for c in commands {
                    let change = entityChanges[c.id]
                    try db.query("""
                        INSERT INTO commands(id, server, organization, user, kind, title, method, path, headers, body, file_path,
                            file_size, file_sha256, depends_on, state, attempts, next_attempt_at, ambiguous, attention,
                            captured_at, updated_at, entity_list, entity_change)
                        VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, 0, '[]', ?, ?, ?, ?)
                        """, [.text(c.id), .text(c.owner.server), .text(c.owner.organization), .text(c.owner.user),
                              .text(c.kind.rawValue), .text(c.title), .text(c.method), .text(c.path),
                              .text(JSONText.encode(c.headers)), .blob(c.body), c.filePath.map(SQLValue.text) ?? .null,
                              .integer(c.fileSize), c.fileSHA256.map(SQLValue.text) ?? .null,
                              .text(JSONText.encode(c.dependsOn)), .text(c.state.rawValue),
                              .real(c.nextAttemptAt.timeIntervalSince1970), .real(c.capturedAt.timeIntervalSince1970),
                              .real(c.updatedAt.timeIntervalSince1970),
                              change.map { .text($0.list) } ?? .null, change.map { .text(JSONText.encode($0)) } ?? .null])
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

    // MARK: entity lists

    /// The owner's copy of a list as last downloaded: its `ETag` and entities; nil: never downloaded.
    func entityList(_ owner: Owner, _ name: String) throws -> (etag: String?, list: ServerEntityList)? {
        try db.withLock { db in
            let key: [SQLValue] = [.text(owner.server), .text(owner.organization), .text(owner.user), .text(name)]
            guard let row = try db.query("SELECT etag, properties FROM entity_lists WHERE server = ? AND organization = ? AND user = ? AND name = ?",
                                         key).first, row.count == 2 else { return nil }
            let entities = try db.query("""
                SELECT id, label, version, properties FROM entities WHERE server = ? AND organization = ? AND user = ? AND list = ?
                ORDER BY position
                """, key).map { row -> ServerEntity in
                guard row.count == 4, let id = row[0].string, let version = row[2].int else {
                    throw OutboxError.unreadable("an entity row does not read back")
                }
                return ServerEntity(id: id, label: row[1].string ?? "", version: Int(version),
                                    properties: JSONText.decode([String: String].self, row[3].string, default: [:]))
            }
            return (row[0].string, ServerEntityList(properties: JSONText.decode([String].self, row[1].string, default: []), entities: entities))
        }
    }

    /// The changes of the owner's commands to entities of `list` that the phone's copy does not
    /// show yet, in capture order.
    func pendingEntityChanges(_ owner: Owner, list: String) throws -> [CapturedEntityChange] {
        try db.withLock { db in
            try db.query("""
                SELECT entity_change FROM commands
                WHERE server = ? AND organization = ? AND user = ? AND entity_list = ? AND entity_settled = 0 ORDER BY seq
                """, [.text(owner.server), .text(owner.organization), .text(owner.user), .text(list)])
                .compactMap { row in row.first?.string.flatMap { JSONText.decode(CapturedEntityChange?.self, $0, default: nil) } }
        }
    }

    /// Commands with a change to `list` that the server holds and the phone's copy may not show
    /// yet: a download that starts now shows them, so they are settled with it.
    func heldUnsettledEntityCommands(_ owner: Owner, list: String) throws -> [String] {
        let held = CommandState.allCases.filter(\.isHeldByServer).map { SQLValue.text($0.rawValue) }
        return try db.withLock { db in
            try db.query("""
                SELECT id FROM commands WHERE server = ? AND organization = ? AND user = ? AND entity_list = ? AND entity_settled = 0
                AND state IN (\(held.map { _ in "?" }.joined(separator: ", ")))
                """, [.text(owner.server), .text(owner.organization), .text(owner.user), .text(list)] + held).compactMap { $0.first?.string }
        }
    }

    /// Replaces the owner's copy of a list in one transaction (a crash keeps the previous copy
    /// whole) and settles the commands it shows. `list` nil: the server said the copy is current.
    func saveEntityList(_ owner: Owner, _ name: String, etag: String?, list: ServerEntityList?, settling: [String], at moment: Date) throws {
        try db.withLock { db in
            try db.transaction {
                let key: [SQLValue] = [.text(owner.server), .text(owner.organization), .text(owner.user), .text(name)]
                if let list {
                    try db.query("DELETE FROM entities WHERE server = ? AND organization = ? AND user = ? AND list = ?", key)
                    for (position, e) in list.entities.enumerated() {
                        try db.query("""
                            INSERT INTO entities(server, organization, user, list, position, id, label, version, properties)
                            VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)
                            """, key + [.integer(Int64(position)), .text(e.id), .text(e.label), .integer(Int64(e.version)),
                                        .text(JSONText.encode(e.properties))])
                    }
                    try db.query("""
                        INSERT INTO entity_lists(server, organization, user, name, etag, properties, refreshed_at) VALUES(?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(server, organization, user, name) DO UPDATE SET etag = excluded.etag, properties = excluded.properties,
                            refreshed_at = excluded.refreshed_at
                        """, key + [etag.map(SQLValue.text) ?? .null, .text(JSONText.encode(list.properties)), .real(moment.timeIntervalSince1970)])
                } else {
                    try db.query("UPDATE entity_lists SET refreshed_at = ? WHERE server = ? AND organization = ? AND user = ? AND name = ?",
                                 [.real(moment.timeIntervalSince1970)] + key)
                }
                for id in settling { try db.query("UPDATE commands SET entity_settled = 1 WHERE id = ?", [.text(id)]) }
            }
        }
    }
}
