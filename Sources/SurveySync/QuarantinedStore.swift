import Foundation

/// A store that could not be read whole, moved aside instead of being shown as empty or written
/// over. It stays on the device until the app (with the person's confirmation) discards it.
public struct QuarantinedStore: Sendable, Equatable {
    /// The folder holding the damaged file and its WAL, as they were.
    public let directory: URL
    /// Why it could not be read (technical; for a support report).
    public let reason: String

    /// The sentence to show.
    public var message: String { OutboxError.unreadable(reason).message }

    /// Copies the damaged files into `destination` (a new folder) for a support request.
    public func export(to destination: URL) throws {
        try FileManager.default.copyItem(at: directory, to: destination)
    }

    public func discard() throws {
        try FileManager.default.removeItem(at: directory)
    }

    static let reasonFile = "reason.txt"

    /// Moves the store's files (database, WAL, shared memory) under `root/<time>/`.
    static func quarantine(storePath: String, reason: String, root: URL) throws -> QuarantinedStore {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "-")
        let folder = root.appendingPathComponent(stamp + "-" + UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: storePath + suffix) {
            let name = URL(fileURLWithPath: storePath + suffix).lastPathComponent
            try FileManager.default.moveItem(atPath: storePath + suffix, toPath: folder.appendingPathComponent(name).path)
        }
        try Data(reason.utf8).write(to: folder.appendingPathComponent(reasonFile))
        return QuarantinedStore(directory: folder, reason: reason)
    }

    /// Every quarantined store under `root`, oldest first.
    static func all(under root: URL) -> [QuarantinedStore] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return names.sorted().map { name in
            let folder = root.appendingPathComponent(name)
            let reason = (try? String(contentsOf: folder.appendingPathComponent(reasonFile), encoding: .utf8)) ?? "unknown"
            return QuarantinedStore(directory: folder, reason: reason)
        }
    }
}
