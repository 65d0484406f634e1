import CSQLite
import Foundation
import SurveyDomain

/// `surveyd migrate --from-data-dir DIR --to-database-url URL`: everything of a SQLite data dir
/// — every row of every table and every file, unfinished resumable uploads included — into an
/// empty PostgreSQL database, in one transaction (a failed migration leaves the target empty),
/// then `check` on the result. The source is read in one snapshot and never changed; stop the
/// server on it first, or writes made meanwhile stay behind.
public enum MigrateToPostgres {
    public struct Summary: Sendable {
        public let rows: [(table: String, count: Int)]
        public let files: Int
        public let partials: Int
        public let check: IntegrityCheck.Report
    }

    /// Every table, parents before children (foreign keys are checked row by row).
    static let tables = [
        "orgs", "users", "tokens", "audit", "surveys", "survey_versions", "survey_version_sources", "survey_version_attachments", "responses", "response_versions", "response_facts", "uploads",
        "resumable_uploads", "tasks",
        "idempotency_keys", "invitations", "console_sessions", "webhooks", "webhook_deliveries", "webhook_snapshots", "webhook_identity",
        "export_cursor_key", "entity_lists", "entities", "entity_versions", "entity_waiting",
        "integer_ids", "api_sessions", "draft_responses", "draft_files", "waiting_submissions",
    ]

    /// The tables a fresh schema fills with its own values (random keys, id counters at 0); a copy
    /// brings the source's.
    static let ownKeys = ["webhook_identity", "export_cursor_key", "integer_ids"]

    /// `progress` hears of the rows, then the files, then the check, as they go.
    public static func run(dataDir: String, to url: String, progress: ProgressReport = .quiet()) throws -> Summary {
        let layout = DataDirectory(dataDir)
        guard FileManager.default.fileExists(atPath: layout.database) else { throw MaintenanceError("no database at \(layout.database); nothing was written.") }
        let source = try Connection(path: layout.database, readOnly: true)
        try source.execute("BEGIN")  // one snapshot for everything copied
        defer { try? source.execute("COMMIT") }
        let applied = try Migrations.applied(source)
        let unknown = Migrations.unknown(applied)
        guard unknown.isEmpty else { throw MaintenanceError(Migrations.refusal(unknown, version: try Migrations.currentVersion(source))) }
        let pending = Migrations.pending(applied)
        guard pending.isEmpty else {
            throw MaintenanceError("""
                the data dir lacks migration\(pending.count == 1 ? "" : "s") \(pending.map { "'\($0.name)'" }.joined(separator: ", ")); \
                start this surveyd on it once (it migrates), then migrate it. Nothing was written.
                """)
        }
        // What there is to move, counted in the snapshot that is copied.
        var totalRows: Int64 = 0
        for table in tables { totalRows += try source.query("SELECT COUNT(*) AS n FROM \(table)").first?.int("n") ?? 0 }
        let blobs = try source.query("SELECT sha256, MAX(size) AS size FROM (SELECT sha256, size FROM uploads UNION ALL SELECT sha256, size FROM survey_version_attachments UNION ALL SELECT sha256, size FROM draft_files) f GROUP BY sha256")
        let partialUploads = try source.query("""
            SELECT upload_id, received_bytes FROM resumable_uploads WHERE received_bytes < length AND received_bytes > 0
            """)
        var fileBytes: Int64 = 0
        for b in blobs { fileBytes += try b.int("size") }
        for p in partialUploads { fileBytes += try p.int("received_bytes") }

        let target = try PostgresConnection(url: url)
        try Migrations.run(on: target)
        try target.execute("BEGIN")
        var rows: [(String, Int)] = []
        var files = 0, partials = 0
        do {
            for table in tables {
                guard try target.query("SELECT 1 FROM \(table) LIMIT 1").isEmpty || Self.ownKeys.contains(table) else {
                    throw MaintenanceError("the target database already holds \(table); migrate into an empty database. Nothing was written.")
                }
            }
            // The target's own event-id salt and cursor key go: events keep the ids their
            // receivers have seen, and export cursors issued stay valid.
            for table in Self.ownKeys { try target.run("DELETE FROM \(table)") }
            progress.begin("rows", total: totalRows, unit: .rows)
            for table in tables {
                progress.at(table)
                rows.append((table, try copy(table, from: source, to: target, progress: progress)))
            }
            progress.end()
            // The audit sequence goes on after the last entry copied.
            try target.query("SELECT setval(pg_get_serial_sequence('audit', 'seq'), MAX(seq)) FROM audit HAVING MAX(seq) IS NOT NULL")
            progress.begin("files", total: Int64(blobs.count + partialUploads.count), unit: .files, totalBytes: fileBytes)
            for u in blobs {
                let sha256 = try u.string("sha256")
                try PostgresFiles.storeBlob(target, path: layout.blob(sha256: sha256), sha256: sha256)
                files += 1
                progress.advance(1, bytes: try u.int("size"))
            }
            for u in partialUploads {
                let uploadId = try u.string("upload_id"), received = try u.int("received_bytes")
                try PostgresFiles.appendPartial(target, uploadId: uploadId, start: 0, path: layout.partial(uploadId: uploadId), upTo: received)
                partials += 1
                progress.advance(1, bytes: received)
            }
            progress.end()
            progress.begin("COMMIT", total: nil)
            try target.execute("COMMIT")
            progress.end()
        } catch {
            progress.close()
            try? target.execute("ROLLBACK")
            throw error
        }
        // Statistics now: until the first ANALYZE the planner knows nothing of the rows just
        // copied, and a replay check may go through an index on the organization alone and read
        // all of its responses.
        progress.begin("ANALYZE", total: nil)
        try target.execute("ANALYZE")
        progress.end()
        progress.stage = "check: "
        defer { progress.stage = "" }
        let check = try IntegrityCheck.run(dataDir: dataDir, databaseURL: url, progress: progress)
        return Summary(rows: rows, files: files, partials: partials, check: check)
    }

