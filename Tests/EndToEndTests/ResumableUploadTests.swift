import Foundation
import Testing
import SurveyDomain
@testable import SurveyServer
@testable import SurveyStorage

/// tus 1.0 resumable uploads: the advertised extensions, chunks resumed after a dropped
/// connection, expiry during an upload, termination, and the same refusals as a plain upload.
@Suite struct ResumableUploadTests {
    /// Waits (up to 10 s) until `condition` holds.
    static func waitFor(_ what: String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(10)
        while !condition() && Date() < deadline { usleep(2_000) }
        guard condition() else { throw TestFailure("waited 10 s for \(what)") }
    }

    typealias P = FoundationTests

    struct Tus {
        let s: UploadTests.Setup
        var base: String { "/v1/orgs/\(s.f.orgId)/uploads/resumable" }

        static func meta(_ m: [String: String]) -> String {
            m.sorted { $0.key < $1.key }.map { "\($0.key) \(Base64.encode(Array($0.value.utf8)))" }.joined(separator: ",")
        }

        func create(_ clientUploadId: String, length: Int, type: String = "image/jpeg", question: String = "photo") throws -> Reply {
            try s.f.client.request("POST", base, token: s.f.collectorToken, body: [], headers: [
                "Tus-Resumable": "1.0.0", "Upload-Length": String(length),
                "Upload-Metadata": Self.meta(["clientUploadId": clientUploadId, "surveyVersionId": s.v.versionId, "questionId": question, "contentType": type]),
            ])
        }

        func head(_ location: String) throws -> Reply {
            try s.f.client.request("HEAD", location, token: s.f.collectorToken, headers: ["Tus-Resumable": "1.0.0"])
        }

        func patch(_ location: String, offset: Int, _ bytes: [UInt8], checksum: String? = nil) throws -> Reply {
            var h = ["Tus-Resumable": "1.0.0", "Upload-Offset": String(offset), "Content-Type": "application/offset+octet-stream"]
            if let checksum { h["Upload-Checksum"] = checksum }
            return try s.f.client.request("PATCH", location, token: s.f.collectorToken, body: bytes, headers: h)
        }

        func offset(_ location: String) throws -> Int { Int(try head(location).header("upload-offset") ?? "") ?? -1 }
    }

    @Test func optionsAdvertiseTheExtensions() throws {
        let t = Tus(s: try UploadTests.Setup())
        let r = try t.s.f.client.request("OPTIONS", t.base)
        #expect(r.status == 204)
        #expect(r.header("tus-version") == "1.0.0")
        #expect(r.header("tus-extension") == "creation,checksum,expiration,termination")
        #expect(r.header("tus-checksum-algorithm") == "sha1,sha256")
    }

