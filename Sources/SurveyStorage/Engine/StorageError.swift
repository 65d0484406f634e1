import SurveyDomain

/// Storage failures that belong to neither engine's own error type.
enum StorageError: Error, CustomStringConvertible {
    /// The database was written by a newer surveyd.
    case newerSchema(String)
    /// The configuration cannot work (a bad `synchronous` value, WAL refused).
    case misconfigured(String)

    var description: String {
        switch self {
        case .newerSchema(let m), .misconfigured(let m): m
        }
    }
}

/// Advisory-lock keys on PostgreSQL (one namespace for surveyd, small numbers).
enum AdvisoryLock {
    /// Migration steps, one process at a time.
    static let migrations: Int64 = 0x5355_5256_0001
    /// Taken (shared) by every transaction that appends to the audit log, until it commits:
    /// a reader of the log waits for the holders it sees to finish (see `AuditHorizon`).
    static let auditAppend: Int64 = 0x5355_5256_0002
    /// Held (session) by the one process that delivers webhooks (`Lease`).
    static let webhookDispatch: Int64 = 0x5355_5256_0003
    /// The first half of an organization's two-part key (the second is a hash of its id): shared
    /// by every gated write, exclusive for a change of its subscription.
    static let organization: Int32 = 0x5355_0004
}

/// True when a UNIQUE index or primary key already holds the value, on either engine.
func isUniqueViolation(_ error: any Error) -> Bool {
    if let e = error as? SQLiteError { return e.isUniqueViolation }
    if let e = error as? PostgresError { return e.isUniqueViolation }
    return false
}
