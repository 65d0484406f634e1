import Foundation

/// A file part of a form, written to an unlinked temporary file as it arrived: nothing is left on
/// disk when the request ends, however it ends (the descriptor closes with the last reference,
/// and a killed process leaves no name behind).
public final class FormFile: @unchecked Sendable {
    // @unchecked: written only while the form is decoded (one connection's thread), read after.
    public let fileName: String
    public let contentType: String
    public private(set) var size: Int = 0
    private let descriptor: Int32

    init(directory: String, fileName: String, contentType: String) throws {
        var template = Array((directory + "/surveyd-form-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { b in b.baseAddress.map { mkstemp($0) } ?? -1 }
        guard fd >= 0 else { throw FormDecoder.Failure.storage }
        template.withUnsafeBufferPointer { b in _ = b.baseAddress.map { unlink($0) } }
        descriptor = fd
        self.fileName = fileName
        self.contentType = contentType
    }

    deinit { close(descriptor) }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(descriptor, bytes.baseAddress.map { $0 + done }, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw FormDecoder.Failure.storage }
            done += n
        }
        size += bytes.count
    }

    /// The whole file (for small files a handler parses, such as a definition).
    public func bytes() throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let n = out.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress.map { $0 + done }, size - done, off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw FormDecoder.Failure.storage }
            done += n
        }
        return out
    }

    /// The file in chunks of at most 64 KiB, in order: a large attachment passes through without
    /// being held in memory.
    public func read(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
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
