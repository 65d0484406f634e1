import Foundation
import SurveyDomain

/// Console sign-in attempts counted across every process of one PostgreSQL database, so that the
/// throttle holds wherever an attacker's requests land: each attempt is a row per key (account,
/// address) from before its password is checked; a successful one is removed, a failed one
/// counts until the window has passed. Attempts for one key take turns, so the count is exact
/// under concurrency. On SQLite (one process) the throttle counts in memory and this is unused.
public final class SignInAttempts: Sendable {
    private let database: Database

    init(database: Database) { self.database = database }

    /// Records an attempt under every key, or answers how many milliseconds to wait when one of
    /// them already has `limit` attempts within `windowMillis` (nothing is recorded then).
    public func begin(id: String, keys: [String], limit: Int, windowMillis: Int64, now: Int64) throws -> Int64? {
        try database.writer.submit { conn -> Int64? in
            // Sorted, so two attempts sharing two keys cannot wait on each other.
            for key in keys.sorted() { try conn.takeTurn("sign-in\u{1}" + key) }
            var wait: Int64 = 0
            for key in keys {
                let rows = try conn.query("SELECT COUNT(*) AS n, MIN(at) AS first_at FROM sign_in_attempts WHERE key = ? AND at > ?",
                                          [.text(key), .int(now - windowMillis)])
                guard let row = rows.first else { continue }
                if try row.int("n") >= Int64(limit) { wait = max(wait, try row.int("first_at") + windowMillis - now) }
            }
            if wait > 0 { return wait }
            for key in keys {
                try conn.run("INSERT INTO sign_in_attempts(attempt_id, key, at) VALUES (?, ?, ?)", [.text(id), .text(key), .int(now)])
            }
            return nil
        }
    }

    /// The attempt succeeded (or was never checked): it stops counting.
    public func forget(id: String) throws {
        try database.writer.submit { conn in try conn.run("DELETE FROM sign_in_attempts WHERE attempt_id = ?", [.text(id)]) }
    }

    /// Attempts older than the window (housekeeping, hourly).
    public func purge(before: Int64) throws {
        guard database.dialect == .postgres else { return }
        try database.writer.submit { conn in try conn.run("DELETE FROM sign_in_attempts WHERE at < ?", [.int(before)]) }
    }
}

extension Database {
    public var signInAttempts: SignInAttempts { SignInAttempts(database: self) }
}
