import Foundation
import Testing
@testable import SurveySync

/// A server address that answers with a redirect, or gives a file's upload an address on another
/// origin (surveyd itself does neither): the engine does not follow it, so the token never reaches
/// another origin, and the person is told while the work stays on the device. Real sockets on
/// 127.0.0.1, the real URLSession transport.
@Suite struct RedirectTests {
    /// An entity list's download is not followed either: the token stays, the copy is kept.
    @Test func anEntityListRedirectIsNotFollowedAndThePhonesCopyIsKept() async throws {
        let directory = try PackagePaths.temporaryDirectory("surveysync-redirect-list")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try RedirectingServer(directory: directory)
        let outbox = try Outbox(at: directory.appendingPathComponent("phone.sqlite"))
        let owner = Owner(server: server.base, organization: "org-1", user: "u-1")
        outbox.signIn(Session(owner: owner, token: "the-collectors-token"))
        let copy = ServerEntityList(properties: ["village"], entities: [ServerEntity(id: "a1b2c3d4", label: "Ada's", version: 2, properties: ["village": "Kisii"])])
        try outbox.store.saveEntityList(owner, "households", etag: "\"md5:1\"", list: copy, settling: [], at: Date())
        let before = try outbox.entities(in: "households")
        var configuration = SyncConfiguration()
        configuration.entityLists = ["households"]
        let engine = SyncEngine(outbox: outbox, transport: URLSessionTransport(timeout: 10, closeConnections: true), configuration: configuration)

        let report = await engine.syncNow()
        let asked = server.redirected.map(\.request)
        #expect(asked.contains { $0.hasPrefix("GET /v1/orgs/org-1/entity-lists/households/entities.csv ") }, "\(asked)")
        #expect(server.followed.isEmpty, "nothing reached the other origin: \(server.followed.map(\.request))")
        #expect(report.redirectedTo == server.target)
        #expect(report.entityListsFailed == ["households": "HTTP 307 redirect to \(server.target)"])
        #expect(try outbox.entities(in: "households") == before)
        #expect(try outbox.store.entityList(owner, "households")?.etag == "\"md5:1\"")
    }

