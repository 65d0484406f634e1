import Foundation
import Testing
import SurveyDomain

/// The tus door's own refusals, each in tus's terms (its status, `Tus-Resumable` on the answer)
/// with a sentence, and nothing created or moved by any of them.
@Suite struct TusRefusalTests {
    typealias P = FoundationTests
    typealias Tus = ResumableUploadTests.Tus

    static func uploads(_ t: Tus) throws -> Int64 { try t.s.f.server.count("SELECT COUNT(*) AS n FROM resumable_uploads") }

    func post(_ t: Tus, token: String, _ headers: [String: String]) throws -> Reply {
        var h = ["Tus-Resumable": "1.0.0",
                 "Upload-Metadata": Tus.meta(["clientUploadId": "tus-len-0001", "surveyVersionId": t.s.v.versionId, "questionId": "photo", "contentType": "image/jpeg"])]
        for (k, v) in headers { h[k] = v }
        return try t.s.f.client.request("POST", t.base, token: token, body: [], headers: h)
    }

    @Test func aCreationWithoutALengthIsRefusedAfterTheRoleCheck() throws {
        let t = Tus(s: try UploadTests.Setup())
        let sentence = "Upload-Length (a non-negative integer) is required; deferred lengths are not supported."
        for headers in [[:], ["Upload-Defer-Length": "1"], ["Upload-Length": "-5"], ["Upload-Length": "ten"]] {
            let r = try post(t, token: t.s.f.collectorToken, headers)
            P.expectProblem(r, .malformedRequest)
            #expect(r.json?["detail"]?.stringValue == sentence, "\(headers)")
            #expect(r.header("tus-resumable") == "1.0.0")
        }
        // Someone who may not upload at all hears that first.
        P.expectProblem(try post(t, token: t.s.f.reviewerToken, [:]), .forbidden)
        #expect(try Self.uploads(t) == 0)
        #expect(t.s.f.server.files(in: "partial").isEmpty)
    }

    /// A clientUploadId names one upload: created again with the same metadata it is the same
    /// upload (a replay), with other metadata it is refused.
    @Test func aClientUploadIdIsOneUpload() throws {
        let t = Tus(s: try UploadTests.Setup())
        let created = try t.create("tus-one-0001", length: 1000)
        #expect(created.status == 201)
        let again = try t.create("tus-one-0001", length: 1000)
        #expect(again.status == 201)
        #expect(again.header("location") == created.header("location"))
        #expect(again.header("idempotent-replayed") == "true")
        let other = try t.create("tus-one-0001", length: 2000)
        P.expectProblem(other, .idempotencyConflict)
        #expect(other.json?["detail"]?.stringValue == "This clientUploadId was already used for a different upload.")
        #expect(other.header("tus-resumable") == "1.0.0")
        P.expectProblem(try t.create("tus-one-0001", length: 1000, type: "image/png"), .idempotencyConflict)
        #expect(try Self.uploads(t) == 1)
        #expect(try t.head(try #require(created.header("location"))).header("upload-length") == "1000")
    }

    @Test func aChunkThatIsNotDeclaredAsChunkBytesOrHasNoOffsetIsRefused() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(3000)
        let location = try #require(try t.create("tus-chunk-0001", length: file.count).header("location"))
        #expect(try t.patch(location, offset: 0, Array(file[0..<1000])).status == 204)

        let asJSON = try t.s.f.client.request("PATCH", location, token: t.s.f.collectorToken, body: Array(file[1000..<2000]), headers: [
            "Tus-Resumable": "1.0.0", "Upload-Offset": "1000", "Content-Type": "application/json"])
        P.expectProblem(asJSON, .unsupportedFileType)
        #expect(asJSON.json?["detail"]?.stringValue == "PATCH bodies must be application/offset+octet-stream.")
        #expect(asJSON.header("tus-resumable") == "1.0.0")

        let noOffset = try t.s.f.client.request("PATCH", location, token: t.s.f.collectorToken, body: Array(file[1000..<2000]), headers: [
            "Tus-Resumable": "1.0.0", "Content-Type": "application/offset+octet-stream"])
        P.expectProblem(noOffset, .malformedRequest)
        #expect(noOffset.json?["detail"]?.stringValue == "Upload-Offset is required.")

        let badOffset = try t.s.f.client.request("PATCH", location, token: t.s.f.collectorToken, body: Array(file[1000..<2000]), headers: [
            "Tus-Resumable": "1.0.0", "Upload-Offset": "one thousand", "Content-Type": "application/offset+octet-stream"])
        P.expectProblem(badOffset, .malformedRequest)

        // Nothing moved: the upload is where the first chunk left it, and goes on from there.
        #expect(try t.offset(location) == 1000)
        #expect(try t.patch(location, offset: 1000, Array(file[1000...])).status == 204)
        #expect(try t.s.f.client.get("/v1/orgs/\(t.s.f.orgId)/uploads/tus-chunk-0001/content", token: t.s.f.collectorToken).body == file)
    }

    @Test func anUploadNobodyCreatedIs404WithoutABody() throws {
        let t = Tus(s: try UploadTests.Setup())
        let head = try t.head(t.base + "/tus_0000000000000000000000000000")
        #expect(head.status == 404)
        #expect(head.body.isEmpty)
        #expect(head.header("tus-resumable") == "1.0.0")
        let patch = try t.patch(t.base + "/tus_0000000000000000000000000000", offset: 0, [1, 2, 3])
        P.expectProblem(patch, .notFound)
    }
}
