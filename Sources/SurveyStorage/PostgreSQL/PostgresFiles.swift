import Foundation
import SurveyDomain

/// Files on PostgreSQL, so that every process serves every file: a stored file is the rows
/// `blob_chunks(sha256, n, bytes)` (content-addressed like `blobs/` on disk, pieces of at most
/// 1 MiB), written in the transaction of the upload's row; the received bytes of an unfinished
/// resumable upload are `partial_chunks(upload_id, start, bytes)`, written in the transaction
/// that moves its offset. Bytes go in and out a piece at a time, never whole in memory.
enum PostgresFiles {
    static let pieceSize = 1 << 20

    /// Stores the file at `path` as the blob `sha256`, unless it is stored already.
    static func storeBlob(_ conn: any SQLConnection, path: String, sha256: String) throws {
        guard try !isStored(conn, sha256: sha256) else { return }
        try forEachPiece(of: path) { index, piece in
            try conn.run("INSERT INTO blob_chunks(sha256, n, bytes) VALUES (?, ?, ?)", [.text(sha256), .int(Int64(index)), .blob(piece)])
        }
    }

    /// Appends the file at `path` (one PATCH body) to the upload's received bytes at `start`.
    static func appendPartial(_ conn: any SQLConnection, uploadId: String, start: Int64, path: String, upTo limit: Int64? = nil) throws {
        try forEachPiece(of: path, upTo: limit) { index, piece in
            try conn.run("INSERT INTO partial_chunks(upload_id, start, bytes) VALUES (?, ?, ?)",
                         [.text(uploadId), .int(start + Int64(index * pieceSize)), .blob(piece)])
        }
    }

    /// The finished upload's bytes become the blob `sha256` (copied inside the server, in
    /// order), and its pieces go.
    static func blobFromPartial(_ conn: any SQLConnection, uploadId: String, sha256: String) throws {
        if try !isStored(conn, sha256: sha256) {
            try conn.run("""
                INSERT INTO blob_chunks(sha256, n, bytes)
                SELECT ?, row_number() OVER (ORDER BY start) - 1, bytes FROM partial_chunks WHERE upload_id = ?
                """, [.text(sha256), .text(uploadId)])
        }
        try dropPartial(conn, uploadId: uploadId)
    }

    /// Whether the blob is stored. Writers of one blob take turns from here to their commit,
    /// so a blob is always one upload's pieces.
    private static func isStored(_ conn: any SQLConnection, sha256: String) throws -> Bool {
        try conn.takeTurn("blob\u{1}" + sha256)
        return try !conn.query("SELECT 1 FROM blob_chunks WHERE sha256 = ? AND n = 0", [.text(sha256)]).isEmpty
    }

    static func dropPartial(_ conn: any SQLConnection, uploadId: String) throws {
        try conn.run("DELETE FROM partial_chunks WHERE upload_id = ?", [.text(uploadId)])
    }

    /// `limit`: the bytes to take at most (a partial file may hold bytes past its recorded offset).
    private static func forEachPiece(of path: String, upTo limit: Int64? = nil, _ body: (Int, [UInt8]) throws -> Void) throws {
        let reader = try FileByteReader(path: path)
        defer { reader.close() }
        var buffer = [UInt8](repeating: 0, count: pieceSize)
        var index = 0
        var left = limit ?? .max
        while left > 0 {
            var filled = 0
            let want = Int(min(Int64(pieceSize), left))
            while filled < want {
                let n = try buffer.withUnsafeMutableBytes { try reader.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled..<want])) }
                if n == 0 { break }
                filled += n
            }
            if filled == 0 { return }
            try body(index, Array(buffer[0..<filled]))
            index += 1
            left -= Int64(filled)
            if filled < want { return }
        }
    }
}

extension Database {
    /// A stored file's bytes, read a piece at a time on pooled readers (blobs never change), in
    /// binary format: a 1 MiB piece arrives as its bytes, not as 2 MiB of hex to decode.
    func blobRows(sha256: String) -> any ByteReader {
        var n: Int64 = 0
        return RowPiecesReader { [self] in
            defer { n += 1 }
            return try read { db in try db.conn.queryBinary("SELECT bytes FROM blob_chunks WHERE sha256 = ? AND n = ?", [.text(sha256), .int(n)]).first?.blob("bytes") }
        }
    }

    /// The received bytes of a resumable upload so far, in order.
    public func partialRows(uploadId: String) -> any ByteReader {
        var next: Int64 = 0
        return RowPiecesReader { [self] in
            guard let row = try read({ db in
                try db.conn.queryBinary("SELECT start, bytes FROM partial_chunks WHERE upload_id = ? AND start >= ? ORDER BY start LIMIT 1",
                                  [.text(uploadId), .int(next)]).first
            }) else { return nil }
            let bytes = try row.blob("bytes")
            next = try row.int("start") + Int64(bytes.count)
            return bytes
        }
    }
}
