import Foundation
import Testing
import SurveyDomain
@testable import SurveyStorage

/// Plain uploads: every refusal leaves no row and no file; file problems are never 1001.
@Suite struct UploadTests {
    typealias P = FoundationTests

    struct Setup {
        let f: Fixture
        let v: (surveyId: String, versionId: String, contentHash: String)
        init() throws {
            f = try Fixture()
            v = try f.publishSurvey()
        }
        init(f: Fixture, v: (surveyId: String, versionId: String, contentHash: String)) {
            self.f = f
            self.v = v
        }

        func put(_ id: String, _ bytes: [UInt8], type: String = "image/jpeg", question: String = "photo", version: String? = nil,
                 token: String? = nil, extra: [String: String] = [:]) throws -> Reply {
            var h = ["Content-Type": type, "Survey-Version-Id": version ?? v.versionId, "Question-Id": question]
            for (k, val) in extra { h[k] = val }
            return try f.client.request("PUT", "/v1/orgs/\(f.orgId)/uploads/\(id)", token: token ?? f.collectorToken, body: bytes, headers: h)
        }

        /// Nothing of a refused upload remains: no row, no audit entry, no blob, no temp file.
        func expectNothingStored(sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(try f.server.count("SELECT COUNT(*) AS n FROM uploads") == 0, sourceLocation: sourceLocation)
            #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action LIKE 'upload%'") == 0, sourceLocation: sourceLocation)
            #expect(f.server.files(in: "blobs").isEmpty, sourceLocation: sourceLocation)
            #expect(f.server.files(in: "tmp").isEmpty, sourceLocation: sourceLocation)
        }
    }

    /// Runs a refusal on an active and on an expired organization: the same file code both times.
    func refusedOnItsOwnMerits(_ code: ErrorCode, _ send: (Setup) throws -> Reply) throws {
        let s = try Setup()
        P.expectProblem(try send(s), code)
        try s.expectNothingStored()
        try s.f.expire()
        P.expectProblem(try send(s), code)
        try s.expectNothingStored()
    }

    @Test func unknownOrForeignVersionIs1005() throws {
        try refusedOnItsOwnMerits(.notFound) { s in try s.put("upload-0001", Files.jpeg(), version: "sv_nope") }
        let s = try Setup()
        let other = try Fixture(server: s.f.server)
        let foreign = try other.publishSurvey()
        let a = try s.put("upload-0002", Files.jpeg(), version: foreign.versionId)
        let b = try s.put("upload-0002", Files.jpeg(), version: "sv_nope")
        P.expectProblem(a, .notFound)
        #expect(a.body == b.body)
        try s.expectNothingStored()
    }

    @Test func typeNotAcceptedIs1010() throws {
        try refusedOnItsOwnMerits(.unsupportedFileType) { s in try s.put("upload-0001", Array("%PDF-1.4 x".utf8), type: "application/pdf") }
    }

    @Test func bytesNotMatchingTheTypeAre1011() throws {
        try refusedOnItsOwnMerits(.corruptFile) { s in try s.put("upload-0001", Files.jpeg(), type: "image/png") }
    }

    @Test func notAFileQuestionIs1012() throws {
        try refusedOnItsOwnMerits(.questionDoesNotAcceptFiles) { s in try s.put("upload-0001", Files.jpeg(), question: "size") }
        try refusedOnItsOwnMerits(.questionDoesNotAcceptFiles) { s in try s.put("upload-0001", Files.jpeg(), question: "no_such_question") }
    }

    @Test func overTheQuestionLimitIs1013() throws {
        // The fixture's photo question allows 1,000,000 bytes.
        try refusedOnItsOwnMerits(.payloadTooLarge) { s in try s.put("upload-0001", Files.jpeg(1_000_001)) }
    }

    @Test func digestMismatchIs1015() throws {
        let wrong = "sha-256=:" + Base64.encode(Digest.sha256(Array("other".utf8))) + ":"
        try refusedOnItsOwnMerits(.digestMismatch) { s in try s.put("upload-0001", Files.jpeg(), extra: ["Content-Digest": wrong]) }
    }

