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
    /// `progress` hears of the database's pages, then the files, as they are copied.
    public static func run(dataDir: String, to dest: String, progress: ProgressReport = .quiet()) throws -> Summary {
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
            return try copy(from: source, to: target, progress: progress)
        } catch {
            progress.close()
            for path in created { try? fm.removeItem(atPath: path) }
            throw error
        }
    }

    private static func copy(from here: DataDirectory, to there: DataDirectory, progress: ProgressReport) throws -> Summary {
        let fm = FileManager.default
        for d in [there.root] + there.fileDirectories { try fm.createDirectory(atPath: d, withIntermediateDirectories: true) }

        let source = try Connection(path: here.database, readOnly: true)
        // One read transaction on the source for the whole copy: every step of the backup reads
        // the same snapshot (a step opens none of its own while one is open), so the copy is
        // consistent however many steps it takes and whatever the server commits meanwhile.
        try source.execute("BEGIN")
        defer { try? source.execute("COMMIT") }
        let pages = try source.query("PRAGMA page_count").first?.int("page_count") ?? 0
        let pageSize = try source.query("PRAGMA page_size").first?.int("page_size") ?? 0
        let target = try Connection(path: there.database, readOnly: false)
        guard let b = sqlite3_backup_init(target.handle, "main", source.handle, "main") else { throw target.error(SQLITE_ERROR, sql: "backup_init") }
        progress.begin("database", total: pages, unit: .pages, totalBytes: pages.multipliedReportingOverflow(by: pageSize).partialValue)
        var rc = SQLITE_OK
        var copied: Int64 = 0, waits = 0
        while rc == SQLITE_OK {
            rc = sqlite3_backup_step(b, 4096)  // 16 MiB of 4 KiB pages a step
            let now = Int64(sqlite3_backup_pagecount(b)) - Int64(sqlite3_backup_remaining(b))
            progress.advance(now - copied, bytes: (now - copied) * pageSize)
            copied = now
            // A lock held elsewhere for a moment: wait and step again (for at most ~30 s).
            if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && waits < 3000 { waits += 1; rc = SQLITE_OK; usleep(10_000) }
        }
        sqlite3_backup_finish(b)
        guard rc == SQLITE_DONE else { throw target.error(rc, sql: "backup_step") }
        progress.end()
        _ = try target.pragma("journal_mode=WAL")
        try target.execute("PRAGMA wal_checkpoint(TRUNCATE)")

        // The files of the copied snapshot, counted first.
        var blobs = 0, bytes: Int64 = 0, partials = 0
        let blobRows = try target.query("SELECT sha256, MAX(size) AS size FROM (SELECT sha256, size FROM uploads UNION ALL SELECT sha256, size FROM survey_version_attachments UNION ALL SELECT sha256, size FROM draft_files) f GROUP BY sha256")
        let partialRows = try target.query("SELECT upload_id, received_bytes FROM resumable_uploads WHERE received_bytes < length")
        var totalBytes: Int64 = 0
        for row in blobRows { totalBytes += try row.int("size") }
        for row in partialRows { totalBytes += try row.int("received_bytes") }
        progress.begin("files", total: Int64(blobRows.count + partialRows.count), unit: .files, totalBytes: totalBytes)
        for row in blobRows {
            let sha256 = try row.string("sha256"), to = there.blob(sha256: sha256)
            try fm.createDirectory(atPath: (to as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try copyDurably(from: here.blob(sha256: sha256), to: to)
            blobs += 1
            let size = try row.int("size")
            bytes += size
            progress.advance(1, bytes: size)
        }
        for row in partialRows {
            let uploadId = try row.string("upload_id"), from = here.partial(uploadId: uploadId)
            let received = try row.int("received_bytes")
            progress.advance(1, bytes: received)
            guard fm.fileExists(atPath: from) else { continue }
            try copyDurably(from: from, to: there.partial(uploadId: uploadId), limit: Int(received))
            partials += 1
        }
        progress.end()
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
