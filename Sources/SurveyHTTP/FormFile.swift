import Foundation

/// A file part of a form. Its first bytes (up to its share of the form's memory budget) are kept in memory; a larger part goes to
/// an unlinked temporary file as it arrives, so nothing is left on disk when the request ends,
/// however it ends (the descriptor closes with the last reference, and a killed process leaves no
/// name behind). Most parts are small — the instance of an ODK submission is a few KB — and a
/// temporary file each cost more than the rest of such a submission (ext4 allocating and freeing
/// an inode per request).
public final class FormFile: @unchecked Sendable {
    // @unchecked: written only while the form is decoded (one connection's thread), read after.
    public let fileName: String
    public let contentType: String
    public private(set) var size: Int = 0
    /// At most this many bytes of one part stay in memory.
    static let partMemory = 64 << 10
    /// This part's share: `FormDecoder` keeps all of a form's parts within its own budget.
    private let memoryLimit: Int
    private var memory: [UInt8] = []
    /// Set once the part outgrows `memoryLimit`.
    private var descriptor: Int32 = -1
    private let directory: String

    init(directory: String, fileName: String, contentType: String, memoryLimit: Int) {
        self.directory = directory
        self.memoryLimit = memoryLimit
        self.fileName = fileName
        self.contentType = contentType
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        if descriptor < 0 && memory.count + bytes.count <= memoryLimit {
            memory.append(contentsOf: bytes)
            size += bytes.count
            return
        }
        if descriptor < 0 {
            try spill()
        }
        try writeAll(bytes)
        size += bytes.count
    }

    /// Moves what is in memory to a new unlinked temporary file.
    private func spill() throws {
        var template = Array((directory + "/surveyd-form-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { b in b.baseAddress.map { mkstemp($0) } ?? -1 }
        guard fd >= 0 else { throw FormDecoder.Failure.storage }
        template.withUnsafeBufferPointer { b in _ = b.baseAddress.map { unlink($0) } }
        descriptor = fd
        let held = memory
        memory = []
        try held.withUnsafeBytes { try writeAll($0) }
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(descriptor, bytes.baseAddress.map { $0 + done }, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw FormDecoder.Failure.storage }
            done += n
        }
    }

    /// The whole file (for small files a handler parses, such as a definition).
    public func bytes() throws -> [UInt8] {
        guard descriptor >= 0 else { return memory }
        var out: [UInt8] = []
        out.reserveCapacity(size)
        try read { out.append(contentsOf: $0) }
        return out
    }

    /// The file in chunks of at most 64 KiB, in order: a large attachment passes through without
    /// being held in memory.
    public func read(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard descriptor >= 0 else {
            try memory.withUnsafeBytes { try body($0) }
            return
        }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var done = 0
        while done < size {
            let n = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, min($0.count, size - done), off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw FormDecoder.Failure.storage }
            try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            done += n
        }
    }
}