    @Test func aGoodFileOnAnExpiredOrganizationIs1001ThenSucceedsOnceAfterRenewal() throws {
        let s = try Setup()
        let bytes = Files.jpeg(4096)
        let digest = "sha-256=:" + Base64.encode(Digest.sha256(bytes)) + ":"
        try s.f.expire()
        P.expectProblem(try s.put("photo-0001", bytes, extra: ["Content-Digest": digest]), .subscriptionExpired)
        try s.expectNothingStored()
        try s.f.renew()
        let ok = try s.put("photo-0001", bytes, extra: ["Content-Digest": digest])
        #expect(ok.status == 201, "\(ok.text)")
        #expect(ok.header("location") == "/v1/orgs/\(s.f.orgId)/uploads/photo-0001")
        #expect(ok.json?["sha256"]?.stringValue == Digest.sha256Hex(bytes))
        #expect(ok.json?["size"]?.intValue == 4096)
        #expect(ok.json?["contentType"]?.stringValue == "image/jpeg")
        // Replay → 200, also while expired; different bytes → 1004.
        let again = try s.put("photo-0001", bytes)
        #expect(again.status == 200)
        #expect(again.header("idempotent-replayed") == "true")
        try s.f.expire()
        #expect(try s.put("photo-0001", bytes).status == 200)
        P.expectProblem(try s.put("photo-0001", Files.jpeg(4096, seed: 9)), .idempotencyConflict)
        P.expectProblem(try s.put("photo-0001", bytes, type: "image/png"), .idempotencyConflict)
        #expect(try s.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 1)
        #expect(s.f.server.files(in: "blobs") .count == 1)
        #expect(s.f.server.files(in: "tmp").isEmpty)
        // The stored file is exactly the bytes sent, at its content address.
        #expect(try s.f.server.storedBytes(blob: s.f.server.files(in: "blobs")[0]) == bytes)
    }

    @Test func readingMetadataAndContent() throws {
        let s = try Setup()
        let bytes = Files.png(3000)
        #expect(try s.put("photo-0002", bytes, type: "image/png").status == 201)
        let meta = try s.f.client.get("/v1/orgs/\(s.f.orgId)/uploads/photo-0002", token: s.f.reviewerToken)
        #expect(meta.json?["questionId"]?.stringValue == "photo")
        let content = try s.f.client.get("/v1/orgs/\(s.f.orgId)/uploads/photo-0002/content", token: s.f.collectorToken)
        #expect(content.status == 200)
        #expect(content.body == bytes)
        #expect(content.header("x-content-type-options") == "nosniff")
        #expect(content.header("content-disposition")?.hasPrefix("attachment") == true)
        #expect(content.header("content-type") == "image/png")
        P.expectProblem(try s.f.client.get("/v1/orgs/\(s.f.orgId)/uploads/photo-9999", token: s.f.collectorToken), .notFound)
    }

    /// A body larger than the server's write pieces (128 KiB, `TempFile`) and not a multiple of
    /// them is stored byte for byte.
    @Test func aFileOfManyWritePiecesIsStoredExactly() throws {
        let s = try Setup()
        let bytes = Files.jpeg(999_999, seed: 7)
        #expect(try s.put("photo-0003", bytes).status == 201)
        let content = try s.f.client.get("/v1/orgs/\(s.f.orgId)/uploads/photo-0003/content", token: s.f.collectorToken)
        #expect(content.status == 200)
        #expect(content.body.count == bytes.count)
        #expect(content.body == bytes)
        #expect(try s.f.server.count("SELECT size AS n FROM uploads WHERE client_upload_id = 'photo-0003'") == 999_999)
    }

    @Test func invalidIdsAndMissingHeaders() throws {
        let s = try Setup()
        P.expectProblem(try s.put("short", Files.jpeg()), .invalidIdentifier)
        P.expectProblem(try s.f.client.request("PUT", "/v1/orgs/\(s.f.orgId)/uploads/upload-0003", token: s.f.collectorToken,
                                               body: Files.jpeg(), headers: ["Content-Type": "image/jpeg"]), .malformedRequest)
        P.expectProblem(try s.put("upload-0004", Files.jpeg(), token: s.f.reviewerToken), .forbidden)
        P.expectProblem(try s.put("upload-0004", Files.jpeg(), token: "nope"), .unauthenticated)
        try s.expectNothingStored()
    }

