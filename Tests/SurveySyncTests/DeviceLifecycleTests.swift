import Foundation
import Testing
@testable import SurveySync

/// Seed 001's device cases: a killed app, a restarted phone, a full disk, a damaged store and an
/// outbox written by an older version of the library.
@Suite struct DeviceLifecycleTests {
    /// `surveysync` as a separate process, killed with SIGKILL at the worst moments: right after the
    /// capture's commit, and right after the server's answer arrived but before it was recorded.
    @Test func processKilledRightAfterTheLocalCommitAndRestarted() async throws {
        let f = try await SyncFixture()
        let store = f.storeURL("phone").path
        let who = ["--store", store, "--server", f.proxy.base, "--org", f.org, "--user", f.collector.userId]

        let capture = try KillableChild(PackagePaths.surveysync, ["capture"] + who + [
            "--version", f.versionId, "--hash", f.contentHash, "--answers", #"{"household_size": 7, "water_source": "river"}"#, "--hold"])
        let saved = try capture.waitForLine(containing: "Saved on this device")
        capture.killNow()
        let id = String(try #require(saved.split(separator: "\t").last))

        let sync = try KillableChild(PackagePaths.surveysync, ["sync"] + who + ["--token", f.collector.token, "--stop-after-answer"])
        _ = try sync.waitForLine(containing: "answer received\t\(id)")
        sync.killNow()
        #expect(try await f.acceptedCount() == 1, "the server stored it before the app died")

        let outbox = try f.device("phone")
        let reopened = try #require(try outbox.command(id), "nothing lost")
        #expect(reopened.stateLabel == "Saved on this device", "the answer was never recorded")
        _ = await f.engine(outbox).syncNow()
        let done = try #require(try outbox.command(id))
        #expect(done.stateLabel == "Submitted")
        #expect(done.lastAnswer == "HTTP 200 replayed: already stored")
        #expect(try await f.acceptedCount() == 1, "nothing twice")
    }

    @Test func restartedDeviceReopensTheStore() async throws {
        let f = try await SyncFixture()
        var ids: [String] = []
        do {
            let outbox = try f.device("phone")
            try f.proxy.goOffline()
            ids = [try f.capture(outbox, size: 2).id, try f.capture(outbox, size: 3).id]
            _ = await f.engine(outbox).syncNow()
            #expect(try outbox.commands().map(\.stateLabel) == ["Waiting to sync", "Waiting to sync"])
            outbox.close()
        }
        let outbox = try f.device("phone")
        let reopened = try outbox.commands()
        #expect(reopened.map(\.id) == ids)
        #expect(reopened.map(\.stateLabel) == ["Waiting to sync", "Waiting to sync"])
        #expect(reopened.allSatisfy { $0.attempts == 1 && $0.ambiguous })
        try f.proxy.goOnline()
        _ = await f.engine(outbox).syncNow()
        #expect(try outbox.commands().map(\.stateLabel) == ["Submitted", "Submitted"])
        #expect(try await f.acceptedCount() == 2)
    }

    /// The store's size is capped with SQLite's `max_page_count` (Outbox.Configuration.maxStorePages):
    /// a real SQLITE_FULL from the same code path a full disk takes.
    @Test func storageFullOnTheDeviceFailsTheCaptureLoudlyAndLosesNothing() async throws {
        let f = try await SyncFixture()
        let outbox = try f.device("phone", configuration: Outbox.Configuration(maxStorePages: 24))
        try f.proxy.goOffline()
        let first = try f.capture(outbox, size: 4)
        let big = String(repeating: "x", count: 200_000)
        #expect(throws: OutboxError.storageFull) { try f.capture(outbox, size: 5, notes: big) }
        #expect(OutboxError.storageFull.message == "There is not enough space on this device to save this. It was not saved: free some space and save again.")
        #expect(try outbox.commands().map(\.id) == [first.id], "nothing half-saved, nothing lost")
        try f.proxy.goOnline()
        _ = await f.engine(outbox).syncNow()
        #expect(try outbox.command(first.id)?.stateLabel == "Submitted")
        #expect(try await f.acceptedCount() == 1)
    }

    @Test func corruptedStoreIsQuarantinedNotShownAsEmpty() async throws {
        let f = try await SyncFixture()
        let url = f.storeURL("phone")
        do {
            let outbox = try f.device("phone")
            try f.proxy.goOffline()
            try f.capture(outbox, size: 4)
            outbox.close()
        }
        // Damage the file: its header and first page overwritten.
        let handle = try FileHandle(forWritingTo: url)
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 2048))
        try handle.close()
        let damaged = try Data(contentsOf: url)

        let outbox = try f.device("phone")
        let quarantined = outbox.quarantinedStores
        #expect(quarantined.count == 1)
        let words = "Your saved work on this device could not be read. It has been kept aside and can be exported for support."
        #expect(quarantined.first?.message == words)
        #expect(outbox.notices() == [words], "shown as damaged, not as an empty list")
        #expect(try outbox.metrics().quarantinedStores == 1)
        let export = f.directory.appendingPathComponent("support-export")
        try quarantined[0].export(to: export)
        #expect(try Data(contentsOf: export.appendingPathComponent("phone.sqlite")) == damaged, "kept byte for byte")

        // New work goes into a new store; the damaged one is not written over.
        try f.proxy.goOnline()
        let fresh = try f.capture(outbox, size: 9)
        _ = await f.engine(outbox).syncNow()
        #expect(try outbox.command(fresh.id)?.stateLabel == "Submitted")
        #expect(try Data(contentsOf: quarantined[0].directory.appendingPathComponent("phone.sqlite")) == damaged)
        #expect(try await f.acceptedCount() == 1)
    }

    /// A store in the library's version-1 layout (one `outbox` table) is migrated, not dropped: a
    /// write never tried, and one tried whose answer was lost (reconciled, not duplicated).
    @Test func outboxOfAnOlderSchemaIsMigrated() async throws {
        let f = try await SyncFixture()
        let url = f.storeURL("phone")
        func body(_ id: String, _ size: Int) -> [UInt8] {
            Array(#"{"answers":{"household_size":\#(size),"water_source":"well"},"clientSubmissionId":"\#(id)","contentHash":"\#(f.contentHash)","surveyVersionId":"\#(f.versionId)"}"#.utf8)
        }
        // The second write reached the server before the phone lost its answer.
        let arrived = try await f.api("POST", "/v1/orgs/\(f.org)/responses", token: f.collector.token,
                                      try JSONSerialization.jsonObject(with: Data(body("v1-arrived-0002", 6))) as? [String: Any])
        #expect(arrived.status == 201)
        do {
            let db = try SQLiteDatabase(path: url.path)
            try db.execute("""
                CREATE TABLE outbox(client_id TEXT PRIMARY KEY, server TEXT, org TEXT, user TEXT, method TEXT, path TEXT,
                                    content_type TEXT, body BLOB, status TEXT, tries INTEGER, created REAL);
                PRAGMA user_version = 1;
                """)
            for (id, size, tries) in [("v1-pending-0001", 5, 0), ("v1-arrived-0002", 6, 1)] {
                try db.query("INSERT INTO outbox VALUES(?, ?, ?, ?, 'POST', ?, 'application/json', ?, 'pending', ?, 1700000000)",
                             [.text(id), .text(f.proxy.base), .text(f.org), .text(f.collector.userId),
                              .text("/v1/orgs/\(f.org)/responses"), .blob(body(id, size)), .integer(Int64(tries))])
            }
            db.close()
        }
        let outbox = try f.device("phone")
        #expect(outbox.quarantinedStores.isEmpty)
        let migrated = try outbox.commands()
        #expect(migrated.map(\.id) == ["v1-pending-0001", "v1-arrived-0002"])
        #expect(migrated.map(\.stateLabel) == ["Saved on this device", "Waiting to sync"])
        #expect(migrated[0].body == body("v1-pending-0001", 5), "the captured bytes, unchanged")
        _ = await f.engine(outbox).syncNow()
        #expect(try outbox.commands().map(\.stateLabel) == ["Submitted", "Submitted"])
        #expect(try outbox.command("v1-arrived-0002")?.lastAnswer == "reconciled: the server had it")
        #expect(try await f.acceptedCount() == 2)
    }
}
