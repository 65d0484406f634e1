import Foundation
import Testing
import SurveyDomain
@testable import SurveyOperations
@testable import SurveyStorage

/// `Uploads` on a real SQLite file and blob store, without HTTP: metadata checked before a byte
/// is read, the bytes checked before the gate, nothing left by a refusal (no row, no blob, no
/// temp file), exactly once, and the gate's 1001 with `expiresAt`.
@Suite struct UploadOperationTests {
    /// A minimal PNG: the signature is what the type check reads.
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 92)

    static func target(_ w: World, _ caller: Caller, id: String = "ops-upl-0001", question: String = "photo",
                       type: String = "image/png", length: Int? = nil, version: String? = nil) throws -> UploadTarget {
        try w.ops.uploads.target(orgId: w.org, clientUploadId: id, caller: caller, surveyVersionId: version ?? w.version.surveyVersionId,
                                 questionId: question, contentType: type, declaredLength: length)
    }

    static func upload(_ w: World, _ bytes: [UInt8], id: String = "ops-upl-0001", sha256: [UInt8]? = nil) throws -> WriteGate.Outcome<UploadRecord> {
        let incoming = try w.ops.uploads.receive(try target(w, collector(w), id: id), expectedSHA256: sha256)
        try bytes.withUnsafeBytes { try incoming.write($0) }
        return try w.ops.uploads.finish(incoming)
    }

    static func collector(_ w: World) -> Caller { .user(w.collector.user, tokenId: w.collector.tokenId) }

    @Test func metadataIsCheckedInTheContractsOrder() throws {
        let w = try World()
        let before = try w.traces()
        let c = Self.collector(w)
        #expect(refusal { try Self.target(w, .user(w.stranger.user, tokenId: w.stranger.tokenId)) } == 1005)
        #expect(refusal { try Self.target(w, .user(w.reviewer.user, tokenId: w.reviewer.tokenId)) } == 1006)
        #expect(refusal { try Self.target(w, c, id: "no") } == 1032)
        #expect(refusal { try Self.target(w, c, version: "sv_nothing") } == 1005)
        #expect(refusal { try Self.target(w, c, question: "size") } == 1012)
        #expect(refusal { try Self.target(w, c, type: "image/jpeg") } == 1010)
        #expect(refusal { try Self.target(w, c, length: 1001) } == 1013)
        #expect(try w.traces() == before)
    }

    @Test func theBytesAreCheckedAndCommittedExactlyOnce() throws {
        let w = try World()
        let before = try w.traces()
        // Too big as it streams, not a PNG, or not the declared digest: refused, nothing kept.
        #expect(refusal { try Self.upload(w, Self.png + Array(repeating: 0, count: 1000)) } == 1013)
        #expect(refusal { try Self.upload(w, Array(repeating: 1, count: 100)) } == 1011)
        #expect(refusal { try Self.upload(w, Self.png, sha256: Digest.sha256(Array("other".utf8))) } == 1015)
        #expect(try w.traces() == before)

        guard case .written(let u) = try Self.upload(w, Self.png, sha256: Digest.sha256(Self.png)) else { throw TestFailure("not written") }
        #expect(u.size == 100 && u.sha256 == Digest.sha256Hex(Self.png))
        #expect(FileManager.default.contents(atPath: w.ops.blobs.path(sha256: u.sha256)) == Data(Self.png))
        let afterOne = try w.traces()
        guard case .replayed(let again) = try Self.upload(w, Self.png) else { throw TestFailure("not replayed") }
        #expect(again.receivedAt == u.receivedAt)
        var other = Self.png
        other[99] = 8
        #expect(refusal { try Self.upload(w, other) } == 1004)
        #expect(try w.traces() == afterOne)

        // Expired: the replay is still answered; new bytes meet the gate, with its expiry.
        w.expire()
        guard case .replayed = try Self.upload(w, Self.png) else { throw TestFailure("not replayed") }
        let e = refusalError { try Self.upload(w, Self.png, id: "ops-upl-0002") }
        #expect(e?.code == .subscriptionExpired && e?.extra["expiresAt"]?.stringValue != nil)
        #expect(try w.traces() == afterOne)
    }

    /// Two requests under one clientUploadId at once: both are checked before either commits,
    /// so the second finds the first only inside its own transaction. Other bytes there are
    /// 1004 and leave nothing (no row, no audit entry, no blob, no temp file); the same bytes are
    /// the first's answer.
    @Test func aClientUploadIdTakenWhileTheBytesArriveIsRefusedForOtherBytes() throws {
        let w = try World()
        let c = Self.collector(w)
        // Checked now, before anything is stored under the id.
        let racingOther = try Self.target(w, c, id: "ops-upl-race")
        let racingSame = try Self.target(w, c, id: "ops-upl-race")
        #expect(racingOther.existing == nil && racingSame.existing == nil)
        guard case .written(let first) = try Self.upload(w, Self.png, id: "ops-upl-race") else { throw TestFailure("not written") }
        let afterFirst = try w.traces()

        var other = Self.png
        other[50] = 9
        let incoming = try w.ops.uploads.receive(racingOther, expectedSHA256: nil)
        try other.withUnsafeBytes { try incoming.write($0) }
        let e = refusalError { try w.ops.uploads.finish(incoming) }
        #expect(e?.code == .idempotencyConflict)
        #expect(e?.detail == "This clientUploadId was already used for a different upload.")
        #expect(try w.traces() == afterFirst)
        #expect(!FileManager.default.fileExists(atPath: w.ops.blobs.path(sha256: Digest.sha256Hex(other))))

        let same = try w.ops.uploads.receive(racingSame, expectedSHA256: nil)
        try Self.png.withUnsafeBytes { try same.write($0) }
        guard case .replayed(let stored) = try w.ops.uploads.finish(same) else { throw TestFailure("not the first's answer") }
        #expect(stored.sha256 == first.sha256 && stored.receivedAt == first.receivedAt)
        #expect(try w.traces() == afterFirst)
    }
}