    /// A PATCH declaring a Content-Length near Int64.max after some bytes are in: the offset plus
    /// that length overflowed and trapped, taking the server down. Now it is refused (413) and
    /// the upload is where it was.
    @Test func aContentLengthNearInt64MaxIsRefusedNotACrash() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(4_000)
        let created = try t.create("huge-length-0001", length: file.count)
        let location = try #require(created.header("location"))
        #expect(try t.patch(location, offset: 0, Array(file[0..<1_000])).status == 204)
        let fd = try t.s.f.client.connect()
        defer { close(fd) }
        let head = "PATCH \(location) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(t.s.f.collectorToken)\r\nTus-Resumable: 1.0.0\r\n" +
            "Upload-Offset: 1000\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: \(Int64.max)\r\n\r\n"
        RawHTTPClient.sendAll(fd, Array(head.utf8))
        var answer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &answer, answer.count, 0)
        #expect(n > 0)
        #expect(String(decoding: answer.prefix(max(n, 0)), as: UTF8.self).hasPrefix("HTTP/1.1 413"))
        #expect(try t.s.f.client.get("/healthz").status == 200)
        #expect(try t.offset(location) == 1_000)
    }

    @Test func threeChunksWithADroppedConnectionThenResume() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(300_000)
        let created = try t.create("big-photo-0001", length: file.count)
        #expect(created.status == 201, "\(created.text)")
        #expect(created.header("tus-resumable") == "1.0.0")
        #expect(created.header("upload-expires") != nil)
        let location = try #require(created.header("location"))
        #expect(try t.head(location).header("upload-offset") == "0")
        #expect(try t.head(location).header("upload-length") == String(file.count))
        #expect(try t.head(location).header("cache-control") == "no-store")

        // Chunk 1.
        let r1 = try t.patch(location, offset: 0, Array(file[0..<100_000]))
        #expect(r1.status == 204)
        #expect(r1.header("upload-offset") == "100000")
        // Chunk 2 starts but the connection drops halfway: the offset stays at 100000.
        let fd = try t.s.f.client.connect()
        let head = "PATCH \(location) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(t.s.f.collectorToken)\r\nTus-Resumable: 1.0.0\r\n" +
            "Upload-Offset: 100000\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: 100000\r\n\r\n"
        RawHTTPClient.sendAll(fd, Array(head.utf8) + Array(file[100_000..<150_000]))
        // The server is inside the chunk (it holds the upload, and on SQLite the partial file
        // has grown past the offset) when the connection drops; then it lets the upload go.
        let app = t.s.f.server.app
        let uploadId = String(location.split(separator: "/").last ?? "")
        let partial = app.blobs.partialPath(uploadId: uploadId)
        func partialSize() -> Int { ((try? FileManager.default.attributesOfItem(atPath: partial))?[.size] as? Int) ?? 0 }
        try Self.waitFor("the chunk under way") { app.uploadLocks.isHeld(uploadId) && (TestEngine.isPostgres || partialSize() > 100_000) }
        close(fd)
        try Self.waitFor("the dropped chunk let go") { !app.uploadLocks.isHeld(uploadId) }
        #expect(TestEngine.isPostgres || partialSize() == 100_000)
        #expect(try t.offset(location) == 100_000)
        // A wrong offset → 409 with the real one.
        let wrong = try t.patch(location, offset: 150_000, Array(file[150_000..<200_000]))
        #expect(wrong.status == 409)
        #expect(wrong.header("upload-offset") == "100000")
        // A checksum mismatch → 460, 1015, the offset unchanged.
        let badSum = "sha1 " + Base64.encode([UInt8](repeating: 0, count: 20))
        let bad = try t.patch(location, offset: 100_000, Array(file[100_000..<200_000]), checksum: badSum)
        #expect(bad.status == 460)
        #expect(bad.errorCode == 1015)
        #expect(try t.offset(location) == 100_000)
        // Resume from HEAD's offset with a good sha256 checksum.
        let chunk2 = Array(file[100_000..<200_000])
        let r2 = try t.patch(location, offset: try t.offset(location), chunk2, checksum: "sha256 " + Base64.encode(Digest.sha256(chunk2)))
        #expect(r2.status == 204)
        #expect(try t.s.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 0)
        // Creating again with the same clientUploadId → the same upload.
        let again = try t.create("big-photo-0001", length: file.count)
        #expect(again.header("location") == location)
        // Chunk 3 completes it: committed exactly like a plain upload.
        let r3 = try t.patch(location, offset: 200_000, Array(file[200_000...]))
        #expect(r3.status == 204, "\(r3.text)")
        #expect(r3.header("upload-offset") == String(file.count))
        let meta = try t.s.f.client.get("/v1/orgs/\(t.s.f.orgId)/uploads/big-photo-0001", token: t.s.f.collectorToken)
        #expect(meta.json?["sha256"]?.stringValue == Digest.sha256Hex(file))
        #expect(meta.json?["size"]?.intValue == file.count)
        let content = try t.s.f.client.get("/v1/orgs/\(t.s.f.orgId)/uploads/big-photo-0001/content", token: t.s.f.collectorToken)
        #expect(content.body == file)
        #expect(t.s.f.server.files(in: "partial").isEmpty)
        #expect(t.s.f.server.files(in: "blobs").count == 1)
        #expect(try t.offset(location) == file.count)
    }

    @Test func expiryDuringTheUploadRefusesChunksAndKeepsWhatWasReceived() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(60_000)
        let location = try #require(try t.create("expiring-0001", length: file.count).header("location"))
        #expect(try t.patch(location, offset: 0, Array(file[0..<20_000])).status == 204)
        try t.s.f.expire()
        let refused = try t.patch(location, offset: 20_000, Array(file[20_000..<40_000]))
        P.expectProblem(refused, .subscriptionExpired)
        #expect(refused.header("tus-resumable") == "1.0.0")
        #expect(try t.offset(location) == 20_000)
        // What was received is kept.
        #expect(try t.s.f.server.receivedBytes(uploadId: t.s.f.server.files(in: "partial")[0]) == Array(file[0..<20_000]))
        // Creating a new one is refused too, and leaves nothing.
        P.expectProblem(try t.create("expiring-0002", length: 10), .subscriptionExpired)
        #expect(try t.s.f.server.count("SELECT COUNT(*) AS n FROM resumable_uploads") == 1)
        try t.s.f.renew()
        #expect(try t.patch(location, offset: 20_000, Array(file[20_000...])).status == 204)
        #expect(try t.s.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 1)
    }

    @Test func terminationAndExpiredUploads() throws {
        let t = Tus(s: try UploadTests.Setup())
        let location = try #require(try t.create("terminate-0001", length: 5000).header("location"))
        #expect(try t.patch(location, offset: 0, Array(Files.jpeg(5000)[0..<1000])).status == 204)
        let del = try t.s.f.client.request("DELETE", location, token: t.s.f.collectorToken, headers: ["Tus-Resumable": "1.0.0"])
        #expect(del.status == 204)
        #expect([404, 410].contains(try t.head(location).status))
        #expect(t.s.f.server.files(in: "partial").isEmpty)
        // An upload past its expiry → 410 on HEAD and PATCH.
        let location2 = try #require(try t.create("expired-upload-0001", length: 5000).header("location"))
        let uploadId = String(location2.split(separator: "/").last!)
        try t.s.f.server.app.database.testOnlyExpireResumable(uploadId)
        #expect(try t.head(location2).status == 410)
        #expect(try t.patch(location2, offset: 0, Array(Files.jpeg(5000)[0..<100])).status == 410)
    }

    @Test func tusRefusesWhatAPlainUploadRefuses() throws {
        let t = Tus(s: try UploadTests.Setup())
        P.expectProblem(try t.create("tus-bad-0001", length: 100, type: "application/pdf"), .unsupportedFileType)
        P.expectProblem(try t.create("tus-bad-0002", length: 100, question: "size"), .questionDoesNotAcceptFiles)
        P.expectProblem(try t.create("tus-bad-0003", length: 2_000_000), .payloadTooLarge)
        P.expectProblem(try t.create("bad", length: 100), .invalidIdentifier)
        // A completed upload that is not a JPEG → 1011 at the last chunk, nothing committed.
        let location = try #require(try t.create("tus-bad-0004", length: 1000).header("location"))
        P.expectProblem(try t.patch(location, offset: 0, Files.png(1000)), .corruptFile)
        #expect(try t.offset(location) == 0)
        #expect(try t.s.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 0)
        #expect(t.s.f.server.files(in: "blobs").isEmpty)
        let noTus = try t.s.f.client.request("POST", t.base, token: t.s.f.collectorToken, body: [], headers: ["Upload-Length": "10"])
        #expect(noTus.status == 412)
    }
}

extension Database {
    /// There is no API to age an upload: the test reaches into the store (via @testable).
    func testOnlyExpireResumable(_ uploadId: String) throws {
        try writer.submit { conn in
            try conn.run("UPDATE resumable_uploads SET expires_at = 0 WHERE upload_id = ?", [.text(uploadId)])
        }
    }
}
