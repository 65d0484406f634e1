import Foundation
import SurveyServer
import Testing
import SurveyDomain
@testable import SurveyStorage

/// Maintenance of a data dir: `surveyd check` names each violation, `surveyd backup` makes a
/// complete copy while serving, old idempotency keys are purged, a damaged file is refused.
@Suite(.serialized) struct MaintenanceTests {
    /// Runs `surveyd` and returns (exit status, stdout+stderr).
    static func surveyd(_ args: [String], timeout: TimeInterval = 60) throws -> (Int32, String) {
        let outcome = try ServerProcess.command(args, timeout: timeout)
        return (outcome.status, outcome.stdout + outcome.stderr)
    }

    /// A data dir with every kind of row: responses through review, a completed task, uploads, keys.
    static func busyWorld(configure: (inout App.Configuration) -> Void = { _ in }) throws -> ReviewTests.World {
        let w = try ReviewTests.World(configure: configure)
        #expect(try w.review("startReview", 1, key: "maint-key-0001").status == 200)
        #expect(try w.review("approve", 2).status == 200)
        let s = UploadTests.Setup(f: w.f, v: w.v)
        #expect(try s.put("maint-photo-0001", Files.jpeg(5000)).status == 201)
        #expect(try s.put("maint-photo-0002", Files.png(3000), type: "image/png").status == 201)
        return w
    }

