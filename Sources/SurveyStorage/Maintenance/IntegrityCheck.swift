import CSQLite
import Foundation
import SurveyDomain

/// `surveyd check`: SQLite's own integrity check plus every invariant of the contract, over the
/// database and the blob directory. Opens the database read-only and changes nothing.
public enum IntegrityCheck {
    public struct Report: Sendable {
        public var violations: [String] = []
        public var notes: [String] = []
        public var counts: [(String, Int)] = []
        public var ok: Bool { violations.isEmpty }

        public var text: String {
            var out = ok ? "surveyd check: OK\n" : "surveyd check: \(violations.count) violation(s)\n"
            for (k, v) in counts { out += "  \(k): \(v)\n" }
            for n in notes { out += "  note: \(n)\n" }
            for v in violations.prefix(200) { out += "  VIOLATION: \(v)\n" }
            if violations.count > 200 { out += "  ... and \(violations.count - 200) more\n" }
            return out
        }
    }

    /// `databaseURL`: the database is on PostgreSQL (the data dir then holds the files only).
    /// `progress` hears of each phase (the uploads' files, then the rows of each table) as it goes.
    public static func run(dataDir: String, databaseURL: String? = nil, progress: ProgressReport = .quiet()) throws -> Report {
        let layout = DataDirectory(dataDir)
        let conn: any SQLConnection
        var r = Report()
        /// PostgreSQL keeps the files too (`PostgresFiles`).
        let databaseFiles = databaseURL != nil
        if let databaseURL {
            let pg = try PostgresConnection(url: databaseURL)
            try pg.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")  // one snapshot for every query below
            conn = pg
            r.counts = try counts(conn)
            // 1. PostgreSQL checks its pages and enforces foreign keys itself (nothing to ask here).
        } else {
            let dbPath = layout.database
            guard FileManager.default.fileExists(atPath: dbPath) else {
                throw MaintenanceError("no database at \(dbPath)")
            }
            let sqlite = try Connection(path: dbPath, readOnly: true)
            try sqlite.execute("BEGIN")  // one snapshot for every query below
            conn = sqlite
            r.counts = try counts(conn)  // the first read: the snapshot starts here
            // 1. SQLite's own view of the file. One statement that tells nothing of how far it
            //    is, so the report says how long it has been at it.
            let pages = try sqlite.query("PRAGMA page_count").first?.int("page_count") ?? 0
            let pageSize = try sqlite.query("PRAGMA page_size").first?.int("page_size") ?? 0
            progress.begin("SQLite integrity_check", total: nil)
            progress.at("\(ProgressReport.megabytes(pages.multipliedReportingOverflow(by: pageSize).partialValue)) MB")
            if progress.mode != .quiet {
                sqlite3_progress_handler(sqlite.handle, 100_000, { context in
                    guard let context else { return 0 }
                    Unmanaged<ProgressReport>.fromOpaque(context).takeUnretainedValue().advance(0)
                    return 0
                }, Unmanaged.passUnretained(progress).toOpaque())
            }
            defer { sqlite3_progress_handler(sqlite.handle, 0, nil, nil) }
            let integrity = try withExtendedLifetime(progress) { try sqlite.query("PRAGMA integrity_check").map { try $0.string("integrity_check") } }
            if integrity != ["ok"] { r.violations += integrity.map { "integrity_check: \($0)" } }
            for fk in try sqlite.query("PRAGMA foreign_key_check") {
                // rowid is NULL for a WITHOUT ROWID table.
                let rowid = try fk.optionalInt("rowid").map(String.init) ?? "NULL"
                r.violations.append("foreign key: table \(try fk.string("table")) rowid \(rowid) → \(try fk.string("parent"))")
            }
            sqlite3_progress_handler(sqlite.handle, 0, nil, nil)
            progress.end()
        }
        defer { try? conn.execute("COMMIT") }
        let applied = try Migrations.applied(conn)
        for name in Migrations.unknown(applied) { r.violations.append("migration '\(name)' is applied, which this surveyd does not know (a newer surveyd's)") }
        for step in Migrations.pending(applied) { r.violations.append("migration '\(step.name)' is not applied (start this surveyd once to apply it)") }

        // 2. Uploads: every row has its file, of the right size and hash; no file without a row.
        let root = layout.blobs
        var referenced = Set<String>()
        let uploadBytes = try conn.query("SELECT COALESCE(SUM(size), 0) AS bytes FROM uploads").first?.int("bytes") ?? 0
        progress.begin("uploads", total: Int64(count("uploads", in: r)), unit: .files, totalBytes: uploadBytes)
        try forEachRow(conn, "SELECT org_id, client_upload_id, size, sha256 FROM uploads") { u in
            defer { progress.advance(1, bytes: (try? u.int("size")) ?? 0) }
            let sha = try u.string("sha256"), orgId = try u.string("org_id"), uploadId = try u.string("client_upload_id")
            let rowSize = try u.int("size")
            referenced.insert(sha)
            guard sha.utf8.count == 64 else { r.violations.append("upload \(uploadId): malformed sha256"); return }
            let path = layout.blob(sha256: sha)
            guard let (size, hash) = databaseFiles ? try hashRows(conn, sha256: sha) : hashFile(path) else {
                r.violations.append("upload \(orgId)/\(uploadId): file \(databaseFiles ? "blob_chunks " + sha : path) is missing")
                return
            }
            if Int64(size) != rowSize { r.violations.append("upload \(uploadId): file has \(size) bytes, row says \(rowSize)") }
            if hash != sha { r.violations.append("upload \(uploadId): file hash \(hash) differs from row \(sha)") }
        }
        // A version's attachments are blobs too, and so are the files of a draft's test submissions.
        func checkBlob(_ what: String, sha: String, size rowSize: Int64) throws {
            referenced.insert(sha)
            guard sha.utf8.count == 64 else { r.violations.append("\(what): malformed sha256"); return }
            guard let (size, hash) = databaseFiles ? try hashRows(conn, sha256: sha) : hashFile(layout.blob(sha256: sha)) else {
                r.violations.append("\(what): file \(databaseFiles ? "blob_chunks " + sha : layout.blob(sha256: sha)) is missing")
                return
            }
            if Int64(size) != rowSize { r.violations.append("\(what): file has \(size) bytes, row says \(rowSize)") }
            if hash != sha { r.violations.append("\(what): file hash \(hash) differs from row \(sha)") }
        }
        for a in try conn.query("SELECT survey_version_id, file_name, size, sha256 FROM survey_version_attachments") {
            try checkBlob("attachment \(try a.string("survey_version_id"))/\(try a.string("file_name"))", sha: try a.string("sha256"), size: try a.int("size"))
        }
        for d in try conn.query("SELECT response_id, client_upload_id, size, sha256 FROM draft_files") {
            try checkBlob("draft file \(try d.string("response_id"))/\(try d.string("client_upload_id"))", sha: try d.string("sha256"), size: try d.int("size"))
        }
        var blobFiles = 0
        if databaseFiles {
            for b in try conn.query("SELECT DISTINCT sha256 FROM blob_chunks") {
                blobFiles += 1
                let sha = try b.string("sha256")
                if !referenced.contains(sha) { r.violations.append("blob_chunks \(sha) has no upload row") }
            }
        }
        if let walker = FileManager.default.enumerator(atPath: root) {
            while let rel = walker.nextObject() as? String {
                var isDir: ObjCBool = false
                guard FileManager.default.fileExists(atPath: "\(root)/\(rel)", isDirectory: &isDir), !isDir.boolValue else { continue }
                blobFiles += 1
                let name = (rel as NSString).lastPathComponent
                if !referenced.contains(name) { r.violations.append("blob \(rel) has no upload row") }
            }
        }
        progress.end()
        let temps = (try? FileManager.default.contentsOfDirectory(atPath: layout.temp)) ?? []
        if !temps.isEmpty { r.notes.append("\(temps.count) temp file(s) in tmp/ (uploads in flight, or leftovers removed at the next start)") }

        // 3. Tasks: completion is all or nothing, and made by its response.
        progress.begin("tasks", total: Int64(count("tasks", in: r)), unit: .rows)
        try forEachRow(conn, """
            SELECT t.task_id, t.state, t.completed_at, t.completed_by, t.response_id, t.entity_list, t.entity_id, r.response_id AS found_response_id,
                   r.submitter, r.field_task_id, r.review_state, r.first_review_state, s.review_required
            FROM tasks t LEFT JOIN responses r ON r.response_id = t.response_id LEFT JOIN surveys s ON s.survey_id = t.survey_id
            """) { t in
            progress.advance()
            // The stored text, not `TaskState`: a state that is no case is what this reports.
            let id = try t.string("task_id"), state = try t.string("state")
            let stamps = try ["completed_at", "completed_by", "response_id"].filter { try t.value($0) != .null }.count
            // The entity a task is about: its list and id both, or neither.
            if try (t.value("entity_list") == .null) != (t.value("entity_id") == .null) {
                r.violations.append("task \(id): names an entity list without an entity id, or an id without a list")
            }
            switch state {
            case TaskState.completed.rawValue:
                if stamps != 3 { r.violations.append("task \(id): completed without completedAt, completedBy and responseId") }
                if try t.optionalString("found_response_id") == nil { r.violations.append("task \(id): completed by a response that does not exist") }
                else {
                    let reviewState = try t.string("review_state")
                    if try t.optionalString("field_task_id") != id { r.violations.append("task \(id): its response does not cite it") }
                    if try t.optionalString("completed_by") != t.optionalString("submitter") {
                        r.violations.append("task \(id): completedBy is not the response's collector")
                    }
                    // An approved response edited since keeps its task completed (`first_review_state`
                    // is set by its first edit).
                    if try t.optionalBool("review_required") == true && reviewState != ReviewState.approved.rawValue
                        && t.optionalString("first_review_state") == nil {
                        r.violations.append("task \(id): completed but its response is \(reviewState)")
                    }
                }
            case TaskState.open.rawValue:
                if stamps != 0 { r.violations.append("task \(id): open but carries completion fields") }
            default:
                r.violations.append("task \(id): unknown state \(state)")
            }
        }
        progress.end()

        // 4. Responses: every revision has exactly one audit entry, the review state is one the
        //    workflow knows (the stored text, not `ReviewState`: a state that is no case is what
        //    this reports), an edited response keeps its versions, the last its answers, and its
        //    summary facts are there, of its state, version and submitter. One
        //    pass over the responses, a row at a time.
        let states = Set(ReviewState.allCases.map(\.rawValue))
        progress.begin("responses", total: Int64(count("responses", in: r)), unit: .rows)
        try forEachRow(conn, """
            SELECT r.response_id, r.revision, r.review_state, r.survey_version_id, r.submitter, (SELECT COUNT(DISTINCT a.revision) FROM audit a
                WHERE a.org_id = r.org_id AND a.target_type = 'response' AND a.target_id = r.response_id
                  AND a.revision BETWEEN 1 AND r.revision) AS revisions_audited,
                (SELECT COUNT(*) FROM audit a WHERE a.org_id = r.org_id AND a.target_type = 'response' AND a.target_id = r.response_id) AS entries,
                r.edits, (SELECT COUNT(*) FROM response_versions v WHERE v.response_id = r.response_id) AS versions,
                CASE WHEN r.edits = 0 THEN 1 WHEN (SELECT v.answers FROM response_versions v WHERE v.response_id = r.response_id
                    ORDER BY v.number DESC LIMIT 1) = r.answers THEN 1 ELSE 0 END AS latest_kept,
                f.response_id AS facts_of, f.review_state AS facts_state, f.survey_version_id AS facts_version, f.submitter AS facts_submitter
            FROM responses r LEFT JOIN response_facts f ON f.survey_id = r.survey_id AND f.response_id = r.response_id
            """) { m in
            progress.advance()
            let revision = try m.int("revision"), audited = try m.int("revisions_audited"), entries = try m.int("entries")
            if audited != revision || entries != revision {
                r.violations.append("response \(try m.string("response_id")): revision \(revision) but \(entries) audit entries covering \(audited) revisions")
            }
            let state = try m.string("review_state")
            if !states.contains(state) { r.violations.append("response \(try m.string("response_id")): unknown review state \(state)") }
            // Its versions (kept from its first edit on): one per edit besides the submitted one,
            // the last of them its answers.
            let edits = try m.int("edits"), versions = try m.int("versions")
            if versions != (edits == 0 ? 0 : edits + 1) {
                r.violations.append("response \(try m.string("response_id")): \(edits) edits but \(versions) versions kept")
            } else if try m.int("latest_kept") != 1 {
                r.violations.append("response \(try m.string("response_id")): its answers are not its last version's")
            }
            // Its summary facts, kept with it in every transaction that changes it.
            if try m.optionalString("facts_of") == nil {
                r.violations.append("response \(try m.string("response_id")): no summary facts (the server makes them at its next start)")
            } else if try m.optionalString("facts_state") != state || m.optionalString("facts_version") != m.string("survey_version_id")
                        || m.optionalString("facts_submitter") != m.string("submitter") {
                r.violations.append("response \(try m.string("response_id")): its summary facts are of another state, version or submitter")
            }
        }
        progress.end()

        // 5. Idempotency records belong to committed writes: one audit entry by the same caller
        //    in the same transaction (same server time), and only successes are stored.
        progress.begin("idempotency keys", total: Int64(count("idempotency_keys", in: r)), unit: .rows)
        try forEachRow(conn, """
            SELECT k.idempotency_key, k.caller, k.status,
                   (SELECT COUNT(*) FROM audit a WHERE a.org_id = k.org_id AND a.actor = k.caller AND a.at = k.created_at) AS entries
            FROM idempotency_keys k
            """) { k in
            progress.advance()
            let key = try k.string("idempotency_key"), status = try k.int("status")
            if !(200..<300).contains(status) { r.violations.append("idempotency key \(key): stores a non-success \(status)") }
            if try k.int("entries") == 0 { r.violations.append("idempotency key \(key) of \(try k.string("caller")): no write committed with it") }
        }
        progress.end()

        // 6. Resumable uploads: the offset never runs past the length or ahead of the disk, and
        //    every partial file belongs to an unfinished upload (a finished one's is removed).
        var unfinished = Set<String>()
        var expired = 0
        for u in try conn.query("SELECT upload_id, length, received_bytes, expires_at FROM resumable_uploads") {
            let id = try u.string("upload_id"), length = try u.int("length"), offset = try u.int("received_bytes")
            let expiresAt = try u.int("expires_at")
            if offset > length { r.violations.append("resumable upload \(id): offset past its length") }
            if offset < length { unfinished.insert(id) }
            if offset < length && expiresAt <= Timestamp.nowMillis() { expired += 1 }
            if offset < length && expiresAt > Timestamp.nowMillis() {
                let path = layout.partial(uploadId: id)
                let size = databaseFiles
                    ? Int(try conn.query("SELECT COALESCE(SUM(length(bytes)), 0) AS bytes FROM partial_chunks WHERE upload_id = ?", [.text(id)])
                        .first?.int("bytes") ?? 0)
                    : (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1
                if size < Int(offset) { r.violations.append("resumable upload \(id): \(max(size, 0)) bytes on disk, offset \(offset)") }
            }
        }
        if databaseFiles {
            for p in try conn.query("SELECT DISTINCT upload_id FROM partial_chunks") {
                let id = try p.string("upload_id")
                if !unfinished.contains(id) { r.violations.append("partial_chunks of \(id) belong to no unfinished resumable upload") }
            }
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: layout.partial)) ?? [] where !unfinished.contains(name) {
            r.violations.append("partial/\(name) belongs to no unfinished resumable upload (a stray file; the next start removes it)")
        }
        if expired > 0 { r.notes.append("\(expired) unfinished resumable upload(s) past their expiry (removed by the next sweep)") }

        // 7. Entities agree with their versions: versions 1…n each recorded, the entity as its
        //    latest version left it, every version a submission made tied to its response, and
        //    every waiting update to the response it came with.
        let entities = Int64(try conn.query("SELECT COUNT(*) AS n FROM entities").first?.int("n") ?? 0)
        progress.begin("entities", total: entities, unit: .rows)
        try forEachRow(conn, """
            SELECT e.list_name, e.entity_id, e.version,
                (SELECT COUNT(*) FROM entity_versions v WHERE v.org_id = e.org_id AND v.list_name = e.list_name AND v.entity_id = e.entity_id
                   AND v.version BETWEEN 1 AND e.version) AS recorded,
                (SELECT COUNT(*) FROM entity_versions v WHERE v.org_id = e.org_id AND v.list_name = e.list_name AND v.entity_id = e.entity_id) AS versions,
                (SELECT COUNT(*) FROM entity_versions v WHERE v.org_id = e.org_id AND v.list_name = e.list_name AND v.entity_id = e.entity_id
                   AND v.version = e.version AND v.label = e.label AND v.properties = e.properties) AS latest
            FROM entities e
            """) { e in
            progress.advance()
            let name = "entity \(try e.string("list_name"))/\(try e.string("entity_id"))", version = try e.int("version")
            if try e.int("recorded") != version || e.int("versions") != version {
                r.violations.append("\(name): version \(version) but \(try e.int("versions")) versions recorded")
            }
            if try e.int("latest") != 1 { r.violations.append("\(name): not as its version \(version) left it") }
        }
        progress.end()
        for v in try conn.query("""
            SELECT v.list_name, v.entity_id, v.version FROM entity_versions v
            WHERE v.source = 'submission' AND NOT EXISTS (SELECT 1 FROM responses r WHERE r.org_id = v.org_id AND r.response_id = v.response_id)
            """) {
            r.violations.append("entity \(try v.string("list_name"))/\(try v.string("entity_id")): version \(try v.int("version")) names no response")
        }
        for w in try conn.query("""
            SELECT w.response_id FROM entity_waiting w
            WHERE NOT EXISTS (SELECT 1 FROM responses r WHERE r.org_id = w.org_id AND r.response_id = w.response_id)
            """) {
            r.violations.append("a waiting entity update names no response (\(try w.string("response_id")))")
        }

        r.counts.append(("blob files", blobFiles))
        return r
    }