    /// Copies every row of `table` with one `COPY … FROM STDIN`, column by column as SQLite
    /// holds them (bytes stay bytes; text kept in a `bytea` column goes as its bytes).
    private static func copy(_ table: String, from source: Connection, to target: PostgresConnection, progress: ProgressReport) throws -> Int {
        let columns = try source.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)]).map { try $0.string("name") }
        let binary = Set(try target.query("""
            SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND data_type = 'bytea'
            """, [.text(table)]).map { try $0.string("column_name") })
        let isBinary = columns.map(binary.contains)
        let statement = try Statement(connection: source, sql: "SELECT \(columns.joined(separator: ", ")) FROM \(table)")
        let handle = statement.handle
        var read = 0
        let copied = try target.copyIn(table: table, columns: columns) { stream in
            while true {
                let rc = sqlite3_step(handle)
                if rc == SQLITE_DONE { break }
                guard rc == SQLITE_ROW else { throw source.error(rc, sql: statement.sql) }
                for c in 0..<Int32(columns.count) {
                    switch sqlite3_column_type(handle, c) {
                    case SQLITE_INTEGER: stream.integer(sqlite3_column_int64(handle, c))
                    case SQLITE_FLOAT: stream.double(sqlite3_column_double(handle, c))
                    case SQLITE_TEXT:
                        // _text before _bytes, as SQLite asks, so the length is the UTF-8 form's.
                        let p = sqlite3_column_text(handle, c)
                        let bytes = UnsafeBufferPointer(start: p, count: p == nil ? 0 : Int(sqlite3_column_bytes(handle, c)))
                        if isBinary[Int(c)] { stream.bytea(UnsafeRawBufferPointer(bytes)) } else { stream.text(bytes) }
                    case SQLITE_BLOB:
                        guard isBinary[Int(c)] else {
                            throw MaintenanceError("\(table).\(columns[Int(c)]) holds bytes where PostgreSQL keeps text; nothing was written.")
                        }
                        let p = sqlite3_column_blob(handle, c)
                        stream.bytea(UnsafeRawBufferPointer(start: p, count: p == nil ? 0 : Int(sqlite3_column_bytes(handle, c))))
                    default: stream.null()
                    }
                }
                try stream.endRow()
                read += 1
                progress.advance()
            }
        }
        guard copied == read else { throw MaintenanceError("\(table): \(read) row(s) read but \(copied) copied; nothing was written.") }
        return copied
    }
}
