import CSQLite
import SurveyDomain

/// A failed SQLite call with its result code, message and the SQL that failed.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public let sql: String?

    public var description: String { "SQLite error \(code): \(message)" + (sql.map { " [\($0)]" } ?? "") }

    public var primaryCode: Int32 { code & 0xFF }
    public var isConstraint: Bool { primaryCode == SQLITE_CONSTRAINT }
    /// A UNIQUE index or PRIMARY KEY already holds the value (SQLITE_CONSTRAINT_UNIQUE and
    /// _PRIMARYKEY: C macros built by shifting, which Swift does not import).
    public var isUniqueViolation: Bool { code == SQLITE_CONSTRAINT | (8 << 8) || code == SQLITE_CONSTRAINT | (6 << 8) }

    /// How the contract reports it: disk full, I/O and lock trouble are retryable 1040.
    public var apiError: ApiError {
        switch primaryCode {
        case SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_NOMEM:
            ApiError(.storageUnavailable, "Storage is unavailable (\(primaryCode == SQLITE_FULL ? "disk full" : "I/O")); nothing was written.")
        default:
            ApiError(.internalError, "Storage error; nothing partial was written.")
        }
    }
}
