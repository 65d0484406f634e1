import Testing
import SurveyDomain
@testable import SurveyOperations
@testable import SurveyStorage

/// The rules of a request on a resumable upload, driven as a value without a socket, a server or
/// a database: a create's replay, who may act on an upload, the order the headers are judged in,
/// what a chunk may add, and that the claim a PATCH or DELETE takes is released exactly once on
/// every path.
@Suite struct ResumableUploadStateTests {
    typealias Action = ResumableUpload.Action

    static func upload(received: Int64 = 10, length: Int64 = 100, expiresAt: Int64 = 10_000, owner: String = "usr-1") -> ResumableUploadRecord {
        ResumableUploadRecord(uploadId: "tus-1", orgId: "org-1", clientUploadId: "photo-0001", owner: owner, surveyVersionId: "sv-1",
                              questionId: "photo", contentType: "image/jpeg", length: length, receivedBytes: received,
                              expiresAt: expiresAt, createdAt: 0)
    }

    static func chunk(offset: Int64? = 10, length: Int64? = 5, chunkBytes: Bool = true, checksum: String? = nil) -> ResumableUpload.Chunk {
        let parsed: Result<ChunkChecksum?, ApiError>
        do { parsed = .success(try checksum.map(ChunkChecksum.init(header:))) } catch { parsed = .failure(storageApiError(error)) }
        return ResumableUpload.Chunk(isChunkBytes: chunkBytes, offset: offset, declaredLength: length, checksum: parsed)
    }

    static let asked = ResumableUpload.Creation(surveyVersionId: "sv-1", questionId: "photo", contentType: "image/jpeg", length: 100)

    static func target(existing: UploadRecord? = nil) -> UploadTarget {
        UploadTarget(orgId: "org-1", uploader: "usr-1", clientUploadId: "photo-0001", surveyVersionId: "sv-1", questionId: "photo",
                     contentType: "image/jpeg", limit: 1 << 20, existing: existing)
    }

    static func stored(sha256: String = "ab") -> UploadRecord {
        UploadRecord(orgId: "org-1", clientUploadId: "photo-0001", uploader: "usr-1", surveyVersionId: "sv-1", questionId: "photo",
                     contentType: "image/jpeg", size: 100, sha256: sha256, receivedAt: 0)
    }

    /// Performs `.claim` and `.release` as `ResumableUploadRequest` does, and counts them.
    struct Driver {
        var machine: ResumableUpload
        var free = true
        private(set) var claims = 0, releases = 0, discards = 0
        private(set) var actions: [Action] = []

        init(_ request: ResumableUpload.Request, free: Bool = true) { machine = ResumableUpload(request); self.free = free }

        @discardableResult
        mutating func send(_ event: (inout ResumableUpload) -> Action) -> Action {
            var action = event(&machine)
            while true {
                actions.append(action)
                switch action {
                case .claim:
                    if free { claims += 1 }
                    action = machine.claimed(free)
                case .release:
                    releases += 1
                    return action
                default:
                    return action
                }
            }
        }

        /// What a door does when the request is over, however it went.
        mutating func end() {
            if case .discardChunk = send({ $0.end() }) {
                discards += 1
                send { $0.chunkDiscarded() }
            }
        }

        /// Begins and reads `row`: the action after the row read (or the refusal before it).
        mutating func read(_ row: ResumableUploadRecord?, caller: String = "usr-1", now: Int64 = 0) -> Action {
            let first = send { $0.begin() }
            guard case .readRow = first else { return first }
            return send { $0.rowRead(row, caller: caller, now: now) }
        }

        var refusal: ResumableUploadRefusal? {
            for a in actions { if case .refuse(let r) = a { return r } }
            return nil
        }
    }

    // MARK: - create

