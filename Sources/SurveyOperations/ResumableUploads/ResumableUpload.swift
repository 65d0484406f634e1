import SurveyDomain
import SurveyStorage

/// One request on a resumable upload (create, HEAD, PATCH or DELETE) as a value: each event moves
/// the state and returns the one action the door performs next, then reports back with the next
/// event. The door owns the socket and the files; every rule lives here — so all of it is tested
/// without a server — including when the upload's claim is taken and that it is released once.
public struct ResumableUpload: Sendable {
    public enum Request: Sendable {
        case create(Creation)
        case head
        case patch(Chunk)
        case delete

        /// PATCH and DELETE claim the upload before its row is read: a request that read the row
        /// first could act on an offset another PATCH moved, or an upload a DELETE removed.
        var claims: Bool {
            switch self {
            case .patch, .delete: true
            case .create, .head: false
            }
        }
    }

    /// What a create asks for: the same caller and metadata again is the same upload.
    public struct Creation: Sendable {
        public let surveyVersionId: String?
        public let questionId: String?
        /// Normalized.
        public let contentType: String
        public let length: Int64

        public init(surveyVersionId: String?, questionId: String?, contentType: String, length: Int64) {
            self.surveyVersionId = surveyVersionId; self.questionId = questionId; self.contentType = contentType; self.length = length
        }

        /// What the upload `existing` under the create's clientUploadId makes of it (asked again
        /// inside the create's transaction: another create may commit meanwhile).
        public func replay(of existing: ResumableUploadRecord?, owner: String, now: Int64) -> Replay {
            // None, or expired unfinished: a create starts afresh (its write removes the old row).
            guard let e = existing, !e.isExpired(now: now) else { return .none }
            // Someone else's or for something else: 1004, revealing nothing of it.
            guard e.owner == owner, e.surveyVersionId == surveyVersionId, e.questionId == questionId,
                  e.contentType == contentType, e.length == length else { return .conflict }
            return .replay(e)
        }

        public enum Replay: Sendable {
            case none
            case replay(ResumableUploadRecord)
            case conflict
        }
    }

    /// What a PATCH's headers said, as the door read them.
    public struct Chunk: Sendable {
        /// The body is declared as chunk bytes (tus: `application/offset+octet-stream`).
        public let isChunkBytes: Bool
        public let offset: Int64?
        /// The body's declared length, when declared.
        public let declaredLength: Int64?
        /// The checksum the client sent, or why it cannot be read (refused in its turn).
        public let checksum: Result<ChunkChecksum?, ApiError>

        public init(isChunkBytes: Bool, offset: Int64?, declaredLength: Int64?, checksum: Result<ChunkChecksum?, ApiError>) {
            self.isChunkBytes = isChunkBytes; self.offset = offset; self.declaredLength = declaredLength; self.checksum = checksum
        }
    }

    public enum State: Sendable {
        case idle
        /// PATCH, DELETE: the claim is being taken.
        case claiming
        /// The upload's row is read next (a create's, by its clientUploadId).
        case reading
        /// create: the metadata is checked as a plain upload's next.
        case checkingTarget
        /// create: the partial file is made, then the row is written.
        case creating(ResumableUploadRecord)
        /// PATCH: the body streams in at the upload's offset; `written` bytes of it so far.
        case receiving(ResumableUploadRecord, ChunkChecksum?, written: Int64)
        /// PATCH: the new offset (and the chunk) commit.
        case committingOffset(ResumableUploadRecord, to: Int64)
        /// PATCH, the last chunk: the whole file is read back and checked.
        case verifying(ResumableUploadRecord)
        /// PATCH, the last chunk: the checked file commits like a plain upload.
        case committingWholeFile(ResumableUploadRecord, UploadRecord)
        /// DELETE: the row goes.
        case deleting(ResumableUploadRecord)
        /// Answered or refused; `end` is next. `uncommitted`: a chunk whose bytes must go.
        case answered(uncommitted: ResumableUploadRecord?)
        case ended
    }

