import Foundation
import Testing
@testable import SurveySync

/// Opening a device's store: what is damage (kept aside, a new store opened), what is not (the
/// error, the file untouched), and a version-1 store's rows in every state it had.
@Suite struct OutboxOpeningTests {
    static let owner = Owner(server: "http://127.0.0.1:9", organization: "org-1", user: "u-1")

    private func withDirectory(_ body: (URL) throws -> Void) throws {
        let directory = try PackagePaths.temporaryDirectory("surveysync-open")
        defer { try? FileManager.default.removeItem(at: directory) }
        try body(directory)
    }

    /// A store written by a newer library is refused as it is: not quarantined, not migrated down.
    @Test func aStoreFromANewerVersionIsRefusedAndKeptAsItIs() throws {
        try withDirectory { directory in
            let url = directory.appendingPathComponent("phone.sqlite")
            do {
                let db = try SQLiteDatabase(path: url.path)
                try db.execute("CREATE TABLE commands_v9(id TEXT); INSERT INTO commands_v9 VALUES('w-1'); PRAGMA user_version = 9;")
                db.close()
            }
            #expect(throws: OutboxError.newerStore(version: 9)) { try Outbox(at: url) }
            #expect(OutboxError.newerStore(version: 9).message == "Your saved work was written by a newer version of this app. Update the app to send it.")
            // Still the newer version's store, with what it held.
            let db = try SQLiteDatabase(path: url.path)
            #expect(try db.query("PRAGMA user_version") == [[.integer(9)]])
            #expect(try db.query("SELECT id FROM commands_v9") == [[.text("w-1")]])
            #expect(try db.query("SELECT count(*) FROM sqlite_master WHERE name = 'commands'") == [[.integer(0)]])
            db.close()
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("phone.sqlite.quarantine").path))
        }
    }

    /// A file SQLite opens but whose layout is not an outbox's is damage: kept aside whole, with
    /// its reason, and a new store takes new work.
    @Test(arguments: [("CREATE TABLE notes(body TEXT); INSERT INTO notes VALUES('kept');", "unknown tables in a store without a version"),
                      ("CREATE TABLE notes(body TEXT); PRAGMA user_version = -3;", "unknown store version -3")])
    func aStoreOfAnUnknownLayoutIsKeptAsideAsDamage(_ sql: String, _ reason: String) throws {
        try withDirectory { directory in
            let url = directory.appendingPathComponent("phone.sqlite")
            do {
                let db = try SQLiteDatabase(path: url.path)
                try db.execute(sql)
                db.close()
            }
            let outbox = try Outbox(at: url)
            let quarantined = outbox.quarantinedStores
            #expect(quarantined.count == 1)
            // The technical reason, for a support report; the person reads the sentence.
            #expect(quarantined.first?.reason == reason)
            #expect(quarantined.first?.message == "Your saved work on this device could not be read. It has been kept aside and can be exported for support.")
            // What it held is still there, in the copy kept aside.
            let kept = try SQLiteDatabase(path: try #require(quarantined.first).directory.appendingPathComponent("phone.sqlite").path)
            #expect(try kept.query("SELECT body FROM notes") == (sql.contains("INSERT") ? [[.text("kept")]] : []))
            kept.close()
            outbox.signIn(Session(owner: Self.owner, token: "t"))
            #expect(try outbox.commands().isEmpty)
            let fresh = try outbox.captureResponse(surveyVersionId: "v", contentHash: "h", answers: ["n": 1])
            #expect(try outbox.command(fresh.id)?.stateLabel == "Saved on this device")
        }
    }

    /// A person discards a store that was kept aside (after exporting it or deciding not to).
    @Test func aDiscardedQuarantinedStoreIsGoneAndNoLongerNoticed() throws {
        try withDirectory { directory in
            let url = directory.appendingPathComponent("phone.sqlite")
            try Data(repeating: 0x5A, count: 8192).write(to: url)
            let outbox = try Outbox(at: url)
            let kept = try #require(outbox.quarantinedStores.first)
            #expect(outbox.notices() == [kept.message])
            try kept.discard()
            #expect(!FileManager.default.fileExists(atPath: kept.directory.path))
            #expect(outbox.quarantinedStores.isEmpty)
            #expect(outbox.notices().isEmpty)
        }
    }

    /// A store that cannot be opened (here a folder where the file should be) is not damage:
    /// nothing is moved aside, and the person reads that nothing was lost.
    @Test func aStoreThatCannotBeOpenedIsUnavailableNotDamage() throws {
        try withDirectory { directory in
            let url = directory.appendingPathComponent("phone.sqlite")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            do {
                _ = try Outbox(at: url)
                Issue.record("opened")
            } catch let error as OutboxError {
                guard case .unavailable = error else { Issue.record("\(error)"); return }
                #expect(error.message == "Your saved work cannot be opened right now. Nothing was lost; unlock the device or try again in a moment.")
            }
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("phone.sqlite.quarantine").path))
            var isDirectory: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue)
        }
    }

    /// Version 1 kept `pending`, `sent` and `failed` writes, responses and corrections alike.
    @Test func aVersionOneStoreKeepsEveryRowInTheStateItHad() throws {
        try withDirectory { directory in
            let url = directory.appendingPathComponent("phone.sqlite")
            let responses = "/v1/orgs/org-1/responses"
            do {
                let db = try SQLiteDatabase(path: url.path)
                try db.execute("""
                    CREATE TABLE outbox(client_id TEXT PRIMARY KEY, server TEXT, org TEXT, user TEXT, method TEXT, path TEXT,
                                        content_type TEXT, body BLOB, status TEXT, tries INTEGER, created REAL);
                    PRAGMA user_version = 1;
                    """)
                let rows: [(String, String, String, Int64)] = [
                    ("v1-failed-0001", responses, "failed", 3),
                    ("v1-sent-00002", responses, "sent", 1),
                    ("v1-fix-000003", "/v1/orgs/org-1/responses/r-9/resubmit", "pending", 0),
                ]
                for (id, path, status, tries) in rows {
                    try db.query("INSERT INTO outbox VALUES(?, 'http://127.0.0.1:9', 'org-1', 'u-1', 'POST', ?, NULL, ?, ?, ?, 1700000000)",
                                 [.text(id), .text(path), .blob(Array("{\"id\":\"\(id)\"}".utf8)), .text(status), .integer(tries)])
                }
                db.close()
            }
            let outbox = try Outbox(at: url)
            outbox.signIn(Session(owner: Self.owner, token: "t"))
            #expect(outbox.quarantinedStores.isEmpty)
            let commands = try outbox.commands()
            #expect(commands.map(\.id) == ["v1-failed-0001", "v1-sent-00002", "v1-fix-000003"])
            #expect(commands.map(\.stateLabel) == ["Needs attention", "Submitted", "Saved on this device"])
            #expect(commands[0].attention == ["The server refused this before the app was updated. Open it to check it, then send it again or discard it."])
            #expect(commands[0].attempts == 3 && commands[0].ambiguous)
            #expect(commands.map(\.kind) == [.response, .response, .resubmission])
            #expect(commands[2].headers == ["Content-Type": "application/json", "Idempotency-Key": "v1-fix-000003"])
            #expect(commands[0].capturedAt == Date(timeIntervalSince1970: 1_700_000_000))
            #expect(commands[1].body == Array(#"{"id":"v1-sent-00002"}"#.utf8))
            // A person sends the refused one again after checking it: it is queued, identical.
            try outbox.retry("v1-failed-0001")
            #expect(try outbox.command("v1-failed-0001")?.stateLabel == "Waiting to sync")
            // Reopened, it is the current layout: nothing migrates twice.
            outbox.close()
            let again = try Outbox(at: url)
            again.signIn(Session(owner: Self.owner, token: "t"))
            #expect(try again.commands().map(\.stateLabel) == ["Waiting to sync", "Submitted", "Saved on this device"])
        }
    }
}
