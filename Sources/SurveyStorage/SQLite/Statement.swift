import CSQLite

/// A prepared statement, reused through the connection's cache.
final class Statement {
    let handle: OpaquePointer
    let sql: String
    unowned let connection: Connection
    /// The result columns' names, fixed by the SQL when it is prepared.
    let columns: Row.Columns

    init(connection: Connection, sql: String) throws(SQLiteError) {
        var h: OpaquePointer?
        let rc = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &h, nil)
        guard rc == SQLITE_OK, let h else { throw connection.error(rc, sql: sql) }
        self.handle = h
        self.sql = sql
        self.connection = connection
        columns = Row.Columns((0..<sqlite3_column_count(h)).map { sqlite3_column_name(h, $0).map { String(cString: $0) } ?? "" })
    }
    deinit { sqlite3_finalize(handle) }

    func bind(_ args: [SQLValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (i, v) in args.enumerated() {
            let idx = Int32(i + 1)
            let rc: Int32
            switch v {
            case .null: rc = sqlite3_bind_null(handle, idx)
            case .int(let x): rc = sqlite3_bind_int64(handle, idx, x)
            case .double(let x): rc = sqlite3_bind_double(handle, idx, x)
            case .text(let s) where s.isEmpty:
                rc = sqlite3_bind_text(handle, idx, "", 0, csqlite_transient())  // a nil pointer would bind NULL
            case .text(let s):
                // Native strings hand SQLite their UTF-8 in place (no C-string copy); SQLite copies it.
                rc = s.utf8.withContiguousStorageIfAvailable { buf in
                    buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) {
                        sqlite3_bind_text(handle, idx, $0, Int32(buf.count), csqlite_transient())
                    }
                } ?? sqlite3_bind_text(handle, idx, s, -1, csqlite_transient())
            case .blob(let b):
                // An empty array may have no address, which SQLite would bind as NULL.
                rc = b.isEmpty ? sqlite3_bind_zeroblob(handle, idx, 0)
                    : b.withUnsafeBytes { sqlite3_bind_blob(handle, idx, $0.baseAddress, Int32($0.count), csqlite_transient()) }
            }
            guard rc == SQLITE_OK else { throw connection.error(rc, sql: sql) }
        }
    }

    /// Steps to completion, collecting rows.
    func rows() throws(SQLiteError) -> [Row] {
        defer { sqlite3_reset(handle) }
        var out: [Row] = []
        while let row = try next() { out.append(row) }
        return out
    }

    /// The next row, or nil at the end.
    func next() throws(SQLiteError) -> Row? {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_DONE { return nil }
        guard rc == SQLITE_ROW else { throw connection.error(rc, sql: sql) }
        let n = sqlite3_column_count(handle)
        var values: [SQLValue] = []
        values.reserveCapacity(Int(n))
        for c in 0..<n {
            switch sqlite3_column_type(handle, c) {
            case SQLITE_INTEGER: values.append(.int(sqlite3_column_int64(handle, c)))
            case SQLITE_FLOAT: values.append(.double(sqlite3_column_double(handle, c)))
            case SQLITE_TEXT:
                // By length: text may hold NUL, where a C string would stop. (_text before
                // _bytes, as SQLite asks, so the length is that of the UTF-8 form.)
                let p = sqlite3_column_text(handle, c)
                let len = Int(sqlite3_column_bytes(handle, c))
                values.append(.text(p.map { String(decoding: UnsafeBufferPointer(start: $0, count: len), as: UTF8.self) } ?? ""))
            case SQLITE_BLOB:
                let len = Int(sqlite3_column_bytes(handle, c))
                if let p = sqlite3_column_blob(handle, c), len > 0 {
                    values.append(.blob(Array(UnsafeRawBufferPointer(start: p, count: len))))
                } else { values.append(.blob([])) }
            default: values.append(.null)
            }
        }
        return Row(columns: columns, values: values)
    }
}