    @Test func aCreateIsAReplayAConflictOrAFreshStart() throws {
        // Nothing under the clientUploadId: the metadata is checked, then the row made at offset 0.
        var fresh = Driver(.create(Self.asked))
        guard case .checkTarget = fresh.read(nil, now: 50) else { Issue.record("\(fresh.actions)"); return }
        guard case .createPartialThenWrite(let record) = fresh.send({ $0.targetChecked(Self.target(), uploadId: "tus-new", now: 50, lifetime: 1_000) }) else {
            Issue.record("\(fresh.actions)"); return
        }
        #expect(record.uploadId == "tus-new" && record.owner == "usr-1" && record.receivedBytes == 0 && record.length == 100)
        #expect(record.expiresAt == 1_050 && record.createdAt == 50)
        guard case .answerCreated(let created) = fresh.send({ $0.written(.written(record)) }) else { Issue.record("\(fresh.actions)"); return }
        #expect(created == record)
        fresh.end()
        #expect(fresh.claims == 0 && fresh.releases == 0)  // a create claims nothing

        // The same caller and metadata, unexpired: its upload again, with no check or write.
        let existing = Self.upload(received: 30, expiresAt: 10_000)
        var replay = Driver(.create(Self.asked))
        guard case .answerReplay(let r) = replay.read(existing, now: 50) else { Issue.record("\(replay.actions)"); return }
        #expect(r == existing)

        // Someone else's, or for something else: 1004, revealing nothing.
        var others = Driver(.create(Self.asked))
        _ = others.read(existing, caller: "usr-2", now: 50)
        guard case .conflict? = others.refusal else { Issue.record("\(others.actions)"); return }
        for other in [ResumableUpload.Creation(surveyVersionId: "sv-2", questionId: "photo", contentType: "image/jpeg", length: 100),
                      ResumableUpload.Creation(surveyVersionId: "sv-1", questionId: "sign", contentType: "image/jpeg", length: 100),
                      ResumableUpload.Creation(surveyVersionId: "sv-1", questionId: "photo", contentType: "image/png", length: 100),
                      ResumableUpload.Creation(surveyVersionId: "sv-1", questionId: "photo", contentType: "image/jpeg", length: 101)] {
            var d = Driver(.create(other))
            _ = d.read(existing, now: 50)
            #expect({ if case .conflict? = d.refusal { true } else { false } }(), "\(other)")
        }

        // Expired unfinished: a create starts afresh (its write removes the old row) — even someone else's.
        for caller in ["usr-1", "usr-2"] {
            var restart = Driver(.create(Self.asked))
            #expect({ if case .checkTarget = restart.read(Self.upload(received: 30, expiresAt: 40), caller: caller, now: 50) { true } else { false } }())
        }
        // Finished uploads do not expire: past its date it is still the replay.
        var finished = Driver(.create(Self.asked))
        #expect({ if case .answerReplay = finished.read(Self.upload(received: 100, expiresAt: 40), now: 50) { true } else { false } }())

        // A completed plain upload under the id: 1004.
        var completed = Driver(.create(Self.asked))
        _ = completed.read(nil)
        completed.send { $0.targetChecked(Self.target(existing: Self.stored()), uploadId: "tus-new", now: 50, lifetime: 1_000) }
        #expect({ if case .completedAlready? = completed.refusal { true } else { false } }())

        // The same create committed meanwhile: the transaction's replay is answered as one.
        var raced = Driver(.create(Self.asked))
        _ = raced.read(nil)
        guard case .createPartialThenWrite(let mine) = raced.send({ $0.targetChecked(Self.target(), uploadId: "tus-new", now: 50, lifetime: 1_000) }) else {
            Issue.record("\(raced.actions)"); return
        }
        #expect({ if case .answerReplay(let r) = raced.send({ $0.written(.replayed(existing)) }) { r == existing && r != mine } else { false } }())
    }

