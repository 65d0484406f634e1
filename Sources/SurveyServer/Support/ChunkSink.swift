import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// Appends one PATCH body at the upload's offset: into the partial file (SQLite's data dir),
/// or into a staging file of its own that the offset's transaction copies into the database
/// (PostgreSQL, `staged`). Until `committed`, `abort` truncates the partial file back to the
/// offset it started from; a staging file always goes. It carries the request's exchange, which
/// `abort` ends, releasing the claim on the upload once, whichever way the request ended.
final class ChunkSink: BodySink, @unchecked Sendable {
    // @unchecked: libmicrohttpd calls one connection's handler sequentially; `abort` comes last.
    let record: ResumableUploadRecord
    let path: String
    private var exchange: ResumableUploadExchange
    /// Where in `path` this chunk starts: the offset (partial file) or 0 (staging file).
    private let base: Int64
    let staged: Bool
    private let fd: Int32
    private var hasher: Digest
    private(set) var written = 0
    var committed = false
    private var closed = false
    private let busy: BusySet

    init(exchange: ResumableUploadExchange, record: ResumableUploadRecord, path: String, staged: Bool, busy: BusySet) throws {
        guard case .receiving(_, let checksum) = exchange.state else { throw ApiError(.internalError) }
        self.exchange = exchange
        self.record = record
        self.path = path
        self.staged = staged
        base = staged ? 0 : record.receivedBytes
        self.busy = busy
        hasher = Digest(checksum?.algorithm ?? .sha256)
        // Never O_CREAT: the file is made with the upload's row, and reviving a removed one
        // would leave a file no row owns (or fill a finished upload's name with zeros).
        fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ApiError(.storageUnavailable, "The partial file of this upload is missing.") }
        // Anything past the recorded offset is a chunk that never committed.
        ftruncate(fd, off_t(base))
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard record.receivedBytes + Int64(written + bytes.count) <= record.length else {
            throw ApiError(.payloadTooLarge, "The chunk runs past Upload-Length \(record.length).")
        }
        hasher.update(bytes)
        var off = 0
        while off < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + off, bytes.count - off, off_t(base) + off_t(written + off))
            if n < 0 {
                if errno == EINTR { continue }
                throw ApiError(.storageUnavailable, errno == ENOSPC ? "The disk is full; the offset is unchanged." : "Writing the chunk failed.")
            }
            off += n
        }
        written += bytes.count
    }

    func flush() throws {
        guard fsync(fd) == 0 else { throw ApiError(.storageUnavailable, "fsync of the chunk failed; the offset is unchanged.") }
    }

    /// The body is in: what the exchange does with it (a checksum refusal, or which commit).
    func bodyEnded() -> ResumableUploadExchange.Action {
        let action = exchange.bodyEnded(written: Int64(written), digest: hasher.result())
        if case .refuse(_, true) = action { busy.release(record.uploadId) }
        return action
    }

    func abort() {
        guard !closed else { return }
        closed = true
        if !committed && !staged { ftruncate(fd, off_t(base)) }
        close(fd)
        if staged { unlink(path) }
        if case .end(true) = exchange.end() { busy.release(record.uploadId) }
    }
}
