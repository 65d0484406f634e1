import SurveyDomain
import SurveyStorage

/// One request on a resumable upload (tus HEAD, PATCH or DELETE) as a value: each event moves
/// the state and returns what the door does next. The door owns the socket and the files; the
/// rules, and the one claim a PATCH or DELETE holds on the upload, live here, so every path
/// releases the claim exactly once — and all of it is tested without a server.
public struct ResumableUploadExchange: Sendable {
    public enum Request: Sendable, Equatable { case head, patch, delete }

    public enum State: Sendable {
        case start
        /// Claimed (PATCH, DELETE) or not (HEAD); the row is read next.
        case reading(claimed: Bool)
        /// PATCH: the body streams into the upload's file.
        case receiving(ResumableUploadRecord, ChunkChecksum?)
        /// PATCH or DELETE: its transaction runs.
        case committing(ResumableUploadRecord)
        case ended
    }

    /// What a PATCH asked for, as its headers said.
    public struct Chunk: Sendable {
        public let contentType: String
        public let offset: Int64?
        public let contentLength: Int64?
        /// `Upload-Checksum`, read when the rules come to it (a malformed one is refused then).
        public let checksum: @Sendable () throws -> ChunkChecksum?
        public init(contentType: String, offset: Int64?, contentLength: Int64?, checksum: @escaping @Sendable () throws -> ChunkChecksum?) {
            self.contentType = contentType; self.offset = offset; self.contentLength = contentLength; self.checksum = checksum
        }
    }

    public enum Action: Sendable {
        /// Read the upload's row, then call `rowRead`.
        case readRow
        /// Nothing was done; release the claim when `releaseClaim`.
        case refuse(ResumableUploadRefusal, releaseClaim: Bool)
        /// HEAD: answer with the record's offset.
        case answerOffset(ResumableUploadRecord)
        /// PATCH of a complete upload: only an empty body is taken, answered with the final offset.
        case answerComplete(ResumableUploadRecord, releaseClaim: Bool)
        /// PATCH: refuse while the subscription is expired (no byte read), else receive the body.
        case receive(ResumableUploadRecord, ChunkChecksum?)
        /// PATCH: commit the new offset (and the chunk).
        case commitOffset(ResumableUploadRecord, to: Int64)
        /// PATCH, the last chunk: verify the whole file and commit it like a plain upload.
        case commitWhole(ResumableUploadRecord)
        /// DELETE: remove the row through the gate, then the partial file.
        case delete(ResumableUploadRecord)
        /// The request is over: release the claim when `releaseClaim`.
        case end(releaseClaim: Bool)
    }

    public let request: Request
    public private(set) var state: State = .start
    private var claimed = false

    public init(_ request: Request) { self.request = request }

    /// PATCH and DELETE claim the upload before its row is read: a request that read the row
    /// first could act on an offset another PATCH moved, or an upload a DELETE removed.
    public mutating func begin(claim: () -> Bool) -> Action {
        guard case .start = state else { return end() }
        if request != .head {
            guard claim() else {
                state = .ended
                return .refuse(.busy(request), releaseClaim: false)
            }
            claimed = true
        }
        state = .reading(claimed: claimed)
        return .readRow
    }

    /// The row under the path's id (nil: none): the caller's own, else the 404 of nothing;
    /// expired is gone, except to DELETE, which may abandon it.
    public mutating func rowRead(_ row: ResumableUploadRecord?, caller: String, now: Int64, chunk: Chunk? = nil) -> Action {
        guard case .reading = state else { return end() }
        guard let r = row, r.owner == caller else { return refuse(.notFound) }
        if request != .delete && r.isExpired(now: now) { return refuse(.gone(expiresAt: r.expiresAt)) }
        switch request {
        case .head:
            state = .ended
            return .answerOffset(r)
        case .delete:
            state = .committing(r)
            return .delete(r)
        case .patch:
            guard let chunk else { return refuse(.offsetMissing) }
            guard chunk.contentType == "application/offset+octet-stream" else { return refuse(.notOffsetOctetStream) }
            guard let offset = chunk.offset else { return refuse(.offsetMissing) }
            let checksum: ChunkChecksum?
            do { checksum = try chunk.checksum() } catch let e as ApiError { return refuse(.malformed(e)) } catch { return refuse(.malformed(ApiError.malformed("\(error)"))) }
            guard offset == r.receivedBytes else { return refuse(.offsetMismatch(asked: offset, current: r.receivedBytes)) }
            // Compared as what is left, not offset + length: a declared length near Int64.max
            // overflowed the sum.
            if let length = chunk.contentLength, length > r.length - offset { return refuse(.pastLength(r.length)) }
            if r.isComplete {
                state = .ended
                defer { claimed = false }
                return .answerComplete(r, releaseClaim: claimed)
            }
            state = .receiving(r, checksum)
            return .receive(r, checksum)
        }
    }

    /// The body is in (and on disk): `written` bytes with this digest.
    public mutating func bodyEnded(written: Int64, digest: [UInt8]) -> Action {
        guard case .receiving(let r, let checksum) = state else { return end() }
        if let checksum, !checksum.matches(digest) { return refuse(.checksumMismatch) }
        state = .committing(r)
        let offset = r.receivedBytes + written
        return offset == r.length ? .commitWhole(r) : .commitOffset(r, to: offset)
    }

    /// The transaction committed, or anything on the way failed (a refusal at the gate, a
    /// dropped connection, a full disk): the request is over either way.
    public mutating func end() -> Action {
        let release = claimed
        claimed = false
        state = .ended
        return .end(releaseClaim: release)
    }

    private mutating func refuse(_ reason: ResumableUploadRefusal) -> Action {
        let release = claimed
        claimed = false
        state = .ended
        return .refuse(reason, releaseClaim: release)
    }
}
