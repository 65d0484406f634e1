import Foundation
import SurveyDomain

/// Keyed requests in flight, counted across every process of one PostgreSQL database, so that
/// `--max-keyed-in-flight` bounds a caller wherever its requests land. Each request in flight is a
/// row of `keyed_in_flight` from its start to its end; claims for one caller take turns, so the
/// count is exact. A process killed mid-request leaves its rows behind: they stop counting after
/// `staleAfter` and the hourly housekeeping removes them. On SQLite (one process) the count in
/// memory (`KeyTurns`) is the whole count, and this does nothing.
public final class KeyedInFlight: Sendable {
    private let database: Database
    static let staleAfterMillis: Int64 = 10 * 60 * 1000

    init(database: Database) { self.database = database }

    /// A claim to hand back to `release`, or nil when `caller` already has `limit` in flight.
    public func claim(caller: String, limit: Int) throws -> String? {
        guard database.dialect == .postgres else { return "" }
        let id = Ids.make("kif", nowMillis: database.clock.nowMillis())
        let now = database.clock.nowMillis()
        return try database.writer.submit { conn -> String? in
            try conn.takeTurn("keyed-in-flight\u{1}" + caller)
            let held = try conn.query("SELECT COUNT(*) AS n FROM keyed_in_flight WHERE caller = ? AND started_at > ?",
                                      [.text(caller), .int(now - Self.staleAfterMillis)]).first?.int("n") ?? 0
            guard held < limit else { return nil }
            try conn.run("INSERT INTO keyed_in_flight(claim_id, caller, started_at) VALUES (?, ?, ?)", [.text(id), .text(caller), .int(now)])
            return id
        }
    }

    public func release(_ claim: String) {
        guard !claim.isEmpty else { return }
        _ = try? database.writer.submit { conn in try conn.run("DELETE FROM keyed_in_flight WHERE claim_id = ?", [.text(claim)]) }
    }

    /// Rows a killed process left behind (housekeeping, hourly).
    public func purgeStale(now: Int64) throws {
        guard database.dialect == .postgres else { return }
        try database.writer.submit { conn in try conn.run("DELETE FROM keyed_in_flight WHERE started_at < ?", [.int(now - Self.staleAfterMillis)]) }
    }
}

extension Database {
    public var keyedInFlight: KeyedInFlight { KeyedInFlight(database: self) }
}
