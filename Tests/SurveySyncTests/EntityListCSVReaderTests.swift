import Foundation
import Synchronization
import Testing
@testable import SurveySync

/// How the phone reads the server's entity list CSV (`EntityListCSVReader`), and what a body it
/// cannot read does to the copy it holds: nothing.
@Suite struct EntityListCSVReaderTests {
    func read(_ text: String) throws -> ServerEntityList { try EntityListCSVReader.read(Array(text.utf8)) }

    @Test func quotedFieldsCommasLineBreaksAndCRLFReadAsTheServerWroteThem() throws {
        let text = "name,label,__version,__trunkVersion,__branchId,notes,village\r\n"
            + "a1b2c3d4,\"Ada, the elder\",3,,,\"first line\r\nsecond \"\"quoted\"\" line\",Kisii\r\n"
            + "b1b2c3d4,Plain,1,,,,\r\n"
        let list = try read(text)
        #expect(list.properties == ["notes", "village"])
        #expect(list.entities == [
            ServerEntity(id: "a1b2c3d4", label: "Ada, the elder", version: 3,
                         properties: ["notes": "first line\r\nsecond \"quoted\" line", "village": "Kisii"]),
            ServerEntity(id: "b1b2c3d4", label: "Plain", version: 1, properties: [:]),
        ])
        // LF line ends, a byte order mark and no last line break read the same.
        let lf = "\u{FEFF}name,label,__version,__trunkVersion,__branchId,notes,village\nb1b2c3d4,Plain,1,,,,"
        #expect(try read(lf).entities == [ServerEntity(id: "b1b2c3d4", label: "Plain", version: 1, properties: [:])])
        // A list without entities: the header alone.
        #expect(try read("name,label,__version,__trunkVersion,__branchId\r\n") == ServerEntityList(properties: [], entities: []))
    }

    @Test func aMalformedBodyIsRefusedWholeNeverCrashes() {
        let header = "name,label,__version,__trunkVersion,__branchId,village\r\n"
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("not UTF-8", Array(header.utf8) + [0x61, 0x2C, 0xFF, 0xFE, 0x0D, 0x0A]),
            ("unclosed quote", Array((header + "a1b2c3d4,\"Ada,1,,,Kisii\r\n").utf8)),
            ("quote inside a field", Array((header + "a1b2c3d4,Ad\"a,1,,,Kisii\r\n").utf8)),
            ("text after a closing quote", Array((header + "a1b2c3d4,\"Ada\"x,1,,,Kisii\r\n").utf8)),
            ("short row", Array((header + "a1b2c3d4,Ada,1\r\n").utf8)),
            ("long row", Array((header + "a1b2c3d4,Ada,1,,,Kisii,extra\r\n").utf8)),
            ("no version", Array((header + "a1b2c3d4,Ada,one,,,Kisii\r\n").utf8)),
            ("version zero", Array((header + "a1b2c3d4,Ada,0,,,Kisii\r\n").utf8)),
            ("empty id", Array((header + ",Ada,1,,,Kisii\r\n").utf8)),
            ("repeated id", Array((header + "a1b2c3d4,Ada,1,,,Kisii\r\na1b2c3d4,Bo,1,,,Kisii\r\n").utf8)),
            ("not the list's columns", Array("id,title\r\na,b\r\n".utf8)),
            ("a problem document", Array(#"{"errorCode":1005,"title":"Not found"}"#.utf8)),
            ("lone carriage return", Array((header + "a1b2c3d4,Ada,1,,,Kisii\r").utf8)),
            ("repeated column", Array("name,label,__version,village,village\r\n".utf8)),
        ]
        for (name, bytes) in cases {
            #expect(throws: EntityListCSVReader.Malformed.self, "\(name)") { try EntityListCSVReader.read(bytes) }
        }
    }

    /// A server (or something in front of it) that answers 200 with a body that is not the list:
    /// the pass reports the list as failed and the phone keeps the copy it had.
    @Test func aBodyThatIsNotTheListKeepsThePreviousCopy() async throws {
        let dir = try PackagePaths.temporaryDirectory("surveysync-entity-csv")
        defer { try? FileManager.default.removeItem(at: dir) }
        let outbox = try Outbox(at: dir.appendingPathComponent("o.sqlite"))
        outbox.signIn(Session(owner: Owner(server: "http://127.0.0.1:9", organization: "org-1", user: "u-1"), token: "t"))
        let feed = IncomingAnswer(status: 200, headers: [:], body: Array(#"{"items":[],"nextCursor":null}"#.utf8))
        let good = IncomingAnswer(status: 200, headers: ["etag": "\"md5:1\""],
                                  body: Array("name,label,__version,__trunkVersion,__branchId,village\r\na1b2c3d4,Ada,2,,,Kisii\r\n".utf8))
        let broken = IncomingAnswer(status: 200, headers: ["etag": "\"md5:2\""],
                                    body: Array("name,label,__version,__trunkVersion,__branchId,village\r\na1b2c3d4,\"Ada,2".utf8))
        var configuration = SyncConfiguration()
        configuration.entityLists = ["households"]
        let engine = SyncEngine(outbox: outbox, transport: PacingTests.ScriptedTransport([feed, good, feed, broken]),
                                configuration: configuration)

        #expect(await engine.syncNow().entityListsRefreshed == ["households"])
        let copy = try outbox.entities(in: "households")
        #expect(copy.map(\.id) == ["a1b2c3d4"])
        let failed = await engine.syncNow()
        #expect(failed.entityListsRefreshed.isEmpty)
        #expect(failed.entityListsFailed["households"]?.hasPrefix("the server's CSV could not be read") == true, "\(failed.entityListsFailed)")
        #expect(try outbox.entities(in: "households") == copy)
        #expect(try outbox.store.entityList(outbox.requireOwner(), "households")?.etag == "\"md5:1\"", "the old tag too")
    }
}
