import Foundation
import SurveyDomain
import SurveyServer
import SurveyStorage
import Testing

/// A submission with files through ODK Central's API, in Central's order (the XML, then each
/// file), and a submission's comments: each step through surveyd's operations and gate, each
/// refusal leaving nothing, the response made once by its last file.
@Suite struct CentralSubmissionFilesTests {
    typealias World = CentralAPITests.World

    func withPhoto(_ w: World, _ id: String, photo: String = "well-1.jpg") -> [UInt8] {
        Array("""
            <data id="\(w.xmlFormId)" version="\(w.formVersion)"><size>3</size><source>well</source><notes/><photo>\(photo)</photo>\
            <meta><instanceID>\(id)</instanceID></meta></data>
            """.utf8)
    }

    func base(_ w: World) -> String { "/v1/projects/\(w.projectId)/forms/\(w.xmlFormId)/submissions" }

    func attach(_ w: World, _ id: String, _ name: String, _ bytes: [UInt8], token: String? = nil) throws -> Reply {
        try w.f.client.request("POST", base(w) + "/\(id)/attachments/\(name)", token: token ?? w.f.collectorToken, body: bytes,
                               headers: ["Content-Type": "image/jpeg"])
    }

    /// Rows a refused step must not add.
    func traces(_ w: World) throws -> [Int64] {
        try ["responses", "audit", "idempotency_keys", "uploads", "waiting_submissions"].map { try w.f.server.count("SELECT COUNT(*) AS n FROM \($0)") }
    }

