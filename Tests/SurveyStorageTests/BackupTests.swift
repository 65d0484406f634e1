import Foundation
import Testing
@testable import SurveyStorage
import SurveyDomain

/// `surveyd backup` on a data dir without a server: what it carries of unfinished resumable
/// uploads, and what it refuses without touching anything.
@Suite struct BackupTests {
    /// A data dir with an organization and two unfinished resumable uploads: one whose partial
    /// file holds more than its confirmed bytes (a chunk cut short), one whose partial file is gone.
    static func dataDir(_ dir: TempDir) throws -> DataDirectory {
        let layout = DataDirectory(dir.path)
        let db = try Database(.init(path: layout.database))
        _ = try db.securityWrite(orgId: "org_1", actor: "t") { tx in try tx.createOrg(orgId: "org_1", name: "A", expiresAt: 1) }
        db.close()
        let conn = try Connection(path: layout.database, readOnly: false)
        for (uploadId, received) in [("tus_cut", 3), ("tus_gone", 4)] {
            try conn.run("""
                INSERT INTO resumable_uploads(upload_id, org_id, client_upload_id, owner, survey_version_id, question_id, content_type,
                                              length, received_bytes, expires_at, created_at)
                VALUES (?, 'org_1', ?, 'usr_1', 'ver_1', 'photo', 'image/png', 10, ?, 9999999999999, 1)
                """, [.text(uploadId), .text("client-\(uploadId)"), .int(Int64(received))])
        }
        try FileManager.default.createDirectory(atPath: layout.partial, withIntermediateDirectories: true)
        try Data("01234".utf8).write(to: URL(fileURLWithPath: layout.partial(uploadId: "tus_cut")))
        return layout
    }

    @Test func theConfirmedBytesOfAnUnfinishedUploadAreCarriedAndNoMore() throws {
        let dir = TempDir()
        let source = try Self.dataDir(dir)
        let dest = dir.path + "-backup"
        defer { try? FileManager.default.removeItem(atPath: dest) }
        let summary = try Backup.run(dataDir: source.root, to: dest)
        #expect(summary.partials == 1 && summary.blobs == 0)
        let copied = DataDirectory(dest)
        #expect(FileManager.default.contents(atPath: copied.partial(uploadId: "tus_cut")) == Data("012".utf8))
        #expect(!FileManager.default.fileExists(atPath: copied.partial(uploadId: "tus_gone")))
        // The copy is a data dir that opens, with both uploads' rows.
        let db = try Database(.init(path: copied.database))
        defer { db.close() }
        let rows = try db.read { try $0.conn.query("SELECT upload_id, received_bytes FROM resumable_uploads ORDER BY upload_id") }
        #expect(try rows.map { try $0.string("upload_id") } == ["tus_cut", "tus_gone"])
    }

    @Test func aBackupIntoADirectoryHoldingADatabaseIsRefusedAndChangesNothing() throws {
        let dir = TempDir()
        let source = try Self.dataDir(dir)
        let dest = dir.path + "-backup"
        defer { try? FileManager.default.removeItem(atPath: dest) }
        _ = try Backup.run(dataDir: source.root, to: dest)
        let before = try Data(contentsOf: URL(fileURLWithPath: DataDirectory(dest).database))
        let partial = FileManager.default.contents(atPath: DataDirectory(dest).partial(uploadId: "tus_cut"))
        #expect {
            try Backup.run(dataDir: source.root, to: dest)
        } throws: { ($0 as? MaintenanceError)?.description == "\(dest) already holds a database; back up into a new directory." }
        #expect(try Data(contentsOf: URL(fileURLWithPath: DataDirectory(dest).database)) == before)
        #expect(FileManager.default.contents(atPath: DataDirectory(dest).partial(uploadId: "tus_cut")) == partial)
    }

    @Test func aSourceWithoutADatabaseIsRefusedBeforeAnythingIsCreated() throws {
        let dir = TempDir()
        let dest = dir.path + "/backup"
        #expect {
            try Backup.run(dataDir: dir.path, to: dest)
        } throws: { ($0 as? MaintenanceError)?.description == "no database at \(DataDirectory(dir.path).database); nothing was written." }
        #expect(!FileManager.default.fileExists(atPath: dest))
    }

    /// A partial file that cannot be copied (here a folder where the copy should go) fails the
    /// backup, and what it created is taken back.
    @Test func aPartialThatCannotBeCopiedFailsTheBackupAndLeavesNothing() throws {
        let dir = TempDir()
        let source = try Self.dataDir(dir)
        let dest = dir.path + "-backup"
        defer { try? FileManager.default.removeItem(atPath: dest) }
        // The destination exists with one entry of its own and a folder in the partial file's place.
        let target = DataDirectory(dest)
        try FileManager.default.createDirectory(atPath: target.partial(uploadId: "tus_cut"), withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: URL(fileURLWithPath: dest + "/notes.txt"))
        #expect(throws: (any Error).self) { try Backup.run(dataDir: source.root, to: dest) }
        #expect(!FileManager.default.fileExists(atPath: target.database), "no database left to be mistaken for a backup")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dest)) == ["notes.txt", "partial"])
    }
}