    @Test func theUnfinishedBytesQuotaIsComparedAsWhatIsLeft() {
        let gib: Int64 = 1 << 30
        #expect(ResumableUpload.quotaRefusal(held: 0, length: gib, allowed: gib) == nil)
        #expect(ResumableUpload.quotaRefusal(held: gib - 100, length: 100, allowed: gib) == nil)
        guard case .quota(let held, let allowed)? = ResumableUpload.quotaRefusal(held: gib - 99, length: 100, allowed: gib) else {
            Issue.record("not refused"); return
        }
        #expect(held == gib - 99 && allowed == gib)
        // Never held + length: neither traps.
        #expect(ResumableUpload.quotaRefusal(held: Int64.max, length: Int64.max, allowed: gib) != nil)
        #expect(ResumableUpload.quotaRefusal(held: gib + 1, length: 0, allowed: gib) != nil)
    }

    // MARK: - PATCH

    @Test func aPatchIsJudgedInOrderAndAlwaysReleasesItsClaimOnce() throws {
        let cases: [(ResumableUploadRecord?, ResumableUpload.Chunk, String, Int64, String)] = [
            (nil, Self.chunk(), "usr-1", 0, "notFound"),
            (Self.upload(), Self.chunk(), "usr-2", 0, "notFound"),                       // someone else's: nothing there
            (Self.upload(owner: "usr-2"), Self.chunk(), "usr-1", 0, "notFound"),
            (Self.upload(expiresAt: 5), Self.chunk(), "usr-1", 6, "gone"),
            (Self.upload(expiresAt: 5), Self.chunk(chunkBytes: false), "usr-1", 6, "gone"),  // gone before the headers
            (Self.upload(), Self.chunk(offset: nil, chunkBytes: false), "usr-1", 0, "notChunkBytes"),
            (Self.upload(), Self.chunk(offset: nil, checksum: "md5 AAAA"), "usr-1", 0, "offsetMissing"),
            (Self.upload(), Self.chunk(offset: 3, checksum: "md5 AAAA"), "usr-1", 0, "malformed"),
            (Self.upload(), Self.chunk(offset: 11), "usr-1", 0, "offsetMismatch"),
            (Self.upload(), Self.chunk(length: Int64.max), "usr-1", 0, "pastLength"),     // never offset + length
            (Self.upload(), Self.chunk(length: 91), "usr-1", 0, "pastLength"),
        ]
        for (row, chunk, caller, now, expected) in cases {
            var d = Driver(.patch(chunk))
            _ = d.read(row, caller: caller, now: now)
            d.end()
            d.end()  // ending twice releases nothing more
            let r = try #require(d.refusal, "\(expected)")
            #expect(String(describing: r).hasPrefix(expected), "\(r)")
            #expect(d.claims == 1 && d.releases == 1 && d.discards == 0, "\(expected): \(d.claims) claims, \(d.releases) releases")
        }
        // Within the length, the chunk streams.
        var fits = Driver(.patch(Self.chunk(length: 90)))
        #expect({ if case .streamChunk = fits.read(Self.upload()) { true } else { false } }())
    }

    @Test func aPatchAtTheWrongOffsetTellsWhereTheUploadIs() {
        for asked: Int64 in [0, 3, 11, Int64.max] {
            var d = Driver(.patch(Self.chunk(offset: asked)))
            _ = d.read(Self.upload(received: 10))
            guard case .offsetMismatch(let a, let current)? = d.refusal else { Issue.record("\(d.actions)"); continue }
            #expect(a == asked && current == 10)
            // HTTP-free: the door adds tus's 409 and Upload-Offset.
            #expect(d.refusal?.error.code == .idempotencyConflict)
        }
    }

