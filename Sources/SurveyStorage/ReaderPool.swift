import Foundation
import SurveyDomain

/// Connections for reads, handed out one per read; `beginRead` starts a read's snapshot.
protocol ReadPool: AnyObject, Sendable {
    var beginRead: String { get }
    func withConnection<T>(_ body: (any SQLConnection) throws -> T) throws -> T
}

/// SQLite's read-only connections handed out one per read.
final class ReaderPool: ReadPool, @unchecked Sendable {
    // @unchecked: `idle` is guarded by `cond`; a connection is used by one thread while checked out.
    private var idle: [Connection]
    private let cond = NSCondition()

    init(path: String, count: Int) throws {
        idle = try (0..<max(1, count)).map { _ in
            let c = try Connection(path: path, readOnly: true)
            try c.execute("PRAGMA query_only=ON")
            return c
        }
    }

    let beginRead = "BEGIN"

    func withConnection<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        cond.lock()
        while idle.isEmpty { cond.wait() }
        let conn = idle.removeLast()
        cond.unlock()
        defer {
            cond.lock()
            idle.append(conn)
            cond.signal()
            cond.unlock()
        }
        return try body(conn)
    }
}
