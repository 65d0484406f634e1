import Testing
import SurveyDomain
import SurveyStorage
@testable import SurveyOperations

/// The rules of a request on a resumable upload, driven as a value without a socket or a
/// database: who may act on an upload, in which order the headers are judged, and that the one
/// claim a PATCH or DELETE takes is released exactly once on every path.
@Suite struct ResumableUploadExchangeTests {
    static func upload(received: Int64 = 10, length: Int64 = 100, expiresAt: Int64 = 10_000) -> ResumableUploadRecord {
        ResumableUploadRecord(uploadId: "tus-1", orgId: "org-1", clientUploadId: "photo-0001", owner: "usr-1", surveyVersionId: "sv-1",
                              questionId: "photo", contentType: "image/jpeg", length: length, receivedBytes: received,
                              expiresAt: expiresAt, createdAt: 0)
    }

    static func chunk(offset: Int64? = 10, length: Int64? = 5, type: String = "application/offset+octet-stream",
                      checksum: String? = nil) -> ResumableUploadExchange.Chunk {
        ResumableUploadExchange.Chunk(contentType: type, offset: offset, contentLength: length) { try checksum.map(ChunkChecksum.init(header:)) }
    }

    /// Counts claims and releases, as `BusySet` would hold them.
    final class Claims: @unchecked Sendable {
        var held = 0, releases = 0, free = true
        func claim() -> Bool { guard free else { return false }; held += 1; return true }
        func apply(_ a: ResumableUploadExchange.Action) {
            switch a {
            case .refuse(_, true), .answerComplete(_, true), .end(true): releases += 1
            default: break
            }
        }
    }

    /// Runs a PATCH to its refusal or its receive, then ends it the way `finish` says.
    func patch(_ row: ResumableUploadRecord?, _ chunk: ResumableUploadExchange.Chunk, caller: String = "usr-1", now: Int64 = 0,
               claims: Claims) -> [ResumableUploadExchange.Action] {
        var x = ResumableUploadExchange(.patch)
        var actions = [x.begin(claim: claims.claim)]
        guard case .readRow = actions[actions.count - 1] else { actions.forEach(claims.apply); return actions }
        actions.append(x.rowRead(row, caller: caller, now: now, chunk: chunk))
        actions.append(x.end())  // the door always ends what it started
        actions.append(x.end())  // and ending twice releases nothing more
        actions.forEach(claims.apply)
        return actions
    }

    func refusal(_ actions: [ResumableUploadExchange.Action]) -> ResumableUploadRefusal? {
        for a in actions { if case .refuse(let r, _) = a { return r } }
        return nil
    }

    @Test func aPatchIsJudgedInOrderAndAlwaysReleasesItsClaimOnce() throws {
        let cases: [(ResumableUploadRecord?, ResumableUploadExchange.Chunk, String, Int64, String)] = [
            (nil, Self.chunk(), "usr-1", 0, "notFound"),
            (Self.upload(), Self.chunk(), "usr-2", 0, "notFound"),                              // someone else's: nothing there
            (Self.upload(expiresAt: 5), Self.chunk(), "usr-1", 6, "gone"),
            (Self.upload(), Self.chunk(type: "image/jpeg"), "usr-1", 0, "notOffsetOctetStream"),
            (Self.upload(), Self.chunk(offset: nil), "usr-1", 0, "offsetMissing"),
            (Self.upload(), Self.chunk(checksum: "md5 AAAA"), "usr-1", 0, "malformed"),
            (Self.upload(), Self.chunk(offset: 11), "usr-1", 0, "offsetMismatch"),
            (Self.upload(), Self.chunk(length: Int64.max), "usr-1", 0, "pastLength"),        // never offset + length
            (Self.upload(), Self.chunk(length: 91), "usr-1", 0, "pastLength"),
        ]
        for (row, chunk, caller, now, expected) in cases {
            let claims = Claims()
            let actions = patch(row, chunk, caller: caller, now: now, claims: claims)
            let r = try #require(refusal(actions), "\(expected)")
            #expect(String(describing: r).hasPrefix(expected), "\(r)")
            #expect(claims.held == 1 && claims.releases == 1, "\(expected): \(claims.held) claims, \(claims.releases) releases")
        }
        // The 409 of a wrong offset tells where the upload is.
        let claims = Claims()
        guard case .offsetMismatch(let asked, let current)? = refusal(patch(Self.upload(), Self.chunk(offset: 3), claims: claims)) else {
            Issue.record("no offset mismatch"); return
        }
        #expect(asked == 3 && current == 10)
    }

    @Test func aChunkIsReceivedThenCommittedOrRefusedByItsChecksum() throws {
        let sha = Digest.sha256(Array("hello".utf8))
        for (digest, last) in [(sha, false), (sha, true), ([UInt8](repeating: 0, count: 32), false)] {
            let claims = Claims()
            var x = ResumableUploadExchange(.patch)
            #expect({ if case .readRow = x.begin(claim: claims.claim) { true } else { false } }())
            let row = Self.upload(received: 10, length: last ? 15 : 100)
            guard case .receive = x.rowRead(row, caller: "usr-1", now: 0, chunk: Self.chunk(checksum: "sha256 " + Base64.encode(sha))) else {
                Issue.record("not received"); return
            }
            let ended = x.bodyEnded(written: 5, digest: digest)
            claims.apply(ended)
            switch ended {
            case .commitOffset(_, let to): #expect(!last && digest == sha && to == 15)
            case .commitWhole: #expect(last && digest == sha)
            case .refuse(.checksumMismatch, true): #expect(digest != sha)
            default: Issue.record("unexpected \(ended)")
            }
            claims.apply(x.end())
            claims.apply(x.end())
            #expect(claims.releases == 1)
        }
    }

    @Test func aCompleteUploadTakesOnlyAnEmptyPatchAndReleasesAtOnce() {
        let claims = Claims()
        let actions = patch(Self.upload(received: 100, length: 100), Self.chunk(offset: 100, length: 0), claims: claims)
        #expect(actions.contains { if case .answerComplete(_, true) = $0 { true } else { false } })
        #expect(claims.releases == 1)
    }

    @Test func aBusyUploadIsRefusedWithoutAClaimToRelease() {
        let claims = Claims()
        claims.free = false
        for request in [ResumableUploadExchange.Request.patch, .delete] {
            var x = ResumableUploadExchange(request)
            let a = x.begin(claim: claims.claim)
            guard case .refuse(.busy(request), false) = a else { Issue.record("\(a)"); continue }
            #expect({ if case .end(false) = x.end() { true } else { false } }())
        }
        // HEAD claims nothing: it reads even while a PATCH works.
        var head = ResumableUploadExchange(.head)
        #expect({ if case .readRow = head.begin(claim: claims.claim) { true } else { false } }())
        #expect({ if case .answerOffset = head.rowRead(Self.upload(), caller: "usr-1", now: 0) { true } else { false } }())
    }

    @Test func anExpiredUploadIsGoneExceptToDelete() {
        let expired = Self.upload(expiresAt: 5)
        var head = ResumableUploadExchange(.head)
        _ = head.begin { true }
        #expect({ if case .refuse(.gone(5), false) = head.rowRead(expired, caller: "usr-1", now: 6) { true } else { false } }())
        let claims = Claims()
        var delete = ResumableUploadExchange(.delete)
        claims.apply(delete.begin(claim: claims.claim))
        let a = delete.rowRead(expired, caller: "usr-1", now: 6)
        #expect({ if case .delete = a { true } else { false } }())
        claims.apply(a)
        claims.apply(delete.end())
        #expect(claims.held == 1 && claims.releases == 1)
    }
}