    @Test func aChunkPastTheLengthIsRefusedNearInt64Max() {
        let huge = Int64.max
        // A row whose offset and length sit at the top of Int64: what is left is compared.
        let row = Self.upload(received: huge - 5, length: huge)
        for (declared, fits) in [(Int64(5), true), (6, false), (huge, false)] {
            var d = Driver(.patch(Self.chunk(offset: huge - 5, length: declared)))
            let a = d.read(row)
            if fits {
                #expect({ if case .streamChunk = a { true } else { false } }(), "\(declared)")
            } else {
                #expect({ if case .pastLength(huge)? = d.refusal { true } else { false } }(), "\(declared)")
            }
        }
        // No declared length: the pieces themselves are counted, and the one that crosses is refused.
        var d = Driver(.patch(Self.chunk(offset: huge - 5, length: nil)))
        _ = d.read(row)
        #expect({ if case .write(at: 0) = d.send({ $0.bodyPiece(3) }) { true } else { false } }())
        #expect({ if case .write(at: 3) = d.send({ $0.bodyPiece(2) }) { true } else { false } }())
        #expect({ if case .refuse(.pastLength(huge)) = d.send({ $0.bodyPiece(1) }) { true } else { false } }())
        d.end()
        #expect(d.claims == 1 && d.releases == 1 && d.discards == 1)  // the written bytes go
        var big = Driver(.patch(Self.chunk(offset: 10, length: nil)))
        _ = big.read(Self.upload())
        #expect({ if case .refuse(.pastLength(100)) = big.send({ $0.bodyPiece(Int.max) }) { true } else { false } }())
    }

    /// Drives a PATCH of 5 bytes at offset 10 to its body's end, with this checksum and digest.
    static func received(length: Int64 = 100, checksum: String?, digest: [UInt8]) -> (Driver, Action) {
        var d = Driver(.patch(chunk(checksum: checksum)))
        guard case .streamChunk = d.read(upload(received: 10, length: length)) else { return (d, .none) }
        _ = d.send { $0.bodyPiece(5) }
        let ended = d.send { $0.bodyEnded(digest: digest) }
        return (d, ended)
    }

    @Test func aChunkIsCommittedOrRefusedByItsChecksum() throws {
        let sha = Digest.sha256(Array("hello".utf8))
        let header = "sha256 " + Base64.encode(sha)

        // A middle chunk: its offset commits, then the answer.
        let sent = Self.received(checksum: header, digest: sha)
        var middle = sent.0
        let action = sent.1
        guard case .commitOffset(_, to: 15) = action else { Issue.record("\(action)"); return }
        #expect({ if case .answerAppended(_, offset: 15) = middle.send({ $0.committed() }) { true } else { false } }())
        middle.end()
        #expect(middle.claims == 1 && middle.releases == 1 && middle.discards == 0)

        // The last chunk: the whole file is verified, then committed like a plain upload.
        let whole = Self.received(length: 15, checksum: nil, digest: sha)
        var last = whole.0
        let ended = whole.1
        guard case .verifyWholeFile(let r) = ended else { Issue.record("\(ended)"); return }
        #expect(r.uploadId == "tus-1")
        guard case .commitWholeFile(_, let record) = last.send({ $0.verified(Self.stored()) }) else { Issue.record("\(last.actions)"); return }
        #expect(record.sha256 == "ab")
        #expect({ if case .answerAppended(_, offset: 15) = last.send({ $0.committed() }) { true } else { false } }())
        last.end()
        #expect(last.claims == 1 && last.releases == 1 && last.discards == 0)

        // A mismatch: 1015, the chunk discarded, the claim released once.
        let mismatched = Self.received(checksum: header, digest: [UInt8](repeating: 0, count: 32))
        var bad = mismatched.0
        let refused = mismatched.1
        guard case .refuse(.checksumMismatch) = refused else { Issue.record("\(refused)"); return }
        #expect(bad.refusal?.error.code == .digestMismatch)
        bad.end()
        bad.end()
        #expect(bad.claims == 1 && bad.releases == 1 && bad.discards == 1)
    }