    @Test(.enabled(if: !TestEngine.isPostgres, "edits the SQLite file to make violations")) func checkPassesOnAHealthyDataDirAndNamesEachViolation() throws {
        let w = try Self.busyWorld()
        let dir = w.f.server.dataDir
        let (ok, report) = try Self.surveyd(["check", "--data-dir", dir])
        #expect(ok == 0, "\(report)")
        #expect(report.contains("surveyd check: OK"))

        // A blob whose bytes changed, a blob without a row, a task completed halfway.
        let blobs = w.f.server.files(in: "blobs")
        let victim = dir + "/blobs/" + blobs[0]
        var bytes = try Data(contentsOf: URL(fileURLWithPath: victim))
        bytes[10] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: victim))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir + "/blobs/stray-file"))
        let conn = try Connection(path: dir + "/surveyd.sqlite", readOnly: false)
        try conn.run("UPDATE tasks SET completed_by = NULL WHERE task_id = ?", [.text(w.taskId)])
        let (bad, badReport) = try Self.surveyd(["check", "--data-dir", dir])
        #expect(bad == 1)
        #expect(badReport.contains("file hash"))
        #expect(badReport.contains("stray-file has no upload row"))
        #expect(badReport.contains("task \(w.taskId): completed without completedAt, completedBy and responseId"))
        // A response revision without its audit entry.
        try conn.run("DELETE FROM audit WHERE target_id = ? AND revision = 2", [.text(w.responseId)])
        #expect(try Self.surveyd(["check", "--data-dir", dir]).1.contains("response \(w.responseId): revision 3 but 2 audit entries"))
    }

    @Test(.enabled(if: !TestEngine.isPostgres, "backup of a SQLite data dir")) func backupWhileServingIsACompleteDataDir() throws {
        let w = try Self.busyWorld()
        let dest = NSTemporaryDirectory() + "surveyd-backup-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dest) }
        // Writes keep going while the backup runs.
        let writer = Thread {
            for i in 0..<30 {
                _ = try? w.f.client.post("/v1/orgs/\(w.f.orgId)/responses", token: w.f.collectorToken, ResponseTests.submission("during-backup-\(1000 + i)", w.v))
            }
        }
        writer.start()
        let (status, out) = try Self.surveyd(["backup", "--data-dir", w.f.server.dataDir, "--to", dest])
        #expect(status == 0, "\(out)")
        #expect(out.contains("2 blob file(s)"))
        let (checked, report) = try Self.surveyd(["check", "--data-dir", dest])
        #expect(checked == 0, "\(report)")
        // Restore = serve the backup directory as it is.
        let restored = ServerProcess(dataDir: dest)
        try restored.start()
        let r = try restored.client.get("/v1/orgs/\(w.f.orgId)/responses/\(w.responseId)", token: w.f.collectorToken)
        #expect(r.json?["reviewState"]?.stringValue == "approved")
        let content = try restored.client.get("/v1/orgs/\(w.f.orgId)/uploads/maint-photo-0001/content", token: w.f.collectorToken)
        #expect(content.body == Files.jpeg(5000))
        #expect(restored.terminate() == 0)
        // A second backup into the same directory is refused, not merged.
        #expect(try Self.surveyd(["backup", "--data-dir", w.f.server.dataDir, "--to", dest]).0 != 0)
    }

    /// A backup that cannot finish leaves nothing behind that looks like a data dir.
    @Test(.enabled(if: !TestEngine.isPostgres, "backup of a SQLite data dir")) func aFailedBackupTakesBackWhatItCreated() throws {
        let fm = FileManager.default
        let base = NSTemporaryDirectory() + "surveyd-backup-fail-" + UUID().uuidString
        defer { try? fm.removeItem(atPath: base) }
        // No database at the source: refused before anything is created.
        try fm.createDirectory(atPath: base + "/empty-source", withIntermediateDirectories: true)
        let (noSource, noSourceOut) = try Self.surveyd(["backup", "--data-dir", base + "/empty-source", "--to", base + "/b1"])
        #expect(noSource == 1)
        #expect(noSourceOut.contains("no database at"), "\(noSourceOut)")
        #expect(!fm.fileExists(atPath: base + "/b1"))

        // A blob missing from the source: the copy fails halfway, after the database was written.
        let w = try Self.busyWorld()
        let blobs = w.f.server.files(in: "blobs")
        try fm.removeItem(atPath: w.f.server.dataDir + "/blobs/" + blobs[0])
        let (missing, missingOut) = try Self.surveyd(["backup", "--data-dir", w.f.server.dataDir, "--to", base + "/b2"])
        #expect(missing == 1)
        #expect(missingOut.contains("cannot read"), "\(missingOut)")
        #expect(!fm.fileExists(atPath: base + "/b2"), "a new destination is removed whole")
        // Into a directory that already existed: it stays, emptied of what the backup put there.
        try fm.createDirectory(atPath: base + "/b3", withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: URL(fileURLWithPath: base + "/b3/notes.txt"))
        #expect(try Self.surveyd(["backup", "--data-dir", w.f.server.dataDir, "--to", base + "/b3"]).0 == 1)
        #expect(try fm.contentsOfDirectory(atPath: base + "/b3") == ["notes.txt"])
    }

    @Test func idempotencyKeysArePurgedAfterTheirRetention() throws {
        let w = try Self.busyWorld()
        let db = w.f.server.app.database
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM idempotency_keys") == 1)
        #expect(try db.purgeIdempotencyKeys(olderThan: Timestamp.nowMillis() - 30 * 86_400_000) == 0)
        #expect(try db.purgeIdempotencyKeys(olderThan: Timestamp.nowMillis() + 1000) == 1)
        // The key is free again: the same request now runs as new (and is refused on its merits).
        #expect(try w.review("startReview", 1, key: "maint-key-0001").errorCode == ErrorCode.staleRevision.rawValue)
    }

    /// A database that has applied a step this surveyd does not know: `serve` exits non-zero
    /// with a sentence naming the step, before it listens or changes anything.
    @Test func aDatabaseWithAMigrationOfANewerSurveydIsRefusedNamingIt() throws {
        let server = ServerProcess()
        try server.start()
        _ = try server.seed()
        #expect(server.terminate() == 0)
        let writer: any SQLConnection = if TestEngine.isPostgres, let url = try TestEngine.database(for: server.dataDir) {
            try PostgresConnection(url: url)
        } else {
            try Connection(path: server.dataDir + "/surveyd.sqlite", readOnly: false)
        }
        try writer.run("""
            INSERT INTO schema_migrations(version, name, applied_at) SELECT MAX(version) + 1, 'sealed-exports', 0 FROM schema_migrations
            """, [])
        let (status, out) = try Self.surveyd(["serve", "--data-dir", server.dataDir, "--port", "0"]
                                             + (try TestEngine.urlArguments(dataDir: server.dataDir)), timeout: 20)
        #expect(status != 0)
        #expect(out.contains("""
            This database has migration 'sealed-exports' applied, which this surveyd does not know: it was written by a \
            newer surveyd. Run that version, or restore a backup made before it.
            """), "\(out)")
    }

    @Test(.enabled(if: !TestEngine.isPostgres, "a damaged SQLite file")) func aDamagedDatabaseIsRefusedAndLeftUntouched() throws {
        let server = ServerProcess()
        try server.start()
        _ = try server.seed()
        #expect(server.terminate() == 0)
        let path = server.dataDir + "/surveyd.sqlite"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(bytes.count > 16 * 4096)
        for i in stride(from: 4096 * 2, to: min(bytes.count, 4096 * 12), by: 7) { bytes[i] = 0xA5 }
        try bytes.write(to: URL(fileURLWithPath: path))
        let (status, out) = try Self.surveyd(["serve", "--data-dir", server.dataDir, "--port", "0"], timeout: 10)
        #expect(status != 0)
        #expect(out.contains("damaged") || out.contains("malformed"), "\(out)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
    }
}