    @Test func theXMLWaitsForItsFileAndTheLastFileMakesTheResponseOnce() throws {
        let w = try World()
        let c = w.f.client, collector = w.f.collectorToken
        let id = "uuid:5b1e0c7e-2222-4000-8000-000000000001"
        let photo = Files.jpeg(4096)
        // The XML first: checked in full, then kept waiting for its file; no response yet.
        let posted = try w.submit(withPhoto(w, id), token: collector)
        #expect(posted.status == 200 && posted.json?["instanceId"]?.stringValue == id && posted.json?["reviewState"] == .null, "\(posted.text)")
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM responses") == 0)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM waiting_submissions") == 1)
        // The same XML again is the same waiting submission; other XML under its id is 409.3.
        let again = try w.submit(withPhoto(w, id), token: collector)
        #expect(again.status == 200 && again.header("idempotent-replayed") == "true")
        #expect(try w.submit(withPhoto(w, id, photo: "other.jpg"), token: collector).json?["code"]?.doubleValue == 409.3)
        // Its submitter reads it, and the file it waits for.
        #expect(try c.get(base(w) + "/" + id, token: collector).json?["surveydReviewState"]?.stringValue == "waitingForFiles")
        #expect(try c.get(base(w) + "/" + id + "/attachments", token: collector).json == [["name": "well-1.jpg", "exists": false]])
        // Refusals leave nothing: a name the XML does not give, another user, an expired subscription.
        var before = try traces(w)
        #expect(try attach(w, id, "else.jpg", photo).status == 404)
        #expect(try attach(w, id, "well-1.jpg", photo, token: w.f.adminToken).status == 403)
        #expect(try attach(w, "uuid:never-sent-0001", "well-1.jpg", photo).status == 404)
        #expect(try traces(w) == before)
        try w.f.expire()
        before = try traces(w)
        let expired = try attach(w, id, "well-1.jpg", photo)
        #expect(expired.status == 402 && expired.json?["code"]?.doubleValue == 402.1001, "\(expired.text)")
        #expect(try traces(w) == before)
        try w.f.renew()
        // The file: the response is made with it, once; nothing waits any more.
        let attached = try attach(w, id, "well-1.jpg", photo)
        #expect(attached.status == 200 && attached.json == ["success": true], "\(attached.text)")
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id = ?", [.text(id)]) == 1)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM waiting_submissions") == 0)
        #expect(try c.get(base(w) + "/" + id + "/attachments", token: collector).json == [["name": "well-1.jpg", "exists": true]])
        let content = try c.get(base(w) + "/" + id + "/attachments/well-1.jpg", token: w.f.reviewerToken)
        #expect(content.status == 200 && content.body == photo && content.header("content-type") == "image/jpeg")
        // The same file again changes nothing; other bytes under its name are 409.3.
        before = try traces(w)
        let resent = try attach(w, id, "well-1.jpg", photo)
        #expect(resent.status == 200 && resent.header("idempotent-replayed") == "true")
        #expect(try attach(w, id, "well-1.jpg", Files.jpeg(4096, seed: 9)).json?["code"]?.doubleValue == 409.3)
        #expect(try traces(w) == before)
        // The XML sent again now is the stored submission.
        let stored = try w.submit(withPhoto(w, id), token: collector)
        #expect(stored.status == 200 && stored.header("idempotent-replayed") == "true" && stored.json?["surveydReviewState"]?.stringValue == "none")
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM responses") == 1)
    }

    @Test func aRefusedXMLWithFilesKeepsNothingWaiting() throws {
        let w = try World()
        let id = "uuid:5b1e0c7e-2222-4000-8000-000000000002"
        try w.f.expire()
        let before = try traces(w)
        let expired = try w.submit(withPhoto(w, id), token: w.f.collectorToken)
        #expect(expired.status == 402 && expired.json?["code"]?.doubleValue == 402.1001, "\(expired.text)")
        #expect(try traces(w) == before)
        try w.f.renew()
        let renewed = try traces(w)
        let invalid = Array(String(decoding: withPhoto(w, id), as: UTF8.self).replacingOccurrences(of: "<size>3</size>", with: "<size>0</size>").utf8)
        #expect(try w.submit(invalid, token: w.f.collectorToken).status == 422)
        #expect(try traces(w) == renewed)
    }

    @Test func aCommentIsAGatedEntryOfTheResponsesHistory() throws {
        let w = try World(reviewRequired: true)
        let c = w.f.client
        let id = "uuid:5b1e0c7e-2222-4000-8000-000000000003"
        #expect(try w.submit(w.instance(id), token: w.f.collectorToken).status == 200)
        let comments = base(w) + "/" + id + "/comments"
        let before = try traces(w)
        #expect(try c.post(comments, token: w.f.collectorToken, ["body": "mine"]).status == 403)
        #expect(try c.post(comments, token: w.f.reviewerToken, ["body": "  "]).status == 422)
        #expect(try traces(w) == before)
        try w.f.expire()
        let expired = try traces(w)
        #expect(try c.post(comments, token: w.f.reviewerToken, ["body": "Check the count"]).json?["code"]?.doubleValue == 402.1001)
        #expect(try traces(w) == expired)
        try w.f.renew()
        let made = try c.post(comments, token: w.f.reviewerToken, ["body": "Check the count"])
        #expect(made.status == 200 && made.json?["body"]?.stringValue == "Check the count" && made.json?["actorId"]?.intValue != nil, "\(made.text)")
        // A review step's comment is one too, after it, oldest first.
        #expect(try c.request("PATCH", base(w) + "/" + id, token: w.f.reviewerToken, json: ["reviewState": "rejected"]).status == 200)
        let listed = try c.get(comments, token: w.f.reviewerToken).json?.arrayValue?.compactMap { $0["body"]?.stringValue }
        #expect(listed == ["Check the count", "Set to rejected through the Central API"], "\(String(describing: listed))")
        // With an Idempotency-Key its retry is the same comment, once.
        let keyed = try c.request("POST", comments, token: w.f.adminToken, json: ["body": "once"], headers: ["Idempotency-Key": "comment-key-0001"])
        let retried = try c.request("POST", comments, token: w.f.adminToken, json: ["body": "once"], headers: ["Idempotency-Key": "comment-key-0001"])
        #expect(keyed.status == 200 && retried.header("idempotent-replayed") == "true" && retried.json == keyed.json)
        #expect(try c.get(comments, token: w.f.reviewerToken).json?.arrayValue?.count == 3)
    }

    /// Central's edit names the submission's files as before and sends no bytes for them: the
    /// edit keeps those files; a file the submission does not have cannot come through it.
    @Test func anEditKeepsTheFilesItNamesAsBefore() throws {
        let w = try World()
        let c = w.f.client
        let a = "uuid:5b1e0c7e-2222-4000-8000-00000000000a", b = "uuid:5b1e0c7e-2222-4000-8000-00000000000b"
        #expect(try w.submit(withPhoto(w, a), token: w.f.collectorToken).status == 200)
        #expect(try attach(w, a, "well-1.jpg", Files.jpeg(3000)).status == 200)
        func answers() throws -> String { try w.f.server.rows("SELECT answers FROM responses WHERE client_submission_id = ?", [.text(a)]).first?.string("answers") ?? "" }
        func photo() throws -> String? { try JSONParser.parse(Array(answers().utf8))["photo"]?["clientUploadId"]?.stringValue }
        let photoBefore = try photo()
        func edit(_ id: String, replacing old: String, size: String, photo: String = "well-1.jpg") -> [UInt8] {
            Array("""
                <data id="\(w.xmlFormId)" version="\(w.formVersion)"><size>\(size)</size><source>well</source><notes/><photo>\(photo)</photo>\
                <meta><instanceID>\(id)</instanceID><deprecatedID>\(old)</deprecatedID></meta></data>
                """.utf8)
        }
        let path = base(w) + "/" + a
        let put = try c.request("PUT", path, token: w.f.reviewerToken, body: edit(b, replacing: a, size: "5"), headers: ["Content-Type": "application/xml"])
        #expect(put.status == 200 && put.json?["reviewState"]?.stringValue == "edited", "\(put.text)")
        let after = try answers(), photoAfter = try photo()
        #expect(after.contains(#""size":5"#) && photoBefore != nil && photoAfter == photoBefore, "\(after)")
        let again = try c.request("PUT", path, token: w.f.reviewerToken, body: edit(b, replacing: a, size: "5"), headers: ["Content-Type": "application/xml"])
        #expect(again.status == 200 && again.header("idempotent-replayed") == "true", "\(again.text)")
        #expect(try c.get(path + "/attachments", token: w.f.collectorToken).json == [["name": "well-1.jpg", "exists": true]])
        // A new file: refused, nothing changes.
        let before = try traces(w)
        let newFile = try c.request("PUT", path, token: w.f.reviewerToken, body: edit("uuid:5b1e0c7e-2222-4000-8000-00000000000c", replacing: b, size: "6", photo: "new.jpg"),
                                    headers: ["Content-Type": "application/xml"])
        #expect(newFile.status == 501 && newFile.json?["errorCode"]?.intValue == 1050, "\(newFile.text)")
        #expect(try traces(w) == before && (try w.f.server.count("SELECT COUNT(*) AS n FROM response_versions")) == 2)
    }
}
