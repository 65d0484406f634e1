import CSQLite
import Foundation
import SurveyDomain

/// `surveyd backup`: an online, consistent copy while the server runs. The database is copied
/// with SQLite's backup API from one read snapshot; then exactly the blobs that snapshot
/// references are copied (blobs are immutable and never deleted while referenced), and the
/// received bytes of unfinished resumable uploads. The destination is a complete data dir.
public enum Backup {
    public struct Summary: Sendable {
        public let blobs: Int
        public let bytes: Int64
        public let partials: Int
    }

    /// A backup that fails (a blob missing from the source, a full disk) takes back everything it
    /// created, so no half-written directory is ever mistaken for a complete data dir.
    public static func run(dataDir: String, to dest: String) throws -> Summary {
        let fm = FileManager.default
        let source = DataDirectory(dataDir), target = DataDirectory(dest)
        guard fm.fileExists(atPath: source.database) else {
            throw MaintenanceError("no database at \(source.database); nothing was written.")
        }
        if fm.fileExists(atPath: target.database) {
            throw MaintenanceError("\(dest) already holds a database; back up into a new directory.")
        }
        // What this run creates: the whole destination if it did not exist, else its own entries.
        let created = fm.fileExists(atPath: dest)
            ? ([target.database, target.database + "-wal", target.database + "-shm"] + target.fileDirectories).filter { !fm.fileExists(atPath: $0) }
            : [dest]
        do {
            return try copy(from: source, to: target)
        } catch {
            for path in created { try? fm.removeItem(atPath: path) }
            throw error
        }
    }

    private static func copy(from here: DataDirectory, to there: DataDirectory) throws -> Summary {
        let fm = FileManager.default
        for d in [there.root] + there.fileDirectories { try fm.createDirectory(atPath: d, withIntermediateDirectories: true) }

        let source = try Connection(path: here.database, readOnly: true)
        let target = try Connection(path: there.database, readOnly: false)
        guard let b = sqlite3_backup_init(target.handle, "main", source.handle, "main") else { throw target.error(SQLITE_ERROR, sql: "backup_init") }
        let rc = sqlite3_backup_step(b, -1)  // the whole database in one step: one consistent snapshot
        sqlite3_backup_finish(b)
        guard rc == SQLITE_DONE else { throw target.error(rc, sql: "backup_step") }
        _ = try target.pragma("journal_mode=WAL")
        try target.execute("PRAGMA wal_checkpoint(TRUNCATE)")

        var blobs = 0, bytes: Int64 = 0, partials = 0
        for row in try target.query("SELECT sha256, MAX(size) AS size FROM (SELECT sha256, size FROM uploads UNION ALL SELECT sha256, size FROM survey_version_attachments) f GROUP BY sha256") {
            let sha256 = try row.string("sha256"), to = there.blob(sha256: sha256)
            try fm.createDirectory(atPath: (to as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try copyDurably(from: here.blob(sha256: sha256), to: to)
            blobs += 1
            bytes += try row.int("size")
        }
        for row in try target.query("SELECT upload_id, received_bytes FROM resumable_uploads WHERE received_bytes < length") {
            let uploadId = try row.string("upload_id"), from = here.partial(uploadId: uploadId)
            guard fm.fileExists(atPath: from) else { continue }
            try copyDurably(from: from, to: there.partial(uploadId: uploadId), limit: Int(try row.int("received_bytes")))
            partials += 1
        }
        try BlobStore.fsyncDirectory(there.root)
        return Summary(blobs: blobs, bytes: bytes, partials: partials)
    }

    /// Copies (at most `limit` bytes) and fsyncs the copy.
    static func copyDurably(from: String, to: String, limit: Int? = nil) throws {
        guard let input = FileHandle(forReadingAtPath: from) else { throw MaintenanceError("cannot read \(from)") }
        defer { try? input.close() }
        let fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BlobStore.ioError("create \(to)", errno) }
        defer { close(fd) }
        var remaining = limit ?? Int.max
        while remaining > 0 {
            // The throwing read: `readData(ofLength:)` traps on a read error instead of reporting it.
            let chunk = try input.read(upToCount: min(1 << 20, remaining)) ?? Data()
            if chunk.isEmpty { break }
            try chunk.withUnsafeBytes { buf in
                var off = 0
                while off < buf.count {
                    let n = write(fd, buf.baseAddress! + off, buf.count - off)
                    guard n > 0 else { throw BlobStore.ioError("write \(to)", errno) }
                    off += n
                }
            }
            remaining -= chunk.count
        }
        guard fsync(fd) == 0 else { throw BlobStore.ioError("fsync \(to)", errno) }
    }
}
