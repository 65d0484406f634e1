import CSQLite
import SurveyDomain

/// One SQLite connection, used by one thread at a time (the writer thread, or a reader
/// checked out of the pool). Statements are prepared once and cached by their SQL.
final class Connection {
    let handle: OpaquePointer
    private var cache: [String: Statement] = [:]

    /// The library's process-wide settings, applied once before the first connection opens.
    private static let configured: Int32 = csqlite_configure()

    init(path: String, readOnly: Bool) throws(SQLiteError) {
        _ = Self.configured
        var h: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        let rc = sqlite3_open_v2(path, &h, flags, nil)
        guard rc == SQLITE_OK, let h else {
            let msg = h.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let h { sqlite3_close_v2(h) }
            throw SQLiteError(code: rc, message: msg, sql: nil)
        }
        handle = h
        sqlite3_extended_result_codes(h, 1)
        sqlite3_busy_timeout(h, 5000)
    }

    deinit {
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ rc: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    func execute(_ sql: String) throws(SQLiteError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql: sql) }
    }

    private func statement(_ sql: String) throws(SQLiteError) -> Statement {
        if let s = cache[sql] { return s }
        let s = try Statement(connection: self, sql: sql)
        cache[sql] = s
        return s
    }

    @discardableResult
    func query(_ sql: String, _ args: [SQLValue] = []) throws(SQLiteError) -> [Row] {
        let s = try statement(sql)
        try s.bind(args)
        return try s.rows()
    }

    func run(_ sql: String, _ args: [SQLValue] = []) throws(SQLiteError) {
        _ = try query(sql, args)
    }

    var changes: Int { Int(sqlite3_changes(handle)) }
    var totalChanges: Int64 { Int64(sqlite3_total_changes64(handle)) }

    /// A pragma's value as text. It answers in one column named after it (`journal_mode=WAL`
    /// reads `journal_mode`).
    func pragma(_ name: String) throws -> String? {
        let column = String(name.prefix { $0 != "=" && $0 != "(" })
        return try query("PRAGMA \(name)", []).first.flatMap {
            switch try $0.value(column) { case .text(let s): s; case .int(let i): String(i); default: nil }
        }
    }
}

extension Connection: SQLConnection {
    var dialect: SQLDialect { .sqlite }
}
