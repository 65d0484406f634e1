import SurveyHTTP
import SurveyStorage

extension HTTPResponse {
    /// A stored file as the answer: sent from disk with sendfile (SQLite's data dir), or read
    /// from the database a piece at a time while it is sent (PostgreSQL). Nil when it cannot be opened.
    public static func storedFile(_ blobs: BlobStore, sha256: String, size: Int64, headers: [(String, String)]) -> HTTPResponse? {
        if let path = blobs.localPath(sha256: sha256) { return .file(path: path, headers: headers) }
        guard let reader = try? blobs.reader(sha256: sha256) else { return nil }
        return .stream(StoredFileBody(reader), size: Int(size), headers: headers)
    }
}

/// A stored file's reader as a response body.
final class StoredFileBody: BodySource, @unchecked Sendable {
    // @unchecked: the server calls one response's source from one thread at a time.
    private let reader: any ByteReader
    init(_ reader: any ByteReader) { self.reader = reader }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { try reader.read(into: buffer) }
    func close() { reader.close() }
}
