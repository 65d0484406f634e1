/// Where everything of one data dir lives — the one place its layout is spelled:
///
///     DIR/surveyd.sqlite      the database (with -wal and -shm beside it)
///     DIR/surveyd.lock        held by the serving process (`DataDirLock`)
///     DIR/blobs/ab/cd/<sha>   committed files, content-addressed by SHA-256
///     DIR/tmp/                plain upload bodies being received
///     DIR/partial/<uploadId>  bytes of unfinished resumable uploads
public struct DataDirectory: Sendable, Equatable {
    public let root: String
    public init(_ root: String) { self.root = root }

    public var database: String { root + "/surveyd.sqlite" }
    public var lockFile: String { root + "/surveyd.lock" }
    public var blobs: String { root + "/blobs" }
    public var temp: String { root + "/tmp" }
    public var partial: String { root + "/partial" }

    /// The directories a data dir needs besides its database.
    public var fileDirectories: [String] { [blobs, temp, partial] }

    /// A committed file: `blobs/ab/cd/<sha256>`.
    public func blob(sha256: String) -> String {
        let c = Array(sha256)
        return "\(blobs)/\(String(c[0..<2]))/\(String(c[2..<4]))/\(sha256)"
    }
    public func partial(uploadId: String) -> String { partial + "/" + uploadId }
}