    public enum Action: Sendable {
        /// Take the upload's claim, then `claimed`.
        case claim
        /// Read the upload's row (a create's by its clientUploadId), then `rowRead`.
        case readRow
        /// Answer this refusal, then `end`.
        case refuse(ResumableUploadRefusal)
        /// create: the same create again: answer with its upload.
        case answerReplay(ResumableUploadRecord)
        /// create: check the metadata like a plain upload's, then `targetChecked`.
        case checkTarget
        /// create: make the empty partial file, then write the row (replay and quota checked
        /// again inside the transaction), then `written`.
        case createPartialThenWrite(ResumableUploadRecord)
        case answerCreated(ResumableUploadRecord)
        /// HEAD: answer with the upload's offset.
        case answerOffset(ResumableUploadRecord)
        /// PATCH of a finished upload: only an empty body is taken, answered with the final offset.
        case answerFinished(ResumableUploadRecord)
        /// PATCH: open the chunk's file at the upload's offset (refused while the subscription is
        /// expired, before a byte is read), then send each piece of the body to `bodyPiece`.
        case streamChunk(ResumableUploadRecord, ChunkChecksum?)
        /// PATCH: write this piece at this position of the chunk.
        case write(at: Int64)
        /// PATCH: commit the new offset with the chunk, then `committed`.
        case commitOffset(ResumableUploadRecord, to: Int64)
        /// PATCH, the last chunk: read the whole file back through the plain upload's check, then `verified`.
        case verifyWholeFile(ResumableUploadRecord)
        /// PATCH, the last chunk: commit the checked file like a plain upload, then `committed`.
        case commitWholeFile(ResumableUploadRecord, UploadRecord)
        /// PATCH: answer with the new offset.
        case answerAppended(ResumableUploadRecord, offset: Int64)
        /// DELETE: remove the row through the gate, then its partial file, then `deleted`.
        case delete(ResumableUploadRecord)
        case answerDeleted
        /// The request ends with a chunk not committed: drop its bytes past the upload's offset,
        /// then `chunkDiscarded`.
        case discardChunk(ResumableUploadRecord)
        /// The request is over: release the claim.
        case release
        /// Nothing is left to do.
        case none
    }

    public let request: Request
    public private(set) var state: State = .idle
    /// The claim is held: exactly one `release` is still owed.
    private var claimed = false

    public init(_ request: Request) { self.request = request }

    public mutating func begin() -> Action {
        guard case .idle = state else { return outOfOrder() }
        if request.claims {
            state = .claiming
            return .claim
        }
        state = .reading
        return .readRow
    }

    /// The claim was taken, or another request holds it.
    public mutating func claimed(_ taken: Bool) -> Action {
        guard case .claiming = state else { return outOfOrder() }
        guard taken else {
            if case .delete = request { return refuse(.busy(deleting: true)) }
            return refuse(.busy(deleting: false))
        }
        claimed = true
        state = .reading
        return .readRow
    }

    /// The row under the path's id (a create's: under its clientUploadId), nil for none, read after
    /// the claim. Someone else's is the 404 of nothing; expired is gone, except to DELETE, which
    /// may abandon it, and to a create, which starts afresh.
    public mutating func rowRead(_ row: ResumableUploadRecord?, caller: String, now: Int64) -> Action {
        guard case .reading = state else { return outOfOrder() }
        if case .create(let asked) = request {
            switch asked.replay(of: row, owner: caller, now: now) {
            case .none:
                state = .checkingTarget
                return .checkTarget
            case .replay(let r):
                state = .answered(uncommitted: nil)
                return .answerReplay(r)
            case .conflict:
                return refuse(.conflict)
            }
        }
        guard let r = row, r.owner == caller else { return refuse(.notFound) }
        switch request {
        case .create:
            return outOfOrder()
        case .delete:
            state = .deleting(r)
            return .delete(r)
        case .head:
            if r.isExpired(now: now) { return refuse(.gone(expiresAt: r.expiresAt)) }
            state = .answered(uncommitted: nil)
            return .answerOffset(r)
        case .patch(let chunk):
            if r.isExpired(now: now) { return refuse(.gone(expiresAt: r.expiresAt)) }
            guard chunk.isChunkBytes else { return refuse(.notChunkBytes) }
            guard let offset = chunk.offset else { return refuse(.offsetMissing) }
            let checksum: ChunkChecksum?
            switch chunk.checksum {
            case .success(let c): checksum = c
            case .failure(let e): return refuse(.malformed(e))
            }
            guard offset == r.receivedBytes else { return refuse(.offsetMismatch(asked: offset, current: r.receivedBytes)) }
            // Compared as what is left, never offset + length: a declared length near Int64.max
            // overflowed the sum.
            if let length = chunk.declaredLength, length > r.length - r.receivedBytes { return refuse(.pastLength(r.length)) }
            if r.isComplete {
                state = .answered(uncommitted: nil)
                return .answerFinished(r)
            }
            state = .receiving(r, checksum, written: 0)
            return .streamChunk(r, checksum)
        }
    }

