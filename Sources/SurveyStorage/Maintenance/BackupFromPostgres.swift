import Foundation
import SurveyDomain

/// `surveyd backup --database-url URL --to DIR`: a PostgreSQL database copied into a new SQLite
/// data dir that `surveyd serve --data-dir DIR` runs on — every row from one REPEATABLE READ
/// snapshot, the files written out to `blobs/` and `partial/` — checked before it is called done.
/// A backup that fails takes back the directory it made.
public enum BackupFromPostgres {
    public static func run(databaseURL url: String, to dest: String) throws -> Backup.Summary {
        let fm = FileManager.default
        let there = DataDirectory(dest)
        if fm.fileExists(atPath: dest) {
            throw MaintenanceError("\(dest) already exists; back up into a new directory.")
        }
        do {
            let summary = try copy(from: url, to: there)
            let report = try IntegrityCheck.run(dataDir: dest)
            guard report.ok else { throw MaintenanceError("the copy did not pass check:\n\(report.text)") }
            return summary
        } catch {
            try? fm.removeItem(atPath: dest)
            throw error
        }
    }

    private static func copy(from url: String, to there: DataDirectory) throws -> Backup.Summary {
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
        let target = try Connection(path: there.database, readOnly: false)
        _ = try target.pragma("journal_mode=WAL")
        try Migrations.run(on: target)
        try target.execute("BEGIN IMMEDIATE; " + MigrateToPostgres.ownKeys.map { "DELETE FROM \($0);" }.joined(separator: " "))
        do {
            for table in MigrateToPostgres.tables {
                let columns = try target.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)]).map { try $0.string("name") }
                let insert = "INSERT INTO \(table)(\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
                try source.execute("DECLARE copy_rows NO SCROLL CURSOR FOR SELECT \(columns.joined(separator: ", ")) FROM \(table)")
                while true {
                    let batch = try source.query("FETCH 500 FROM copy_rows")
                    for row in batch { try target.run(insert, try columns.map { try row.value($0) }) }
                    if batch.count < 500 { break }
                }
                try source.execute("CLOSE copy_rows")
            }
            try target.execute("COMMIT")
        } catch {
            try? target.execute("ROLLBACK")
            throw error
        }
        var blobs = 0, bytes: Int64 = 0, partials = 0
        for row in try source.query("SELECT DISTINCT sha256, size FROM uploads") {
            let sha256 = try row.string("sha256"), to = there.blob(sha256: sha256)
            try fm.createDirectory(atPath: (to as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try write(pieces: "SELECT bytes FROM blob_chunks WHERE sha256 = ? ORDER BY n", [.text(sha256)], from: source, to: to)
            blobs += 1
            bytes += try row.int("size")
        }
        for row in try source.query("SELECT upload_id FROM resumable_uploads WHERE received_bytes < length") {
            let uploadId = try row.string("upload_id")
            try write(pieces: "SELECT bytes FROM partial_chunks WHERE upload_id = ? ORDER BY start", [.text(uploadId)],
                      from: source, to: there.partial(uploadId: uploadId))
            partials += 1
        }
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