    @Test func responsesCiteCompletedUploadsOfTheirQuestion() throws {
        let s = try Setup()
        #expect(try s.put("photo-0003", Files.jpeg()).status == 201)
        let ok = try s.f.client.post("/v1/orgs/\(s.f.orgId)/responses", token: s.f.collectorToken,
                                     ResponseTests.submission("with-photo-0001", s.v, answers: ["size": 2, "photo": ["clientUploadId": "photo-0003"]]))
        #expect(ok.status == 201, "\(ok.text)")
        P.expectProblem(try s.f.client.post("/v1/orgs/\(s.f.orgId)/responses", token: s.f.collectorToken,
                                            ResponseTests.submission("with-photo-0002", s.v, answers: ["size": 2, "photo": ["clientUploadId": "photo-missing"]])),
                        .attachmentNotUploaded)
        // An upload of another question (a second file question) does not count.
        var def = Fixture.definition.objectValue!
        var qs = def["questions"]!.arrayValue!
        qs.append(["id": "signature", "type": "file", "label": "Signature", "accept": ["image/png", "image/jpeg"]])
        def["questions"] = .array(qs)
        let v2 = try s.f.client.post("/v1/orgs/\(s.f.orgId)/surveys/\(s.v.surveyId)/versions", token: s.f.adminToken, ["definition": .object(def)])
        let v2id = try #require(v2.json?["surveyVersionId"]?.stringValue)
        let v2hash = try #require(v2.json?["contentHash"]?.stringValue)
        #expect(try s.put("signature-0001", Files.png(), type: "image/png", question: "signature", version: v2id).status == 201)
        P.expectProblem(try s.f.client.post("/v1/orgs/\(s.f.orgId)/responses", token: s.f.collectorToken,
                                            ResponseTests.submission("with-photo-0003", (s.v.surveyId, v2id, v2hash),
                                                                     answers: ["size": 2, "photo": ["clientUploadId": "signature-0001"]])),
                        .attachmentNotUploaded)
        // ...nor one of another version.
        P.expectProblem(try s.f.client.post("/v1/orgs/\(s.f.orgId)/responses", token: s.f.collectorToken,
                                            ResponseTests.submission("with-photo-0004", (s.v.surveyId, v2id, v2hash),
                                                                     answers: ["size": 2, "photo": ["clientUploadId": "photo-0003"]])),
                        .attachmentNotUploaded)
        #expect(try s.f.server.count("SELECT COUNT(*) AS n FROM responses") == 1)
    }

    @Test func aClientThatDisconnectsMidBodyLeavesNothing() throws {
        let s = try Setup()
        let fd = try s.f.client.connect()
        let head = "PUT /v1/orgs/\(s.f.orgId)/uploads/dropped-0001 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(s.f.collectorToken)\r\n" +
            "Content-Type: image/jpeg\r\nSurvey-Version-Id: \(s.v.versionId)\r\nQuestion-Id: photo\r\nContent-Length: 500000\r\n\r\n"
        RawHTTPClient.sendAll(fd, Array(head.utf8) + Array(Files.jpeg(200_000)))
        // Wait until the server holds a temp file, then vanish.
        let deadline = Date().addingTimeInterval(5)
        while s.f.server.files(in: "tmp").isEmpty && Date() < deadline { usleep(10_000) }
        #expect(!s.f.server.files(in: "tmp").isEmpty)
        close(fd)
        let gone = Date().addingTimeInterval(5)
        while !s.f.server.files(in: "tmp").isEmpty && Date() < gone { usleep(10_000) }
        try s.expectNothingStored()
        #expect(try s.f.client.get("/healthz").status == 200)
        // The same upload afterwards succeeds once.
        #expect(try s.put("dropped-0001", Files.jpeg()).status == 201)
    }
}
