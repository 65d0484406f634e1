import Foundation
import SurveyDomain

/// Read-only connections handed out one per read.
final class ReaderPool: @unchecked Sendable {
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

    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
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
