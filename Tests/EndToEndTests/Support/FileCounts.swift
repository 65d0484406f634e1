import Foundation

extension TestServer {
    /// Regular files under a directory of the data dir, recursively. On PostgreSQL, files are rows:
    /// "blobs" lists the stored files' hashes, "partial" the unfinished resumable uploads that
    /// hold received bytes (as each has a partial file on disk with SQLite).
    func files(in sub: String) -> [String] {
        if TestEngine.isPostgres && sub == "blobs" {
            return ((try? rows("SELECT DISTINCT sha256 FROM blob_chunks")) ?? []).compactMap { try? $0.string("sha256") }
        }
        if TestEngine.isPostgres && sub == "partial" {
            return ((try? rows("""
                SELECT upload_id FROM resumable_uploads WHERE received_bytes < length UNION SELECT upload_id FROM partial_chunks
                """)) ?? []).compactMap { try? $0.string("upload_id") }
        }
        return ServerProcess.regularFiles(under: dataDir + "/" + sub)
    }

    /// The bytes of a stored file, by its name in `files(in: "blobs")`.
    func storedBytes(blob name: String) throws -> [UInt8] {
        guard TestEngine.isPostgres else { return Array(try Data(contentsOf: URL(fileURLWithPath: dataDir + "/blobs/" + name))) }
        return try rows("SELECT bytes FROM blob_chunks WHERE sha256 = ? ORDER BY n", [.text(name)]).flatMap { try $0.blob("bytes") }
    }

    /// The bytes received so far of an unfinished resumable upload; nil when it keeps none.
    func receivedBytes(uploadId: String) throws -> [UInt8]? {
        guard TestEngine.isPostgres else {
            return (try? Data(contentsOf: URL(fileURLWithPath: dataDir + "/partial/" + uploadId))).map(Array.init)
        }
        guard files(in: "partial").contains(uploadId) else { return nil }
        return try rows("SELECT bytes FROM partial_chunks WHERE upload_id = ? ORDER BY start", [.text(uploadId)]).flatMap { try $0.blob("bytes") }
    }
}

enum Files {
    static func jpeg(_ size: Int = 2048, seed: UInt8 = 1) -> [UInt8] {
        var b: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00]
        while b.count < size - 2 { b.append(UInt8(truncatingIfNeeded: b.count &* 31) ^ seed) }
        return b + [0xFF, 0xD9]
    }
    static func png(_ size: Int = 1024) -> [UInt8] {
        var b: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        while b.count < size { b.append(UInt8(truncatingIfNeeded: b.count)) }
        return b
    }
}
