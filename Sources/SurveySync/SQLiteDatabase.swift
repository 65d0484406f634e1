import Foundation
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// SQLite's failure, with its result code so callers can tell "disk full" from "not a database".
struct SQLiteError: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    var description: String { "SQLite \(code): \(message)" }

    /// The store or the disk has no room left (SQLITE_FULL), whatever the cause (disk, quota, page limit).
    var isFull: Bool { code & 0xff == SQLITE_FULL }
    /// The disk refused a read, a write or an fsync (SQLITE_IOERR and its extended codes).
    var isIO: Bool { code & 0xff == SQLITE_IOERR }
    /// The file is not a database or its pages are damaged.
    var isDamage: Bool { [SQLITE_CORRUPT, SQLITE_NOTADB].contains(code & 0xff) }
}

/// SQLite's "copy the bytes now" destructor; the C macro cannot be imported.
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A value bound to or read from a statement.
enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    var int: Int64? { if case .integer(let v) = self { return v }; return nil }
    var double: Double? {
        switch self {
        case .real(let v): return v
        case .integer(let v): return Double(v)
        default: return nil
        }
    }
    var string: String? { if case .text(let v) = self { return v }; return nil }
    var bytes: [UInt8]? {
        switch self {
        case .blob(let v): return v
        case .text(let v): return Array(v.utf8)
        default: return nil
        }
    }
}

/// One SQLite connection. Not thread-safe on its own: `OutboxStore` holds it behind a mutex.
final class SQLiteDatabase {
    private var handle: OpaquePointer?
    let path: String

    init(path: String) throws {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(db)
            throw SQLiteError(code: rc, message: message)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 5_000)
    }

    deinit { close() }

    func close() {
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    func execute(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw lastError() }
    }

    /// Runs one statement and returns its rows, each as its columns in order.
    @discardableResult
    func query(_ sql: String, _ parameters: [SQLValue] = []) throws -> [[SQLValue]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else { throw lastError() }
        defer { sqlite3_finalize(statement) }
        for (index, value) in parameters.enumerated() {
            let position = Int32(index + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(statement, position)
            case .integer(let v): rc = sqlite3_bind_int64(statement, position, v)
            case .real(let v): rc = sqlite3_bind_double(statement, position, v)
            case .text(let v): rc = sqlite3_bind_text(statement, position, v, -1, transientDestructor)
            case .blob(let v):
                rc = v.withUnsafeBytes { sqlite3_bind_blob(statement, position, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(v.count), transientDestructor) }
            }
            guard rc == SQLITE_OK else { throw lastError() }
        }
        var rows: [[SQLValue]] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw lastError(rc) }
            var row: [SQLValue] = []
            for column in 0..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    if count == 0 { row.append(.blob([])); break }
                    // NULL for a non-empty blob only when SQLite ran out of memory converting it.
                    guard let pointer = sqlite3_column_blob(statement, column) else { throw lastError(SQLITE_NOMEM) }
                    row.append(.blob(Array(UnsafeRawBufferPointer(start: pointer, count: count))))
                default: row.append(.null)
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// Runs `body` in one transaction: committed whole or rolled back whole.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        let value: T
        do { value = try body() } catch {
            try? execute("ROLLBACK")
            throw error
        }
        do {
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            sealWAL()
            throw error
        }
        return value
    }

    /// After a failed COMMIT. One whose WAL fsync failed has written its frames past the end of
    /// the WAL that SQLite knows of: should the app be killed before the next commit, the next
    /// open's recovery could find them and keep a capture the person was told was not saved (and
    /// has saved again). A committed change, made and undone in one transaction, overwrites the
    /// first of those frames and so ends the chain recovery follows. If even that fails, the next
    /// commit that succeeds does the same.
    private func sealWAL() {
        do {
            try execute("BEGIN IMMEDIATE")
            let version = try query("PRAGMA user_version").first?.first?.int ?? 0
            try execute("PRAGMA user_version = \(version + 1)")
            try execute("PRAGMA user_version = \(version)")
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
        }
    }

    private func lastError(_ rc: Int32? = nil) -> SQLiteError {
        let code = rc ?? sqlite3_extended_errcode(handle)
        return SQLiteError(code: code, message: handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed")
    }
}
