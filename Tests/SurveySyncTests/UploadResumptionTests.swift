import Foundation
import Testing
@testable import SurveySync

/// How a file's upload goes on when the server's view of it differs from the device's: an
/// address it forgot, bytes it took without confirming them, the device's copy gone, other
/// bytes under the same id. Against a tus server in memory (`TusServerDouble`), with small chunks.
@Suite struct UploadResumptionTests {
    static let organization = "org-1"
    static let uploads = "/v1/orgs/org-1/uploads/resumable"

    /// A phone with one response citing a 10-byte file, sent in chunks of 4 bytes.
    struct Phone {
        let directory: URL
        let outbox: Outbox
        let engine: SyncEngine
        let server: TusServerDouble
        let response: OutboxCommand
        let uploadId: String
        let file: [UInt8]

        init() throws {
            directory = try PackagePaths.temporaryDirectory("surveysync-upload")
            outbox = try Outbox(at: directory.appendingPathComponent("phone.sqlite"))
            outbox.signIn(Session(owner: Owner(server: "http://127.0.0.1:9", organization: UploadResumptionTests.organization, user: "u-1"), token: "t"))
            file = Array("0123456789".utf8)
            let source = directory.appendingPathComponent("photo.png")
            try Data(file).write(to: source)
            response = try outbox.captureResponse(surveyVersionId: "v", contentHash: "h", answers: ["n": 1],
                                                  attachments: [Outbox.Attachment(questionId: "photo", file: source, contentType: "image/png")])
            uploadId = try #require(response.dependsOn.first)
            server = TusServerDouble(organization: UploadResumptionTests.organization)
            var configuration = SyncConfiguration()
            configuration.initialBackoff = 0
            configuration.maxBackoff = 0
            configuration.uploadChunkSize = 4
            engine = SyncEngine(outbox: outbox, transport: server, configuration: configuration)
        }

        func upload() throws -> OutboxCommand { try #require(try outbox.command(uploadId)) }
        func patches() -> [String] { server.log.filter { $0.hasPrefix("PATCH") } }
        func received(_ location: String) -> [UInt8]? { server.state.withLock { $0.uploads[location]?.bytes } }
        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    @Test(arguments: [404, 410])
    func anUploadTheServerNoLongerHasStartsAgainFromTheFirstByte(_ status: Int) async throws {
        let phone = try Phone()
        defer { phone.remove() }
        // The second chunk arrives but its answer is lost: the device holds offset 4.
        phone.server.state.withLock { $0.loseAnswerTo = ["PATCH \(Self.uploads)/u1 at 4"] }
        _ = await phone.engine.syncNow()
        let interrupted = try phone.upload()
        #expect(interrupted.stateLabel == "Waiting to sync")
        #expect(interrupted.uploadLocation == "\(Self.uploads)/u1")
        #expect(interrupted.uploadOffset == 4)

        // Meanwhile the server let the upload expire (410) or removed it (404).
        phone.server.state.withLock { $0.forgetOnHead = status }
        _ = await phone.engine.syncNow()
        let done = try phone.upload()
        #expect(done.stateLabel == "Completed")
        #expect(done.lastAnswer == "uploaded", "sent whole again, not resumed")
        #expect(done.uploadLocation == "\(Self.uploads)/u2")
        #expect(phone.server.state.withLock { $0.created } == 2, "a new upload was created")
        #expect(phone.patches() == ["PATCH \(Self.uploads)/u1 at 0", "PATCH \(Self.uploads)/u1 at 4",
                                    "PATCH \(Self.uploads)/u2 at 0", "PATCH \(Self.uploads)/u2 at 4", "PATCH \(Self.uploads)/u2 at 8"])
        #expect(phone.received("\(Self.uploads)/u2") == phone.file)
        #expect(try phone.outbox.command(phone.response.id)?.stateLabel == "Completed", "the response went once its file was held")
    }

    @Test func anOffsetTheServerHoldsBeyondTheConfirmedOneIsWhereTheUploadGoesOn() async throws {
        let phone = try Phone()
        defer { phone.remove() }
        // The server took two bytes of the first chunk and answers 409 with its own offset.
        phone.server.state.withLock { $0.conflictAfterTaking = 2 }
        _ = await phone.engine.syncNow()
        let done = try phone.upload()
        #expect(done.stateLabel == "Completed")
        #expect(phone.patches() == ["PATCH \(Self.uploads)/u1 at 0", "PATCH \(Self.uploads)/u1 at 2", "PATCH \(Self.uploads)/u1 at 6"])
        #expect(phone.received("\(Self.uploads)/u1") == phone.file, "no byte twice, none missing")
        #expect(phone.server.state.withLock { $0.created } == 1)
    }

    @Test func aFileMissingFromTheDeviceNeedsAttentionAndSendsNothing() async throws {
        let phone = try Phone()
        defer { phone.remove() }
        try FileManager.default.removeItem(atPath: try #require(try phone.upload().filePath))
        let report = await phone.engine.syncNow()
        #expect(report.reachedServer)
        let upload = try phone.upload()
        let missing = "The file saved with this response is missing from this device. Attach it again in a new copy."
        #expect(upload.stateLabel == "Needs attention")
        #expect(upload.attention == [missing])
        #expect(upload.lastAnswer == "file missing")
        let response = try #require(try phone.outbox.command(phone.response.id))
        #expect(response.stateLabel == "Needs attention")
        #expect(response.attention == ["A file attached to this response could not be sent.", missing])
        #expect(phone.patches().isEmpty)
        #expect(!phone.server.log.contains("POST /v1/orgs/\(Self.organization)/responses"))
        // Nothing goes again by itself.
        #expect(await phone.engine.syncNow().attempted == 0)
    }

    @Test func otherBytesOnTheServerUnderTheSameIdNeedAttention() async throws {
        let phone = try Phone()
        defer { phone.remove() }
        let other = String(repeating: "ab", count: 32)
        phone.server.state.withLock { $0.recordedSHA256 = other }
        _ = await phone.engine.syncNow()
        let upload = try phone.upload()
        let words = "The server holds other bytes for this file than this device has. Attach the file again in a new copy."
        #expect(upload.stateLabel == "Needs attention")
        #expect(upload.attention == [words])
        #expect(upload.lastAnswer == "sha256 \(other) on the server, \(try #require(upload.fileSHA256)) here")
        #expect(try phone.outbox.command(phone.response.id)?.attention == ["A file attached to this response could not be sent.", words])
        #expect(!phone.server.log.contains("POST /v1/orgs/\(Self.organization)/responses"), "a response citing the wrong bytes is not sent")
        // The file stays on the device for a person to act on.
        #expect(FileManager.default.fileExists(atPath: try #require(upload.filePath)))
    }

    @Test func anUploadCompletedWhoseLastAnswerWasLostIsFoundCompleteNotSentAgain() async throws {
        let phone = try Phone()
        defer { phone.remove() }
        phone.server.state.withLock { $0.loseAnswerTo = ["PATCH \(Self.uploads)/u1 at 8"] }
        _ = await phone.engine.syncNow()
        #expect(try phone.upload().stateLabel == "Waiting to sync")
        _ = await phone.engine.syncNow()
        let done = try phone.upload()
        #expect(done.stateLabel == "Completed")
        #expect(done.lastAnswer == "found complete on the server")
        #expect(phone.patches().count == 3, "no chunk sent twice")
        #expect(phone.received("\(Self.uploads)/u1") == phone.file)
    }
}
