import Foundation
import SurveyDomain

/// Files on disk. Bodies stream into `tmp/`, are fsynced and verified, then hard-linked to a
/// content-addressed path under `blobs/` (and the directory fsynced) inside the writer's
/// transaction of their row, so a row never exists without its file. Resumable uploads keep
/// their received bytes in `partial/` until they complete or expire.
public final class BlobStore: Sendable {
    public let layout: DataDirectory
    var root: String { layout.blobs }
    var tempDir: String { layout.temp }
    var partialDir: String { layout.partial }

    /// PostgreSQL: files are rows of the database (`PostgresFiles`), shared by every process;
    /// the data dir keeps only request bodies on their way in (`tmp/`).
    private let database: Database?
    public var keepsFilesInDatabase: Bool { database != nil }

    public init(_ layout: DataDirectory, database: Database? = nil) throws {
        self.layout = layout
        self.database = database?.dialect == .postgres ? database : nil
        for d in layout.fileDirectories {
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        }
    }

    public func path(sha256: String) -> String { layout.blob(sha256: sha256) }

    /// A file on disk that can be sent as it is (sendfile), or nil when files are in the database.
    public func localPath(sha256: String) -> String? { keepsFilesInDatabase ? nil : path(sha256: sha256) }

    /// The stored file's bytes, front to back.
    public func reader(sha256: String) throws -> any ByteReader {
        if let database { return database.blobRows(sha256: sha256) }
        return try FileByteReader(path: path(sha256: sha256))
    }

    /// An empty file under `tmp/` for one PATCH body on its way into the database.
    public func createStaging() throws -> String {
        let path = "\(tempDir)/\(Ids.make("chunk", nowMillis: Timestamp.nowMillis()))"
        try Self.createEmpty(path)
        return path
    }

    public func partialPath(uploadId: String) -> String { layout.partial(uploadId: uploadId) }

    /// The empty partial file of a new resumable upload (refused if the name exists).
    public func createPartial(uploadId: String) throws { try Self.createEmpty(partialPath(uploadId: uploadId)) }

    /// A new empty file (refused if the name exists).
    private static func createEmpty(_ path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ioError("create", errno) }
        close(fd)
    }

    public func createTemp() throws -> TempFile {
        try TempFile(path: "\(tempDir)/\(Ids.make("tmp", nowMillis: Timestamp.nowMillis()))")
    }

    /// Links a verified, fsynced file to its content-addressed path (and fsyncs the directory).
    /// The source name stays until the caller drops it after the commit, so a rollback or a crash
    /// never loses the bytes a resumable upload still needs. Returns false when the same content
    /// is already stored.
    func place(tempPath: String, sha256: String) throws -> Bool {
        let final = path(sha256: sha256)
        if access(final, F_OK) == 0 { return false }
        let dir = (final as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        guard link(tempPath, final) == 0 else { throw Self.ioError("link", errno) }
        do {
            try Self.fsyncDirectory(dir)
        } catch {
            // Not placed: no row will name it, and a retry must link (and fsync) it again.
            unlink(final)
            throw error
        }
        return true
    }

    func remove(sha256: String) { unlink(path(sha256: sha256)) }

    /// At start: temp files are leftovers of requests that never committed; blobs and partial
    /// files that no row references are removed too.
    public func sweep(referencedBlobs: Set<String>, livePartials: Set<String>) -> (temp: Int, blobs: Int, partials: Int) {
        var counts = (temp: 0, blobs: 0, partials: 0)
        let fm = FileManager.default
        for name in (try? fm.contentsOfDirectory(atPath: tempDir)) ?? [] where unlink("\(tempDir)/\(name)") == 0 { counts.temp += 1 }
        for name in (try? fm.contentsOfDirectory(atPath: partialDir)) ?? [] where !livePartials.contains(name) {
            if unlink("\(partialDir)/\(name)") == 0 { counts.partials += 1 }
        }
        if let walker = fm.enumerator(atPath: root) {
            while let rel = walker.nextObject() as? String {
                let full = "\(root)/\(rel)"
                var isDir: ObjCBool = false
                guard fm.fileExists(atPath: full, isDirectory: &isDir), !isDir.boolValue else { continue }
                let name = (rel as NSString).lastPathComponent
                if !referencedBlobs.contains(name), unlink(full) == 0 { counts.blobs += 1 }
            }
        }
        return counts
    }

    static func fsyncDirectory(_ dir: String) throws {
        let fd = open(dir, O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else { throw ioError("open directory", errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw ioError("fsync directory", errno) }
    }

    /// ENOSPC and EDQUOT are "disk full": retryable 1040, like every storage failure.
    static func ioError(_ what: String, _ code: Int32) -> ApiError {
        let full = code == ENOSPC || code == EDQUOT
        return ApiError(.storageUnavailable, full ? "The disk is full; nothing was written." : "File storage failed (\(what)); nothing was written.")
    }
}

/// A file being written: hashes (SHA-256) as it goes (what the bytes are is `FileCheck`'s).
public final class TempFile: @unchecked Sendable {
    // @unchecked: one request's thread writes it at a time (libmicrohttpd calls a connection's
    // handler sequentially); `abort` may come from the completion callback after that.
    public let path: String
    private var fd: Int32
    private var digest = Digest(.sha256)
    public private(set) var size = 0
    private var closed = false
    /// Bytes not yet written. The body arrives in libmicrohttpd's chunks (tens of KB, not aligned
    /// to pages); written one by one, ext4 zeroed the uncovered part of every new page cache
    /// folio first (9 % of the upload phase's CPU) and paid a syscall each. Written in 128 KiB
    /// pieces instead; `finish` writes the rest before the fsync.
    private var pending: [UInt8] = []
    static let writeSize = 128 << 10

    init(path: String, append: Bool = false) throws {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_EXCL), 0o600)
        guard fd >= 0 else { throw BlobStore.ioError("create", errno) }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        digest.update(bytes)
        if pending.isEmpty { pending.reserveCapacity(Self.writeSize) }
        pending.append(contentsOf: bytes)
        size += bytes.count
        if pending.count >= Self.writeSize { try flush() }
    }

    private func flush() throws {
        try pending.withUnsafeBytes { buf in
            var off = 0
            while off < buf.count {
                let n = Foundation.write(fd, buf.baseAddress! + off, buf.count - off)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw BlobStore.ioError("write", errno)
                }
                off += n
            }
        }
        pending.removeAll(keepingCapacity: true)
    }

    /// Writes what is pending, fsyncs and closes; returns the hex SHA-256 of everything written.
    public func finish() throws -> String {
        try flush()
        pending = []
        guard fsync(fd) == 0 else { throw BlobStore.ioError("fsync", errno) }
        close(fd)
        closed = true
        return Hex.encode(digest.result())
    }

    /// Closes and removes the file (nothing of it remains).
    public func discard() {
        pending = []
        if !closed { close(fd); closed = true }
        unlink(path)
    }
}
