import Foundation

/// The store's layout and how an older one becomes the current one. `PRAGMA user_version` holds
/// the version; a store is migrated in one transaction, so an interrupted migration leaves the
/// older version whole and is simply run again.
enum OutboxSchema {
    static let current: Int64 = 3

    static let version2 = """
    CREATE TABLE commands(
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        server TEXT NOT NULL, organization TEXT NOT NULL, user TEXT NOT NULL,
        kind TEXT NOT NULL, title TEXT NOT NULL DEFAULT '',
        method TEXT NOT NULL, path TEXT NOT NULL, headers TEXT NOT NULL DEFAULT '{}', body BLOB NOT NULL,
        file_path TEXT, file_size INTEGER NOT NULL DEFAULT 0, file_sha256 TEXT,
        depends_on TEXT NOT NULL DEFAULT '[]',
        state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL NOT NULL DEFAULT 0,
        ambiguous INTEGER NOT NULL DEFAULT 0, last_answer TEXT, attention TEXT NOT NULL DEFAULT '[]',
        response_id TEXT, revision INTEGER,
        upload_location TEXT, upload_offset INTEGER NOT NULL DEFAULT 0,
        captured_at REAL NOT NULL, updated_at REAL NOT NULL);
    CREATE INDEX commands_owner ON commands(server, organization, user, state);
    CREATE INDEX commands_response ON commands(response_id);
    CREATE TABLE owners(
        server TEXT NOT NULL, organization TEXT NOT NULL, user TEXT NOT NULL,
        changes_cursor TEXT, refused_token_sha256 TEXT, last_sync_at REAL,
        PRIMARY KEY(server, organization, user));
    CREATE TABLE organizations(
        server TEXT NOT NULL, organization TEXT NOT NULL, renewal_required INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY(server, organization));
    """

    /// Version 3: the device's copies of entity lists (per owner, replaced whole by each download)
    /// and, on each command, the entity change the phone shows until the server's copy does.
    static let version3 = """
    ALTER TABLE commands ADD COLUMN entity_list TEXT;
    ALTER TABLE commands ADD COLUMN entity_change TEXT;
    ALTER TABLE commands ADD COLUMN entity_settled INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX commands_entity_list ON commands(server, organization, user, entity_list);
    CREATE TABLE entity_lists(
        server TEXT NOT NULL, organization TEXT NOT NULL, user TEXT NOT NULL, name TEXT NOT NULL,
        etag TEXT, properties TEXT NOT NULL DEFAULT '[]', refreshed_at REAL NOT NULL,
        PRIMARY KEY(server, organization, user, name));
    CREATE TABLE entities(
        server TEXT NOT NULL, organization TEXT NOT NULL, user TEXT NOT NULL, list TEXT NOT NULL,
        position INTEGER NOT NULL, id TEXT NOT NULL, label TEXT NOT NULL, version INTEGER NOT NULL,
        properties TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY(server, organization, user, list, id));
    """

    /// Brings `db` to the current version. Throws for a store written by a newer library (it is
    /// left untouched: never dropped, never downgraded).
    static func migrate(_ db: SQLiteDatabase) throws {
        let version = try db.query("PRAGMA user_version").first?.first?.int ?? 0
        if version == current { return }
        if version > current { throw OutboxError.newerStore(version: Int(version)) }
        try db.transaction {
            switch version {
            case 0:
                // A new store, unless it holds tables of an unknown layout.
                let tables = try db.query("SELECT count(*) FROM sqlite_master WHERE type='table'").first?.first?.int ?? 0
                guard tables == 0 else { throw OutboxError.unreadable("unknown tables in a store without a version") }
                try db.execute(version2)
            case 1:
                try db.execute(version2)
                try migrateVersion1Rows(db)
            case 2:
                break
            default:
                throw OutboxError.unreadable("unknown store version \(version)")
            }
            // Each step after the first layout, in order.
            try db.execute(version3)
            try db.execute("PRAGMA user_version = \(current)")
        }
    }

    /// Version 1 (the library's first layout) kept one table `outbox` of JSON writes:
    /// `client_id, server, org, user, method, path, content_type, body, status (pending|sent|failed),
    /// tries, created`. Every row becomes a command with the same id, owner and bytes.
    private static func migrateVersion1Rows(_ db: SQLiteDatabase) throws {
        let rows = try db.query("SELECT client_id, server, org, user, method, path, content_type, body, status, tries, created FROM outbox ORDER BY rowid")
        let now = Date().timeIntervalSince1970
        for row in rows {
            let path = row[5].string ?? ""
            let kind: CommandKind = path.hasSuffix("/resubmit") ? .resubmission : .response
            let status = row[8].string ?? "pending"
            let tries = row[9].int ?? 0
            let state: CommandState
            var attention: [String] = []
            switch status {
            case "sent": state = .submitted
            case "failed":
                state = .needsAttention
                attention = ["The server refused this before the app was updated. Open it to check it, then send it again or discard it."]
            default: state = tries == 0 ? .savedOnDevice : .waitingToSync
            }
            var headers = ["Content-Type": row[6].string ?? "application/json"]
            if kind == .resubmission { headers["Idempotency-Key"] = row[0].string ?? "" }
            try db.query("""
                INSERT INTO commands(id, server, organization, user, kind, method, path, headers, body, state, attempts,
                                     ambiguous, attention, captured_at, updated_at)
                VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [row[0], row[1], row[2], row[3], .text(kind.rawValue), row[4], row[5], .text(JSONText.encode(headers)),
                      .blob(row[7].bytes ?? []), .text(state.rawValue), .integer(tries),
                      // A v1 write that was tried may have arrived: reconcile before sending it again.
                      .integer(tries > 0 ? 1 : 0), .text(JSONText.encode(attention)),
                      .real(row[10].double ?? now), .real(now)])
        }
        try db.execute("DROP TABLE outbox")
    }
}