    @Test func aRedirectIsNeverFollowedSoTheTokenStaysWithTheServerAndTheWorkStaysOnTheDevice() async throws {
        let directory = try PackagePaths.temporaryDirectory("surveysync-redirect")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try RedirectingServer(directory: directory)
        let outbox = try Outbox(at: directory.appendingPathComponent("phone.sqlite"))
        let owner = Owner(server: server.base, organization: "org-1", user: "u-1")
        outbox.signIn(Session(owner: owner, token: "the-collectors-token"))
        // No backoff: anything left due would go again on the very next pass.
        var configuration = SyncConfiguration()
        configuration.initialBackoff = 0
        configuration.maxBackoff = 0
        let engine = SyncEngine(outbox: outbox, transport: URLSessionTransport(timeout: 10, closeConnections: true), configuration: configuration)
        let captured = try outbox.captureResponse(title: "Household of 4", surveyVersionId: "v-1", contentHash: "h-1",
                                                  answers: ["household_size": 4, "water_source": "well"])

        let report = await engine.syncNow()
        let asked = server.redirected.map(\.request)
        #expect(asked.contains { $0.hasPrefix("POST /v1/orgs/org-1/responses ") }, "\(asked)")
        #expect(asked.contains { $0.hasPrefix("GET /v1/orgs/org-1/changes?") }, "the changes feed was asked too: \(asked)")
        #expect(server.followed.isEmpty, "nothing reached the other origin: \(server.followed.map { ($0.request, $0.headers) })")
        #expect(!server.followed.contains { $0.headers.keys.contains { $0.lowercased() == "authorization" } })
        let sentence = "The server answered with a redirect to \(server.target); surveyd never redirects, so the server address may be wrong. Check the server address in settings."
        let c = try #require(try outbox.command(captured.id), "kept in the outbox")
        #expect(c.stateLabel == "Needs attention")
        #expect(c.attention == [sentence])
        #expect(c.lastAnswer == "HTTP 307 redirect to \(server.target)")
        #expect(c.body == captured.body, "kept byte for byte")
        #expect(report.redirectedTo == server.target)
        #expect(!report.reachedServer, "a redirect is not surveyd's answer: no successful sync is recorded")
        #expect(try outbox.metrics().lastSuccessfulSync == nil)

        // Not sent again by itself, even with no backoff: no loop against the redirect.
        _ = await engine.syncNow()
        #expect(server.redirected.filter { $0.request.hasPrefix("POST ") }.count == 1)
        #expect(try outbox.command(captured.id)?.stateLabel == "Needs attention")

        // The subscription check of an organization waiting for renewal is not followed either.
        try outbox.store.setRenewalRequired(true, server: owner.server, organization: owner.organization)
        let renewal = await engine.syncNow()
        #expect(server.redirected.last?.request.hasPrefix("GET /v1/orgs/org-1/subscription ") == true, "\(server.redirected.map(\.request))")
        #expect(renewal.redirectedTo == server.target)
        #expect(outbox.renewalRequired, "still waiting: the redirect says nothing about the subscription")
        #expect(server.followed.isEmpty)

        // The person fixed the cause and asks again: the identical request goes, and is still not followed.
        try outbox.store.setRenewalRequired(false, server: owner.server, organization: owner.organization)
        try outbox.retry(captured.id)
        #expect(try outbox.command(captured.id)?.stateLabel == "Waiting to sync")
        _ = await engine.syncNow()
        #expect(server.redirected.filter { $0.request.hasPrefix("POST ") }.count == 2)
        #expect(server.redirected.allSatisfy { $0.headers["Authorization"] == "Bearer the-collectors-token" },
                "the configured server itself gets the token, as any request does")
        #expect(server.followed.isEmpty)
        #expect(try outbox.command(captured.id)?.attention == [sentence])
    }

    @Test func aRedirectedFileIsNotFollowedAndTheResponseCitingItWaitsWithIt() async throws {
        let directory = try PackagePaths.temporaryDirectory("surveysync-redirect")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try RedirectingServer(directory: directory)
        let outbox = try Outbox(at: directory.appendingPathComponent("phone.sqlite"))
        outbox.signIn(Session(owner: Owner(server: server.base, organization: "org-1", user: "u-1"), token: "the-collectors-token"))
        let engine = SyncEngine(outbox: outbox, transport: URLSessionTransport(timeout: 10, closeConnections: true))
        let photo = directory.appendingPathComponent("photo.png")
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 2000)).write(to: photo)
        let response = try outbox.captureResponse(title: "Household of 3", surveyVersionId: "v-1", contentHash: "h-1", answers: ["household_size": 3],
                                                  attachments: [Outbox.Attachment(questionId: "photo", file: photo, contentType: "image/png")])
        let uploadId = try #require(response.dependsOn.first)

        let report = await engine.syncNow()
        #expect(server.redirected.contains { $0.request.hasPrefix("POST /v1/orgs/org-1/uploads/resumable ") }, "\(server.redirected.map(\.request))")
        #expect(server.followed.isEmpty, "\(server.followed.map(\.request))")
        #expect(report.redirectedTo == server.target)
        let sentence = "The server answered with a redirect to \(server.target); surveyd never redirects, so the server address may be wrong. Check the server address in settings."
        let upload = try #require(try outbox.command(uploadId))
        #expect(upload.stateLabel == "Needs attention")
        #expect(upload.attention == [sentence])
        let waiting = try #require(try outbox.command(response.id))
        #expect(waiting.stateLabel == "Needs attention")
        #expect(waiting.attention == ["A file attached to this response could not be sent.", sentence])
        #expect(!server.redirected.contains { $0.request.hasPrefix("POST /v1/orgs/org-1/responses ") }, "the response never went without its file")
    }

    @Test func anUploadLocationOnAnotherOriginGetsNothingAndTheFileWaitsInTheOutbox() async throws {
        let directory = try PackagePaths.temporaryDirectory("surveysync-elsewhere")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try RedirectingServer(directory: directory, mode: .uploadLocationElsewhere)
        let outbox = try Outbox(at: directory.appendingPathComponent("phone.sqlite"))
        outbox.signIn(Session(owner: Owner(server: server.base, organization: "org-1", user: "u-1"), token: "the-collectors-token"))
        // No backoff: anything left due would go again on the very next pass.
        var configuration = SyncConfiguration()
        configuration.initialBackoff = 0
        configuration.maxBackoff = 0
        let engine = SyncEngine(outbox: outbox, transport: URLSessionTransport(timeout: 10, closeConnections: true), configuration: configuration)
        let photo = directory.appendingPathComponent("photo.png")
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 2000)).write(to: photo)
        let response = try outbox.captureResponse(title: "Household of 3", surveyVersionId: "v-1", contentHash: "h-1", answers: ["household_size": 3],
                                                  attachments: [Outbox.Attachment(questionId: "photo", file: photo, contentType: "image/png")])
        let uploadId = try #require(response.dependsOn.first)
        let sentence = "The server pointed this file's upload to another address, \(server.target); surveyd never does that, so the server address may be wrong. Check the server address in settings."

        let report = await engine.syncNow()
        let asked = server.redirected.map(\.request)
        #expect(asked.contains { $0.hasPrefix("POST /v1/orgs/org-1/uploads/resumable ") }, "\(asked)")
        #expect(server.followed.isEmpty, "nothing reached the other origin: \(server.followed.map { ($0.request, $0.headers) })")
        #expect(!server.followed.contains { $0.headers.keys.contains { $0.lowercased() == "authorization" } })
        #expect(report.uploadPointedTo == server.target)
        let upload = try #require(try outbox.command(uploadId), "kept in the outbox")
        #expect(upload.stateLabel == "Needs attention")
        #expect(upload.attention == [sentence])
        #expect(upload.lastAnswer == "HTTP 201 upload Location on another origin, \(server.target): nothing sent there")
        #expect(upload.uploadLocation == nil, "the other origin's address is not kept")
        let file = try #require(upload.filePath)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data(contentsOf: photo), "the file is kept whole")
        let waiting = try #require(try outbox.command(response.id))
        #expect(waiting.stateLabel == "Needs attention")
        #expect(waiting.attention == ["A file attached to this response could not be sent.", sentence])
        #expect(!asked.contains { $0.hasPrefix("POST /v1/orgs/org-1/responses ") }, "the response never went without its file")

        // Not sent again by itself, even with no backoff.
        _ = await engine.syncNow()
        #expect(server.redirected.filter { $0.request.hasPrefix("POST /v1/orgs/org-1/uploads/resumable ") }.count == 1)
        #expect(server.followed.isEmpty)

        // An address on the other origin already in the store (kept by a version that followed any
        // Location) is not used either: after retry(id) no HEAD or PATCH goes there.
        var kept = upload
        kept.uploadLocation = "http://\(server.target)/v1/orgs/org-1/uploads/resumable/up-1"
        kept.uploadOffset = 1000
        try outbox.store.update(kept)
        try outbox.retry(uploadId)
        _ = await engine.syncNow()
        #expect(server.followed.isEmpty, "\(server.followed.map { ($0.request, $0.headers) })")
        let again = try #require(try outbox.command(uploadId), "still in the outbox")
        #expect(again.stateLabel == "Needs attention")
        #expect(again.attention == [sentence])
        #expect(again.uploadLocation == nil && again.uploadOffset == 0, "forgotten: the next try creates the upload again")
    }
}
