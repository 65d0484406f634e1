import Foundation
import Testing
@testable import SurveyStorage

/// `check`, `backup` and `migrate` tell an operator how far they are, on stderr. The tests run
/// the binary with stderr in a file — not a terminal — so the report is plain lines (no carriage
/// returns), one per phase at least; `--quiet` leaves stderr empty and stdout as it was.
@Suite(.serialized) struct ProgressOutputTests {
    /// The lines of `stderr` that are progress lines of `command`.
    static func progressLines(_ stderr: String, _ command: String) -> [Substring] {
        stderr.split(separator: "\n").filter { $0.hasPrefix("surveyd \(command): ") }
    }

    @Test(.enabled(if: !TestEngine.isPostgres, "check and backup of a SQLite data dir"))
    func checkAndBackupReportPlainLinesUnlessQuiet() throws {
        let w = try MaintenanceTests.busyWorld()
        let dir = w.f.server.dataDir

        let check = try ServerProcess.command(["check", "--data-dir", dir])
        #expect(check.status == 0 && check.stdout.contains("surveyd check: OK"), "\(check.stdout) \(check.stderr)")
        #expect(!check.stderr.contains("\r"), "not a terminal: no line redrawn in place")
        let checked = Self.progressLines(check.stderr, "check")
        #expect(checked.contains { $0.hasPrefix("surveyd check: SQLite integrity_check (") && $0.contains(" MB) done in ") }, "\(check.stderr)")
        #expect(checked.contains { $0.hasPrefix("surveyd check: uploads: 2 files, 0.0 MB in ") }, "\(check.stderr)")
        #expect(checked.contains { $0.hasPrefix("surveyd check: responses: 1 rows in ") }, "\(check.stderr)")
        #expect(checked.contains { $0.hasPrefix("surveyd check: idempotency keys: ") }, "\(check.stderr)")

        let quietCheck = try ServerProcess.command(["check", "--data-dir", dir, "--quiet"])
        #expect(quietCheck.status == 0 && quietCheck.stderr.isEmpty, "\(quietCheck.stderr)")
        #expect(quietCheck.stdout == check.stdout, "--quiet changes stderr only")

        let dest = NSTemporaryDirectory() + "surveyd-progress-backup-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dest) }
        let backup = try ServerProcess.command(["backup", "--data-dir", dir, "--to", dest])
        #expect(backup.status == 0, "\(backup.stdout) \(backup.stderr)")
        #expect(!backup.stderr.contains("\r"))
        let backedUp = Self.progressLines(backup.stderr, "backup")
        #expect(backedUp.contains { $0.hasPrefix("surveyd backup: database: ") && $0.contains(" pages, ") }, "\(backup.stderr)")
        #expect(backedUp.contains { $0.hasPrefix("surveyd backup: files: 2 files, ") }, "\(backup.stderr)")

        let quietDest = dest + "-quiet"
        defer { try? FileManager.default.removeItem(atPath: quietDest) }
        let quietBackup = try ServerProcess.command(["backup", "--data-dir", dir, "--to", quietDest, "--quiet"])
        #expect(quietBackup.status == 0 && quietBackup.stderr.isEmpty, "\(quietBackup.stderr)")
        #expect(quietBackup.stdout.contains("2 blob file(s)"), "\(quietBackup.stdout)")
        // SURVEYD_QUIET=1 is --quiet, like every other flag.
        var environment = ProcessInfo.processInfo.environment
        environment["SURVEYD_QUIET"] = "1"
        let quietByEnvironment = try ServerProcess.command(["check", "--data-dir", dir], environment: environment)
        #expect(quietByEnvironment.status == 0 && quietByEnvironment.stderr.isEmpty, "\(quietByEnvironment.stderr)")
    }

    @Test(.enabled(if: TestEngine.isPostgres, "needs the PostgreSQL test cluster"))
    func migrateReportsItsPhasesUnlessQuiet() throws {
        let w = try MaintenanceTests.busyWorld { $0.databaseURL = nil }
        let from = w.f.server.dataDir
        w.f.server.stop()

        let pgDir = NSTemporaryDirectory() + "surveyd-progress-migrate-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: pgDir) }
        let url = try #require(try TestEngine.database(for: pgDir))
        let migrated = try ServerProcess.command(["migrate", "--from-data-dir", from, "--to-database-url", url], timeout: 120)
        #expect(migrated.status == 0 && migrated.stdout.contains("surveyd check: OK"), "\(migrated.stdout) \(migrated.stderr)")
        #expect(!migrated.stderr.contains("\r"))
        let lines = Self.progressLines(migrated.stderr, "migrate")
        #expect(lines.contains { $0.hasPrefix("surveyd migrate: rows: ") && $0.contains(" rows in ") }, "\(migrated.stderr)")
        #expect(lines.contains { $0.hasPrefix("surveyd migrate: files: 2 files, ") }, "\(migrated.stderr)")
        #expect(lines.contains { $0.hasPrefix("surveyd migrate: check: responses: 1 rows in ") }, "\(migrated.stderr)")

        let quietDir = pgDir + "-quiet"
        defer { try? FileManager.default.removeItem(atPath: quietDir) }
        let quietURL = try #require(try TestEngine.database(for: quietDir))
        let quiet = try ServerProcess.command(["migrate", "--from-data-dir", from, "--to-database-url", quietURL, "--quiet"], timeout: 120)
        #expect(quiet.status == 0 && quiet.stdout.contains("surveyd check: OK"), "\(quiet.stdout) \(quiet.stderr)")
        #expect(!quiet.stderr.contains("surveyd migrate: "), "\(quiet.stderr)")
    }
}
