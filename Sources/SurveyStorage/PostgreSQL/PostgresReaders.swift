import Foundation
import SurveyDomain

/// Connections for reads on PostgreSQL, handed out one per read like SQLite's `ReaderPool`.
/// Each read is a REPEATABLE READ, READ ONLY transaction: one snapshot for everything it reads,
/// as SQLite's read transactions give. A connection the server dropped is opened again.
final class PostgresReaders: ReadPool, @unchecked Sendable {
    // @unchecked: `idle` is guarded by `cond`; a connection is used by one thread while checked out.
    private let url: String
    private var idle: [PostgresConnection?]
    private let cond = NSCondition()
    let beginRead = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"

    init(url: String, count: Int) throws {
        self.url = url
        idle = try (0..<max(1, count)).map { _ in try PostgresConnection(url: url) }
    }

    func withConnection<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        cond.lock()
        while idle.isEmpty { cond.wait() }
        var conn = idle.removeLast()
        cond.unlock()
        defer {
            cond.lock()
            idle.append(conn)
            cond.signal()
            cond.unlock()
        }
        if conn == nil || conn?.isOpen == false {
            conn = nil
            do { conn = try PostgresConnection(url: url) } catch {
                throw ApiError(.storageUnavailable, "The database cannot be reached.", retryAfterSeconds: 1)
            }
        }
        return try body(conn!)
    }
}
