import Foundation
import SurveyDomain

/// `surveyd backup --database-url URL --to DIR`: a PostgreSQL database copied into a new SQLite
/// data dir that `surveyd serve --data-dir DIR` runs on — every row from one REPEATABLE READ
/// snapshot, the files written out to `blobs/` and `partial/` — checked before it is called done.
/// A backup that fails takes back the directory it made.
public enum BackupFromPostgres {
    /// `progress` hears of the rows, the files, then the check of the copy, as they go.
    public static func run(databaseURL url: String, to dest: String, progress: ProgressReport = .quiet()) throws -> Backup.Summary {
        let fm = FileManager.default
        let there = DataDirectory(dest)
        if fm.fileExists(atPath: dest) {
            throw MaintenanceError("\(dest) already exists; back up into a new directory.")
        }
        do {
            let summary = try copy(from: url, to: there, progress: progress)
            progress.stage = "check: "
            defer { progress.stage = "" }
            let report = try IntegrityCheck.run(dataDir: dest, progress: progress)
            guard report.ok else { throw MaintenanceError("the copy did not pass check:\n\(report.text)") }
            return summary
        } catch {
            progress.close()
            try? fm.removeItem(atPath: dest)
            throw error
        }
    }

    private static func copy(from url: String, to there: DataDirectory, progress: ProgressReport) throws -> Backup.Summary {
        let fm = FileManager.default
        for d in [there.root] + there.fileDirectories { try fm.createDirectory(atPath: d, withIntermediateDirectories: true) }
        let source = try PostgresConnection(url: url)
        try source.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        defer { try? source.execute("COMMIT") }
        let applied = try Migrations.applied(source)
        let unknown = Migrations.unknown(applied)
        guard unknown.isEmpty else { throw MaintenanceError(Migrations.refusal(unknown, version: try Migrations.currentVersion(source))) }
        let pending = Migrations.pending(applied)
        guard pending.isEmpty else {
            throw MaintenanceError("""
                the database lacks migration\(pending.count == 1 ? "" : "s") \(pending.map { "'\($0.name)'" }.joined(separator: ", ")); \
                start this surveyd on it once (it migrates), then back it up.
                """)
        }
        // What there is to copy, counted in the snapshot that is copied.
        var totalRows: Int64 = 0
        for table in MigrateToPostgres.tables { totalRows += try source.query("SELECT COUNT(*) AS n FROM \(table)").first?.int("n") ?? 0 }
        let blobRows = try source.query("SELECT sha256, MAX(size) AS size FROM (SELECT sha256, size FROM uploads UNION ALL SELECT sha256, size FROM survey_version_attachments UNION ALL SELECT sha256, size FROM draft_files) f GROUP BY sha256")
        let partialRows = try source.query("""
            SELECT u.upload_id, COALESCE((SELECT SUM(length(bytes)) FROM partial_chunks p WHERE p.upload_id = u.upload_id), 0) AS bytes
            FROM resumable_uploads u WHERE u.received_bytes < u.length
            """)
        var fileBytes: Int64 = 0
        for row in blobRows { fileBytes += try row.int("size") }
        for row in partialRows { fileBytes += try row.int("bytes") }
        let target = try Connection(path: there.database, readOnly: false)
        _ = try target.pragma("journal_mode=WAL")
        try Migrations.run(on: target)
        try target.execute("BEGIN IMMEDIATE; " + MigrateToPostgres.ownKeys.map { "DELETE FROM \($0);" }.joined(separator: " "))
        do {
            progress.begin("rows", total: totalRows, unit: .rows)
            for table in MigrateToPostgres.tables {
                progress.at(table)
                let columns = try target.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)]).map { try $0.string("name") }
                let insert = "INSERT INTO \(table)(\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
                try source.execute("DECLARE copy_rows NO SCROLL CURSOR FOR SELECT \(columns.joined(separator: ", ")) FROM \(table)")
                while true {
                    let batch = try source.query("FETCH 500 FROM copy_rows")
                    for row in batch { try target.run(insert, try columns.map { try row.value($0) }) }
                    progress.advance(Int64(batch.count))
                    if batch.count < 500 { break }
                }
                try source.execute("CLOSE copy_rows")
            }
            try target.execute("COMMIT")
            progress.end()
        } catch {
            try? target.execute("ROLLBACK")
            throw error
        }
        var blobs = 0, bytes: Int64 = 0, partials = 0
        progress.begin("files", total: Int64(blobRows.count + partialRows.count), unit: .files, totalBytes: fileBytes)
        for row in blobRows {
            let sha256 = try row.string("sha256"), to = there.blob(sha256: sha256)
            try fm.createDirectory(atPath: (to as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try write(pieces: "SELECT bytes FROM blob_chunks WHERE sha256 = ? ORDER BY n", [.text(sha256)], from: source, to: to)
            blobs += 1
            let size = try row.int("size")
            bytes += size
            progress.advance(1, bytes: size)
        }
        for row in partialRows {
            let uploadId = try row.string("upload_id")
            try write(pieces: "SELECT bytes FROM partial_chunks WHERE upload_id = ? ORDER BY start", [.text(uploadId)],
                      from: source, to: there.partial(uploadId: uploadId))
            partials += 1
            progress.advance(1, bytes: try row.int("bytes"))
        }
        progress.end()
        try BlobStore.fsyncDirectory(there.root)
        try target.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return Backup.Summary(blobs: blobs, bytes: bytes, partials: partials)
    }

    /// The rows of `sql` (one piece each, in order) written to a new file, fsynced; a piece at a time.
    private static func write(pieces sql: String, _ args: [SQLValue], from source: PostgresConnection, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BlobStore.ioError("create \(path)", errno) }
        defer { close(fd) }
        try source.run("DECLARE copy_pieces NO SCROLL CURSOR FOR " + sql, args)
        while let piece = try source.queryBinary("FETCH 1 FROM copy_pieces").first?.blob("bytes") {
            try piece.withUnsafeBytes { buf in
                var off = 0
                while off < buf.count {
                    let n = Foundation.write(fd, buf.baseAddress! + off, buf.count - off)
                    guard n > 0 else { throw BlobStore.ioError("write \(path)", errno) }
                    off += n
                }
            }
        }
        try source.execute("CLOSE copy_pieces")
        guard fsync(fd) == 0 else { throw BlobStore.ioError("fsync \(path)", errno) }
    }
}
