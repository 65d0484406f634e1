import Foundation
import SurveyDomain

/// Bytes read front to back, wherever they are kept: a file on disk (SQLite's data dir) or rows
/// of PostgreSQL (`PostgresFiles`). Never the whole file in memory.
public protocol ByteReader: AnyObject {
    /// Fills the start of `buffer`; the count, or 0 at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    func close()
}

/// A file on disk.
public final class FileByteReader: ByteReader {
    private var fd: Int32
    public init(path: String) throws {
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ApiError(.storageUnavailable, "A stored file cannot be read.") }
    }
    /// An open descriptor, closed by `close`.
    public init(descriptor: Int32) { fd = descriptor }
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let n = Foundation.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno != EINTR { throw ApiError(.storageUnavailable, "A stored file cannot be read.") }
        }
    }
    public func close() {
        if fd >= 0 { Foundation.close(fd); fd = -1 }
    }
    deinit { close() }
}

/// Rows read one at a time, each a piece of the bytes (`next` answers nil at the end).
final class RowPiecesReader: ByteReader {
    private let next: () throws -> [UInt8]?
    private var piece: [UInt8] = []
    private var used = 0
    private var ended = false
    init(_ next: @escaping () throws -> [UInt8]?) { self.next = next }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while used == piece.count {
            guard !ended, let more = try next() else { ended = true; return 0 }
            piece = more
            used = 0
        }
        let n = min(buffer.count, piece.count - used)
        piece.withUnsafeBytes { src in buffer.baseAddress!.copyMemory(from: src.baseAddress! + used, byteCount: n) }
        used += n
        return n
    }
    func close() { ended = true; piece = [] }
}

/// One reader after the other (the committed part of a resumable upload, then its last chunk).
public final class ChainedByteReader: ByteReader {
    private var readers: [any ByteReader]
    public init(_ readers: [any ByteReader]) { self.readers = readers }
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while let first = readers.first {
            let n = try first.read(into: buffer)
            if n > 0 { return n }
            first.close()
            readers.removeFirst()
        }
        return 0
    }
    public func close() { readers.forEach { $0.close() }; readers = [] }
}
