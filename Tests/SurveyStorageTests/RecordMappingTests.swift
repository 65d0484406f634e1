import Foundation
import Testing
@testable import SurveyStorage
import SurveyDomain

/// Every record is written through its real repository method, with every field set to a
/// distinct value (NUL-bearing text included), and read back equal: its INSERT and its
/// `init(row:)` agree on every column (a column the SELECT lacks fails: `RowDecodingTests`).
@Suite struct RecordMappingTests {
    @Test func recordsReadBackExactlyAsWritten() throws {
        let dir = TempDir()
        let clock = ManualClock(startingAt: 1_800_000_000_123)
        var config = Database.Configuration(path: dir.db)
        config.clock = clock
        let db = try Database(config)
        defer { db.close(); _ = dir }
        let gate = WriteGate(database: db)
        let now = clock.nowMillis()

        let org = try db.securityWrite(orgId: "org_1", actor: "op") { tx in
            try tx.createOrg(orgId: "org_1", name: "Field\u{0}team", expiresAt: now + 86_400_000)
        }
        #expect(try db.read { try $0.org("org_1") } == org)
        #expect(org == OrgRecord(orgId: "org_1", name: "Field\u{0}team", expiresAt: now + 86_400_000, createdAt: now, projectId: 1))

        let user = try db.securityWrite(orgId: "org_1", actor: "op") { tx in
            try tx.createUser(userId: "usr_1", orgId: "org_1", name: "Cole", roles: ["collector", "reviewer"])
        }
        #expect(try db.read { try $0.user("usr_1") } == user)

        _ = try gate.write(orgId: "org_1", actor: "usr_1") { tx in
            _ = try tx.createSurvey(surveyId: "srv_1", title: "Water", reviewRequired: true, createdBy: "usr_1")
            _ = try tx.publishVersion(surveyVersionId: "sv_1", surveyId: "srv_1", contentHash: "sha256:ab", definition: "{}")
        }
        let response = ResponseRecord(
            responseId: "rsp_1", orgId: "org_1", clientSubmissionId: "csid-0001", submitter: "usr_1", surveyId: "srv_1",
            surveyVersionId: "sv_1", requestDigest: "sha256:cd", requestSHA256: Array(repeating: 7, count: 32),
            answers: "{\"a\":\"x\u{0}y\"}", fieldTaskId: nil, capturedAt: now - 5_000, receivedAt: now, reviewState: .submitted, revision: 1)
        _ = try gate.write(orgId: "org_1", actor: "usr_1") { tx in try tx.insertResponse(response, facts: [1]) }
        #expect(try db.read { try $0.response(orgId: "org_1", responseId: "rsp_1") } == response)
        #expect(try db.read { try $0.response(orgId: "org_1", clientSubmissionId: "csid-0001") } == response)

        let resumable = ResumableUploadRecord(
            uploadId: "tus_1", orgId: "org_1", clientUploadId: "cuid-0001", owner: "usr_1", surveyVersionId: "sv_1",
            questionId: "photo", contentType: "image/jpeg", length: 3_000, receivedBytes: 0, expiresAt: now + 1_000, createdAt: now)
        _ = try gate.write(orgId: "org_1", actor: "usr_1") { tx in try tx.createResumableUpload(resumable) }
        #expect(try db.read { try $0.resumableUpload(orgId: "org_1", uploadId: "tus_1") } == resumable)
        #expect(try db.read { try $0.resumableUpload(orgId: "org_1", clientUploadId: "cuid-0001") } == resumable)

        let blobs = try BlobStore(DataDirectory(dir.path))
        let temp = try blobs.createTemp()
        try [UInt8](repeating: 1, count: 10).withUnsafeBytes { try temp.write($0) }
        let sha = try temp.finish()
        let upload = UploadRecord(orgId: "org_1", clientUploadId: "cuid-0002", uploader: "usr_1", surveyVersionId: "sv_1",
                                  questionId: "photo", contentType: "image/png", size: 10, sha256: sha, receivedAt: now)
        _ = try gate.write(orgId: "org_1", actor: "usr_1") { tx in try tx.commitUpload(upload, tempPath: temp.path, blobs: blobs) }
        #expect(try db.read { try $0.upload(orgId: "org_1", clientUploadId: "cuid-0002") } == upload)
    }
}