    @Test func theClaimIsReleasedExactlyOnceOnEveryPath() {
        let sha = Digest.sha256(Array("hello".utf8))
        // Each path: how far it gets, then the door ends it. `discarded`: its bytes must go.
        let paths: [(String, (inout Driver) -> Void, discarded: Bool)] = [
            ("offset committed", { d in _ = d.send { $0.committed() } }, false),
            ("commit failed", { _ in }, true),                    // the gate refused, or the disk failed
            ("aborted mid-body", { d in d = Self.midBody() }, true), // the client went away
            ("refused after the claim", { d in d = Self.refusedAfterClaim() }, false),
        ]
        for (name, go, discarded) in paths {
            var d = Self.received(checksum: nil, digest: sha).0
            go(&d)
            d.end()
            d.end()
            #expect(d.claims == 1 && d.releases == 1, "\(name): \(d.claims) claims, \(d.releases) releases")
            #expect(d.discards == (discarded ? 1 : 0), "\(name)")
            #expect({ if case .ended = d.machine.state { true } else { false } }(), "\(name)")
        }
        // The last chunk failing its check, or its commit: discarded, released once.
        for verified in [false, true] {
            var d = Self.received(length: 15, checksum: nil, digest: sha).0
            if verified { _ = d.send { $0.verified(Self.stored()) } }
            d.end()
            #expect(d.claims == 1 && d.releases == 1 && d.discards == 1, "verified: \(verified)")
        }
        // A DELETE: released once, whether the row went or not.
        for removed in [false, true] {
            var d = Driver(.delete)
            _ = d.read(Self.upload())
            if removed { #expect({ if case .answerDeleted = d.send({ $0.deleted() }) { true } else { false } }()) }
            d.end()
            #expect(d.claims == 1 && d.releases == 1 && d.discards == 0)
        }
    }

    static func midBody() -> Driver {
        var d = Driver(.patch(chunk(length: nil)))
        _ = d.read(upload())
        _ = d.send { $0.bodyPiece(3) }
        return d
    }

    static func refusedAfterClaim() -> Driver {
        var d = Driver(.patch(chunk(offset: 0)))
        _ = d.read(upload())
        return d
    }

    @Test func aBusyUploadIsRefusedWithoutAClaimToRelease() {
        for (request, deleting) in [(ResumableUpload.Request.patch(Self.chunk()), false), (.delete, true)] {
            var d = Driver(request, free: false)
            let a = d.read(Self.upload())
            guard case .refuse(.busy(deleting: deleting)) = a else { Issue.record("\(a)"); continue }
            d.end()
            #expect(d.claims == 0 && d.releases == 0)
        }
        // DELETE while a PATCH works says so.
        #expect(ResumableUploadRefusal.busy(deleting: true).error.detail.contains("PATCH of this upload is in progress"))
        // HEAD claims nothing: it reads even while a PATCH works.
        var head = Driver(.head, free: false)
        #expect({ if case .answerOffset = head.read(Self.upload()) { true } else { false } }())
        head.end()
        #expect(head.claims == 0 && head.releases == 0)
    }

    @Test func aFinishedUploadTakesOnlyAnEmptyPatchAndReleasesAtOnce() {
        var d = Driver(.patch(Self.chunk(offset: 100, length: 0)))
        guard case .answerFinished(let r) = d.read(Self.upload(received: 100, length: 100, expiresAt: 5), now: 6) else {
            Issue.record("\(d.actions)"); return  // finished uploads are not gone past their date either
        }
        #expect(r.length == 100)
        d.end()
        #expect(d.claims == 1 && d.releases == 1 && d.discards == 0)
        // A body is past its length.
        var body = Driver(.patch(Self.chunk(offset: 100, length: 1)))
        _ = body.read(Self.upload(received: 100, length: 100))
        #expect({ if case .pastLength(100)? = body.refusal { true } else { false } }())
    }

    @Test func anExpiredUploadIsGoneToHeadAndPatchButMayBeDeleted() {
        let expired = Self.upload(expiresAt: 5)
        var head = Driver(.head)
        _ = head.read(expired, now: 6)
        #expect({ if case .gone(expiresAt: 5)? = head.refusal { true } else { false } }())
        var patch = Driver(.patch(Self.chunk()))
        _ = patch.read(expired, now: 6)
        #expect({ if case .gone(expiresAt: 5)? = patch.refusal { true } else { false } }())
        patch.end()
        #expect(patch.claims == 1 && patch.releases == 1)
        // Gone is still a 404's code; the door makes it tus's 410.
        #expect(patch.refusal?.error.code == .notFound)
        // Not yet expired at its last millisecond.
        var before = Driver(.head)
        #expect({ if case .answerOffset = before.read(expired, now: 4) { true } else { false } }())
        var delete = Driver(.delete)
        #expect({ if case .delete = delete.read(expired, now: 6) { true } else { false } }())
        delete.send { $0.deleted() }
        delete.end()
        #expect(delete.claims == 1 && delete.releases == 1)
        // Someone else's expired upload is nothing, to DELETE too.
        var stranger = Driver(.delete)
        _ = stranger.read(expired, caller: "usr-2", now: 6)
        #expect({ if case .notFound? = stranger.refusal { true } else { false } }())
    }

    @Test func eventsOutOfOrderAreRefusedNotTrapped() {
        var head = ResumableUpload(.head)
        #expect({ if case .refuse(.outOfOrder) = head.bodyEnded(digest: []) { true } else { false } }())
        #expect({ if case .none = head.end() { true } else { false } }())
        #expect({ if case .none = head.begin() { true } else { false } }())  // ended: nothing more
        var patch = ResumableUpload(.patch(Self.chunk()))
        _ = patch.begin()
        #expect({ if case .refuse(.outOfOrder) = patch.rowRead(Self.upload(), caller: "usr-1", now: 0) { true } else { false } }())
        #expect({ if case .none = patch.end() { true } else { false } }())  // never claimed: nothing to release
    }

    // MARK: - with a BusySet

    @Test func aRequestHoldsItsClaimUntilItEnds() {
        let busy = BusySet()
        let patch = ResumableUploadRequest(.patch(Self.chunk()), uploadId: "tus-1", busy: busy)
        #expect({ if case .readRow = patch.send({ $0.begin() }) { true } else { false } }())
        #expect(!busy.claim("tus-1"))
        #expect({ if case .streamChunk = patch.send({ $0.rowRead(Self.upload(), caller: "usr-1", now: 0) }) { true } else { false } }())
        // A DELETE meanwhile is refused, and its end leaves the PATCH's claim alone.
        let delete = ResumableUploadRequest(.delete, uploadId: "tus-1", busy: busy)
        #expect({ if case .refuse(.busy(deleting: true)) = delete.send({ $0.begin() }) { true } else { false } }())
        delete.end()
        #expect(!busy.claim("tus-1"))
        // The PATCH ends (its chunk discarded first): free again, and a second end changes nothing.
        var discarded = 0
        patch.end { _ in
            discarded += 1
            #expect(!busy.claim("tus-1"))  // still held while its bytes go
        }
        #expect(discarded == 1)
        #expect(busy.claim("tus-1"))
        patch.end { _ in discarded += 1 }
        #expect(discarded == 1)
        #expect(!busy.claim("tus-1"))  // the test's own claim, untouched by the second end
        busy.release("tus-1")
    }

    @Test func aRequestDroppedHalfWayReleasesItsClaim() {
        let busy = BusySet()
        do {
            let patch = ResumableUploadRequest(.patch(Self.chunk()), uploadId: "tus-1", busy: busy)
            _ = patch.send { $0.begin() }
            #expect(!busy.claim("tus-1"))
        }
        #expect(busy.claim("tus-1"))
        busy.release("tus-1")
        // The sweep's claims: held while it works, each released once.
        do {
            let claims = ["a", "b"].compactMap(busy.hold)
            withExtendedLifetime(claims) { #expect(claims.count == 2 && busy.hold("a") == nil) }
        }
        #expect(busy.hold("a") != nil && busy.hold("b") != nil)
    }
}
