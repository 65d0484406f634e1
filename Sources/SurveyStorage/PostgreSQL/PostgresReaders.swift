import Foundation
import SurveyDomain

/// Connections for reads on PostgreSQL, handed out one per read like SQLite's `ReaderPool`.
/// Each read is a REPEATABLE READ, READ ONLY transaction: one snapshot for everything it reads,
/// as SQLite's read transactions give. A connection the server dropped is opened again.
final class PostgresReaders: ReadPool, Sendable {
    private let url: String
    /// nil: a connection to open again (the server dropped it).
    private let pool: Pool<PostgresConnection?>
    let beginRead = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"

    init(url: String, count: Int) throws {
        self.url = url
        pool = Pool(try (0..<max(1, count)).map { _ in try PostgresConnection(url: url) })
    }

    func withConnection<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        try pool.with { conn in
            var again = false
            while true {
                let c: PostgresConnection
                if let open = conn, open.isOpen {
                    c = open
                } else {
                    conn = nil
                    do { c = try PostgresConnection(url: url) } catch {
                        throw ApiError(.storageUnavailable, "The database cannot be reached.", retryAfterSeconds: 1)
                    }
                    conn = c
                }
                let before = c.answered
                do {
                    return try body(c)
                } catch let e as PostgresError where e.isConnectionLost && c.answered == before && !again {
                    // It broke while idle here (PostgreSQL restarted, or the network path was cut)
                    // and failed on the read's first statement: read once more on a new connection.
                    again = true
                    conn = nil
                }
            }
        }
    }
}
