import Foundation
import Testing
import SurveyDomain
import SurveyServer
@testable import SurveyStorage

/// `surveyd migrate`: a SQLite data dir with responses through review, files, a completed task,
/// idempotency records and an unfinished resumable upload moves into PostgreSQL; `check` passes
/// there and the API answers the same, byte for byte, for every object — and work goes on.
/// Then `backup --database-url` brings it back as a SQLite data dir that `check` passes.
@Suite(.serialized, .enabled(if: TestEngine.isPostgres, "needs the PostgreSQL test cluster"))
struct MigrateToPostgresTests {
    @Test func aDataDirMovesWholeAndTheAPIAnswersTheSame() throws {
        // On SQLite: every kind of row, and 3,000 of 5,000 bytes of a resumable upload.
        let w = try MaintenanceTests.busyWorld { $0.databaseURL = nil }
        let f = w.f
        let tus = ResumableUploadTests.Tus(s: UploadTests.Setup(f: f, v: w.v))
        let file = Files.jpeg(5_000)
        let location = try #require(try tus.create("migrate-tus-0001", length: file.count).header("location"))
        #expect(try tus.patch(location, offset: 0, Array(file[0..<3_000])).status == 204)
        let o = "/v1/orgs/\(f.orgId)"
        let reads: [(String, String)] = [
            ("\(o)/responses", f.reviewerToken), ("\(o)/responses/\(w.responseId)", f.reviewerToken),
            ("\(o)/responses/\(w.responseId)/history", f.reviewerToken), ("\(o)/changes", f.reviewerToken),
            ("\(o)/changes", f.collectorToken), ("\(o)/tasks", f.adminToken), ("\(o)/tasks/\(w.taskId)", f.adminToken),
            ("\(o)/surveys", f.adminToken), ("\(o)/surveys/\(w.v.surveyId)", f.adminToken),
            ("\(o)/survey-versions/\(w.v.versionId)", f.collectorToken),
            ("\(o)/uploads/maint-photo-0001", f.reviewerToken), ("\(o)/uploads/maint-photo-0001/content", f.reviewerToken),
            ("\(o)/uploads/maint-photo-0002/content", f.reviewerToken), ("\(o)/webhooks", f.adminToken),
        ]
        let before = try reads.map { try f.client.get($0.0, token: $0.1) }
        #expect(before.allSatisfy { $0.status == 200 }, "\(before.filter { $0.status != 200 }.map(\.text))")
        let beforeSubscription = try f.client.get("\(o)/subscription", token: f.collectorToken).json
        let exported = try f.client.get("\(o)/surveys/\(w.v.surveyId)/responses.csv", token: f.reviewerToken)
        let cursor = try #require(exported.header("surveyd-export-cursor"))
        f.server.stop()

        // Into an empty database of its own.
        let pgDir = NSTemporaryDirectory() + "surveyd-migrated-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: pgDir) }
        let url = try #require(try TestEngine.database(for: pgDir))
        let migrated = try ServerProcess.command(["migrate", "--from-data-dir", f.server.dataDir, "--to-database-url", url], timeout: 120)
        #expect(migrated.status == 0, "\(migrated.stdout) \(migrated.stderr)")
        #expect(migrated.stdout.contains("surveyd check: OK"), "\(migrated.stdout)")
        // A second migrate into the same database is refused and changes nothing.
        let again = try ServerProcess.command(["migrate", "--from-data-dir", f.server.dataDir, "--to-database-url", url], timeout: 120)
        #expect(again.status != 0 && again.stderr.contains("already holds"), "\(again.stderr)")

        // Served from PostgreSQL: the same answers, byte for byte — but for the changes feed's
        // cursors, sealed afresh with a random nonce on every page.
        let pg = try TestServer(dataDir: pgDir)
        let after = try reads.map { try pg.client.get($0.0, token: $0.1) }
        let unsealed = { (text: String) in text.replacingOccurrences(of: #""cc1\.[A-Za-z0-9_-]{48}""#, with: "\"cc1\"", options: .regularExpression) }
        for (i, read) in reads.enumerated() {
            #expect(after[i].status == before[i].status, "\(read.0)")
            #expect(unsealed(after[i].text) == unsealed(before[i].text), "\(read.0): \(after[i].text.prefix(300)) vs \(before[i].text.prefix(300))")
        }
        // A changes cursor issued before the move continues the feed after it (the key moved).
        if let i = reads.firstIndex(where: { $0.0.contains("/changes") }),
           let items = before[i].json?["items"]?.arrayValue, items.count > 1, let first = items.first?["cursor"]?.stringValue {
            let rest = try pg.client.get("\(o)/changes?after=\(first)", token: reads[i].1)
            #expect(rest.status == 200 && rest.json?["items"]?.arrayValue?.count == items.count - 1, "\(rest.text.prefix(300))")
        }
        // The subscription too (its `serverTime` is the time of asking).
        let subscription = try pg.client.get("\(o)/subscription", token: f.collectorToken).json
        #expect(subscription?["expiresAt"] == beforeSubscription?["expiresAt"] && subscription?["status"]?.stringValue == "active")
        // An export cursor issued before the move still works: the key moved with the data.
        let incremental = try pg.client.get("\(o)/surveys/\(w.v.surveyId)/responses.csv?afterCursor=\(cursor)", token: f.reviewerToken)
        #expect(incremental.status == 200, "\(incremental.text)")
        // Work goes on: the keyed request replays its kept answer, the upload resumes where it stopped.
        let replay = try pg.client.post("\(o)/responses/\(w.responseId)/review", token: f.reviewerToken,
                                        ["action": "startReview", "expectedRevision": 1], headers: ["Idempotency-Key": "maint-key-0001"])
        #expect(replay.status == 200 && replay.header("idempotent-replayed") == "true", "\(replay.text)")
        let onPG = ResumableUploadTests.Tus(s: UploadTests.Setup(f: Fixture(server: pg, from: f), v: w.v))
        #expect(try onPG.offset(location) == 3_000)
        #expect(try onPG.patch(location, offset: 3_000, Array(file[3_000...])).status == 204)
        let content = try pg.client.get("\(o)/uploads/migrate-tus-0001/content", token: f.reviewerToken)
        #expect(content.body == file)
        #expect(try TestEngine.check(dataDir: pgDir).ok)

        // And back: a backup of the PostgreSQL database is a SQLite data dir that check passes.
        let backupDir = NSTemporaryDirectory() + "surveyd-pg-backup-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: backupDir) }
        let backup = try ServerProcess.command(["backup", "--database-url", url, "--to", backupDir], timeout: 120)
        #expect(backup.status == 0, "\(backup.stdout) \(backup.stderr)")
        #expect(try IntegrityCheck.run(dataDir: backupDir).ok)
        #expect(try Connection(path: backupDir + "/surveyd.sqlite", readOnly: true).query("SELECT COUNT(*) AS n FROM uploads").first?.int("n") == 3)
        let key = "SELECT key FROM export_cursor_key"
        #expect(try Connection(path: backupDir + "/surveyd.sqlite", readOnly: true).query(key).first?.blob("key")
                == (try Connection(path: f.server.dataDir + "/surveyd.sqlite", readOnly: true).query(key).first?.blob("key")))
    }
}