    /// What the report counts, by name and table.
    static let counted = [("organizations", "orgs"), ("users", "users"), ("responses", "responses"), ("uploads", "uploads"),
                          ("tasks", "tasks"), ("audit entries", "audit"), ("idempotency keys", "idempotency_keys")]

    /// The rows of each counted table, taken first, in the snapshot every check reads: the
    /// report's totals and the progress report's.
    private static func counts(_ conn: any SQLConnection) throws -> [(String, Int)] {
        try counted.map { name, table in (name, Int(try conn.query("SELECT COUNT(*) AS n FROM \(table)").first?.int("n") ?? 0)) }
    }

    private static func count(_ table: String, in report: Report) -> Int {
        guard let name = counted.first(where: { $0.1 == table })?.0 else { return 0 }
        return report.counts.first { $0.0 == name }?.1 ?? 0
    }

    /// Each row of `sql`, one at a time (a cursor on PostgreSQL), never all of them in memory.
    static func forEachRow(_ conn: any SQLConnection, _ sql: String, _ body: (Row) throws -> Void) throws {
        switch conn {
        case let sqlite as Connection:
            let statement = try Statement(connection: sqlite, sql: sql)
            while let row = try statement.next() { try body(row) }
        case let pg as PostgresConnection:
            try pg.execute("DECLARE check_rows NO SCROLL CURSOR FOR " + sql)
            while true {
                let batch = try pg.query("FETCH 2000 FROM check_rows")
                for row in batch { try body(row) }
                if batch.count < 2000 { break }
            }
            try pg.execute("CLOSE check_rows")
        default:
            for row in try conn.query(sql, []) { try body(row) }
        }
    }

    /// Size and hex SHA-256 of a blob kept in PostgreSQL, read a piece at a time; nil when it has none.
    static func hashRows(_ conn: any SQLConnection, sha256: String) throws -> (Int, String)? {
        var d = Digest(.sha256)
        var size = 0, n: Int64 = 0
        while let piece = try conn.queryBinary("SELECT bytes FROM blob_chunks WHERE sha256 = ? AND n = ?", [.text(sha256), .int(n)]).first?.blob("bytes") {
            piece.withUnsafeBytes { d.update($0) }
            size += piece.count
            n += 1
        }
        return n == 0 ? nil : (size, Hex.encode(d.finalize()))
    }

    /// Size and hex SHA-256 of a file, streamed.
    static func hashFile(_ path: String) -> (Int, String)? {
        guard let h = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? h.close() }
        var d = Digest(.sha256)
        var size = 0
        while true {
            // The throwing read: `readData(ofLength:)` traps on a read error instead of reporting it.
            guard let chunk = try? h.read(upToCount: 1 << 20) ?? Data() else { return nil }
            if chunk.isEmpty { break }
            chunk.withUnsafeBytes { d.update($0) }
            size += chunk.count
        }
        return (size, Hex.encode(d.finalize()))
    }
}
