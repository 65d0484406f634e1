import Foundation
import Testing
@testable import SurveySync

/// Where the phone keeps its entity list copies: the store's version 3, and a replacement that
/// is all or nothing.
@Suite struct EntityListStoreTests {
    static let owner = Owner(server: "http://127.0.0.1:9", organization: "org-1", user: "u-1")

    /// A store of the previous layout (version 2) keeps every command and gains the copies' tables.
    @Test func aVersion2StoreIsMigratedWithItsCommands() throws {
        let directory = try PackagePaths.temporaryDirectory("surveysync-v2")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("phone.sqlite")
        do {
            let db = try SQLiteDatabase(path: url.path)
            try db.execute(OutboxSchema.version2)
            try db.execute("""
                INSERT INTO commands(id, server, organization, user, kind, method, path, body, state, captured_at, updated_at)
                VALUES('c-00000001', 'http://127.0.0.1:9', 'org-1', 'u-1', 'response', 'POST', '/v1/orgs/org-1/responses', x'7b7d', 'saved', 1, 1);
                PRAGMA user_version = 2;
                """)
            db.close()
        }
        let outbox = try Outbox(at: url)
        outbox.signIn(Session(owner: Self.owner, token: "t"))
        #expect(try outbox.commands().map(\.id) == ["c-00000001"])
        #expect(try outbox.commands().first?.body == Array("{}".utf8))
        #expect(try outbox.entities(in: "households").isEmpty)
        #expect(outbox.quarantinedStores.isEmpty)
        outbox.close()
        let db = try SQLiteDatabase(path: url.path)
        #expect(try db.query("PRAGMA user_version") == [[.integer(3)]])
        #expect(try db.query("SELECT count(*) FROM sqlite_master WHERE name IN ('entity_lists', 'entities')") == [[.integer(2)]])
        db.close()
    }

    /// A new copy that cannot be stored whole (the device's storage full half-way through its
    /// rows) leaves the previous copy exactly as it was: one transaction.
    @Test func aCopyThatDoesNotFitLeavesThePreviousOneWhole() async throws {
        let directory = try PackagePaths.temporaryDirectory("surveysync-full")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(at: directory.appendingPathComponent("o.sqlite"), configuration: .init(maxStorePages: 64))
        outbox.signIn(Session(owner: Self.owner, token: "t"))
        let feed = IncomingAnswer(status: 200, headers: [:], body: Array(#"{"items":[],"nextCursor":null}"#.utf8))
        let header = "name,label,__version,__trunkVersion,__branchId,notes\r\n"
        let small = IncomingAnswer(status: 200, headers: ["etag": "\"md5:1\""], body: Array((header + "a1b2c3d4,Ada,1,,,short\r\n").utf8))
        let notes = String(repeating: "n", count: 400)
        let rows = (0..<2_000).map { String(format: "e%07d,Household %d,1,,,%@\r\n", $0, $0, notes) }.joined()
        let large = IncomingAnswer(status: 200, headers: ["etag": "\"md5:2\""], body: Array((header + rows).utf8))
        var configuration = SyncConfiguration()
        configuration.entityLists = ["households"]
        let engine = SyncEngine(outbox: outbox, transport: PacingTests.ScriptedTransport([feed, small, feed, large]), configuration: configuration)

        #expect(await engine.syncNow().entityListsRefreshed == ["households"])
        let before = try outbox.entities(in: "households")
        #expect(before.map(\.id) == ["a1b2c3d4"])
        let full = await engine.syncNow()
        #expect(full.entityListsFailed["households"]?.hasPrefix("not stored on this device") == true, "\(full)")
        #expect(try outbox.entities(in: "households") == before)
        #expect(try outbox.store.entityList(Self.owner, "households")?.etag == "\"md5:1\"")
    }
}
