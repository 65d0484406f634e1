import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// One PATCH body, written where its request's machine says: into the partial file at the
/// upload's offset, or into a staging file (PostgreSQL; `ResumableUploads.ChunkFile`). It carries
/// the request, which `abort` ends: the machine says whether the chunk's bytes go, then the
/// claim on the upload is released — once, whichever way the request ended.
final class ChunkSink: BodySink, @unchecked Sendable {
    // @unchecked: libmicrohttpd calls one connection's handler sequentially; `abort` comes last.
    private let exchange: ResumableUploadRequest
    let file: ResumableUploads.ChunkFile
    private let fd: Int32
    private var hasher: Digest
    private var closed = false

    init(_ exchange: ResumableUploadRequest, file: ResumableUploads.ChunkFile, checksum: ChunkChecksum?) throws {
        self.exchange = exchange
        self.file = file
        hasher = Digest(checksum?.algorithm ?? .sha256)
        // Never O_CREAT: the file is made with the upload's row, and reviving a removed one
        // would leave a file no row owns (or fill a finished upload's name with zeros).
        fd = open(file.path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if file.staged { unlink(file.path) }
            throw ApiError(.storageUnavailable, "The partial file of this upload is missing.")
        }
        // Anything past the recorded offset is a chunk that never committed.
        ftruncate(fd, off_t(file.start))
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        let at: Int64
        switch exchange.send({ $0.bodyPiece(bytes.count) }) {
        case .write(let position): at = position
        case .refuse(let reason): throw Self.refusal(ResumableUploadService.tus(reason))
        default: throw ApiError(.internalError)
        }
        guard let base = bytes.baseAddress else { return }
        hasher.update(bytes)
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, base + done, bytes.count - done, off_t(file.start + at) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw Self.refusal(ProtocolRefusal(ApiError(.storageUnavailable, errno == ENOSPC ? "The disk is full; the offset is unchanged." : "Writing the chunk failed.")))
            }
            done += n
        }
    }

    /// A refusal while the body arrives is rendered by the HTTP engine, not by the door's
    /// `refusal`: tus's header goes with it from here.
    private static func refusal(_ r: ProtocolRefusal) -> ProtocolRefusal {
        ProtocolRefusal(r.error, status: r.status, headers: ResumableUploadService.tusHeaders + r.headers)
    }

    /// The body is in: fsynced, then what the machine makes of it (a checksum refusal, or which commit).
    func bodyEnded() throws -> ResumableUpload.Action {
        guard fsync(fd) == 0 else { throw ApiError(.storageUnavailable, "fsync of the chunk failed; the offset is unchanged.") }
        let digest = hasher.result()
        return exchange.send { $0.bodyEnded(digest: digest) }
    }

    func send(_ event: (inout ResumableUpload) -> ResumableUpload.Action) -> ResumableUpload.Action { exchange.send(event) }

    func abort() {
        guard !closed else { return }
        closed = true
        exchange.end { [fd, file] _ in
            // The bytes past the offset never committed; a staging file goes below anyway.
            if !file.staged { ftruncate(fd, off_t(file.start)) }
        }
        close(fd)
        if file.staged { unlink(file.path) }
    }
}