    /// create: the metadata passed a plain upload's checks (`Uploads.target`); `uploadId` is the
    /// new upload's id, `now` and `lifetime` set its expiry.
    public mutating func targetChecked(_ target: UploadTarget, uploadId: String, now: Int64, lifetime: Int64) -> Action {
        guard case .checkingTarget = state, case .create(let asked) = request else { return outOfOrder() }
        if target.existing != nil { return refuse(.completedAlready) }
        let record = ResumableUploadRecord(
            uploadId: uploadId, orgId: target.orgId, clientUploadId: target.clientUploadId, owner: target.uploader,
            surveyVersionId: target.surveyVersionId, questionId: target.questionId, contentType: target.contentType,
            length: asked.length, receivedBytes: 0, expiresAt: now + lifetime, createdAt: now)
        state = .creating(record)
        return .createPartialThenWrite(record)
    }

    /// create: the row was written, or the transaction found the same create committed meanwhile.
    public mutating func written(_ outcome: WriteGate.Outcome<ResumableUploadRecord>) -> Action {
        guard case .creating = state else { return outOfOrder() }
        state = .answered(uncommitted: nil)
        switch outcome {
        case .written(let r): return .answerCreated(r)
        case .replayed(let r): return .answerReplay(r)
        }
    }

    /// create: inside the write's transaction, `held` declared bytes of unfinished uploads are
    /// the owner's already. Compared as what is left, never held + length.
    public static func quotaRefusal(held: Int64, length: Int64, allowed: Int64) -> ResumableUploadRefusal? {
        length > allowed - held ? .quota(held: held, allowed: allowed) : nil
    }

    /// PATCH: the next `count` bytes of the body arrived.
    public mutating func bodyPiece(_ count: Int) -> Action {
        guard case .receiving(let r, let checksum, let written) = state else { return outOfOrder() }
        // Compared as what is left: the body may declare no length, or another than it sends.
        guard Int64(count) <= r.length - r.receivedBytes - written else { return refuse(.pastLength(r.length)) }
        state = .receiving(r, checksum, written: written + Int64(count))
        return .write(at: written)
    }

    /// PATCH: the body is in (and on disk), with this digest (of the checksum's algorithm, or SHA-256).
    public mutating func bodyEnded(digest: [UInt8]) -> Action {
        guard case .receiving(let r, let checksum, let written) = state else { return outOfOrder() }
        if let checksum, !checksum.matches(digest) { return refuse(.checksumMismatch) }
        let offset = r.receivedBytes + written
        if offset == r.length {
            state = .verifying(r)
            return .verifyWholeFile(r)
        }
        state = .committingOffset(r, to: offset)
        return .commitOffset(r, to: offset)
    }

    /// PATCH, the last chunk: the whole file passed the check every finished file gets.
    public mutating func verified(_ record: UploadRecord) -> Action {
        guard case .verifying(let r) = state else { return outOfOrder() }
        state = .committingWholeFile(r, record)
        return .commitWholeFile(r, record)
    }

    /// PATCH: the offset (or the whole file) committed; the chunk's bytes are the upload's now.
    public mutating func committed() -> Action {
        switch state {
        case .committingOffset(let r, let offset):
            state = .answered(uncommitted: nil)
            return .answerAppended(r, offset: offset)
        case .committingWholeFile(let r, _):
            state = .answered(uncommitted: nil)
            return .answerAppended(r, offset: r.length)
        default:
            return outOfOrder()
        }
    }

    /// DELETE: the row is gone.
    public mutating func deleted() -> Action {
        guard case .deleting = state else { return outOfOrder() }
        state = .answered(uncommitted: nil)
        return .answerDeleted
    }

    /// The request is over, answered or not: whatever failed on the way (a refusal at the gate, a
    /// dropped connection, a full disk) ends here too. An uncommitted chunk is discarded first,
    /// then the claim goes; ending again does nothing.
    public mutating func end() -> Action {
        if case .ended = state { return .none }
        if let r = uncommitted {
            state = .answered(uncommitted: nil)
            return .discardChunk(r)
        }
        return release()
    }

    /// The uncommitted chunk's bytes are gone.
    public mutating func chunkDiscarded() -> Action {
        guard case .answered(uncommitted: nil) = state else { return outOfOrder() }
        return release()
    }

    private mutating func release() -> Action {
        state = .ended
        guard claimed else { return .none }
        claimed = false
        return .release
    }

    /// Nothing was committed; a chunk being received is discarded when the request ends.
    private mutating func refuse(_ reason: ResumableUploadRefusal) -> Action {
        state = .answered(uncommitted: uncommitted)
        return .refuse(reason)
    }

    /// The upload whose chunk was (or is being) written and is not committed.
    private var uncommitted: ResumableUploadRecord? {
        switch state {
        case .receiving(let r, _, _), .committingOffset(let r, _), .verifying(let r), .committingWholeFile(let r, _),
             .answered(uncommitted: .some(let r)):
            r
        default:
            nil
        }
    }

    private mutating func outOfOrder() -> Action {
        if case .ended = state { return .none }
        return refuse(.outOfOrder)
    }
}
