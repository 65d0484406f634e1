import Foundation
import SurveyDomain

/// Connections for reads, handed out one per read; `beginRead` starts a read's snapshot.
protocol ReadPool: AnyObject, Sendable {
    var beginRead: String { get }
    func withConnection<T>(_ body: (any SQLConnection) throws -> T) throws -> T
}

/// SQLite's read-only connections handed out one per read.
final class ReaderPool: ReadPool, Sendable {
    private let pool: Pool<Connection>

    init(path: String, count: Int) throws {
        pool = Pool(try (0..<max(1, count)).map { _ in
            let c = try Connection(path: path, readOnly: true)
            try c.execute("PRAGMA query_only=ON")
            return c
        })
    }

    let beginRead = "BEGIN"

    func withConnection<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        try pool.with { try body($0) }
    }
}
