import Foundation
import Synchronization
import Testing
@testable import SurveyStorage
import SurveyDomain

/// A write decided by reads (`WriteGate.writeAsync(orgId:prepare:then:)`, a submission's path):
/// on PostgreSQL its reads run in the write's own transaction, on SQLite in a reader's snapshot
/// before the write; on both, what `prepare` answers or refuses writes nothing, and the gate's
/// subscription check still comes after `prepare`'s checks.
@Suite struct PreparedWriteTests {
    /// One organization `org_1`, on PostgreSQL with one write connection and one reader.
    static func withDatabase(expiresIn: Int64 = 3_600_000, _ body: (Database, WriteGate) throws -> Void) throws {
        try PostgresConnectionTests.withCluster { url in
            let db = try PostgresConnectionTests.database(url)
            defer { db.close() }
            _ = try db.securityWrite(orgId: "org_1", actor: "t") { tx in
                try tx.createOrg(orgId: "org_1", name: "A", expiresAt: Timestamp.nowMillis() + expiresIn)
            }
            try body(db, WriteGate(database: db))
        }
    }

    /// `writeAsync(orgId:prepare:then:)`, waited for.
    static func write<T: Sendable>(_ gate: WriteGate, prepare: @escaping @Sendable (ReadContext) throws -> WriteGate.Prepared<T>) throws -> WriteGate.Outcome<T> {
        let outcome = Mutex<Result<WriteGate.Outcome<T>, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        gate.writeAsync(orgId: "org_1", prepare: prepare) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }

    static func survey(_ id: String, in read: ReadContext) -> WriteGate.PreparedWrite<String> {
        WriteGate.PreparedWrite(actor: "u", organization: nil, replay: { _ in nil }, replayCheck: .beforeWrite) { tx in
            _ = try tx.createSurvey(surveyId: id, title: "T", reviewRequired: false, createdBy: "u")
            return try Self.transactionId(tx.read)
        }
    }

    /// The transaction's id (assigning one if it has none yet): the same in two reads only when
    /// they ran in one transaction.
    static func transactionId(_ read: ReadContext) throws -> String {
        try read.conn.query("SELECT txid_current()::text AS x").first?.string("x") ?? "?"
    }

    static func count(_ table: String, _ db: Database) throws -> Int64 {
        try db.read { try $0.conn.query("SELECT COUNT(*) AS n FROM \(table)").first?.int("n") ?? -1 }
    }

    @Test func onPostgreSQLTheReadsAndTheWriteAreOneTransaction() throws {
        try Self.withDatabase { db, gate in
            let readIn = Mutex<String?>(nil)
            let outcome = try Self.write(gate) { read in
                readIn.withLock { $0 = try? Self.transactionId(read) }
                return .write(Self.survey("s1", in: read))
            }
            guard case .written(let writtenIn) = outcome else { Issue.record("expected a write, got \(outcome)"); return }
            #expect(readIn.withLock { $0 } == writtenIn)
            #expect(try Self.count("surveys", db) == 1)
        }
    }

    /// What `prepare` refuses or answers writes nothing, and leaves no lock behind: a renewal of
    /// the organization goes through at once afterwards.
    @Test func aRefusalOrAnAnswerFromPrepareWritesNothingAndHoldsNoLock() throws {
        try Self.withDatabase { db, gate in
            let audits = try Self.count("audit", db)
            #expect {
                _ = try Self.write(gate) { _ -> WriteGate.Prepared<String> in throw ApiError(.forbidden, "no") }
            } throws: { ($0 as? ApiError)?.code == .forbidden }
            let answered = try Self.write(gate) { _ in WriteGate.Prepared<String>.answered("stored") }
            guard case .replayed("stored") = answered else { Issue.record("expected the answer, got \(answered)"); return }
            #expect(try Self.count("surveys", db) == 0)
            #expect(try Self.count("audit", db) == audits)
            let renewed = DispatchSemaphore(value: 0)
            Thread {
                _ = try? db.securityWrite(orgId: "org_1", actor: "t") { tx in
                    try tx.setSubscription(orgId: "org_1", expiresAt: Timestamp.nowMillis() + 7_200_000)
                }
                renewed.signal()
            }.start()
            #expect(renewed.wait(timeout: .now() + 10) == .success, "a renewal waited for a lock a refused write kept")
        }
    }

    /// The gate's 1001 comes after `prepare`'s own checks, and an answer from `prepare` (a replay)
    /// is given even while the subscription has expired.
    @Test func anExpiredSubscriptionRefusesOnlyAfterPrepareAndLeavesNothing() throws {
        try Self.withDatabase(expiresIn: -1000) { db, gate in
            let audits = try Self.count("audit", db)
            #expect {
                _ = try Self.write(gate) { _ -> WriteGate.Prepared<String> in throw ApiError(.validationFailed, "bad answers") }
            } throws: { ($0 as? ApiError)?.code == .validationFailed }
            #expect {
                _ = try Self.write(gate) { read in .write(Self.survey("s1", in: read)) }
            } throws: { ($0 as? ApiError)?.code == .subscriptionExpired }
            let answered = try Self.write(gate) { _ in WriteGate.Prepared<String>.answered("stored") }
            guard case .replayed("stored") = answered else { Issue.record("expected the answer, got \(answered)"); return }
            #expect(try Self.count("surveys", db) == 0)
            #expect(try Self.count("audit", db) == audits)
        }
    }

    /// A read sent early in one job and never asked for is not the answer a later job on the same
    /// connection gets: that one reads the row as it is now.
    @Test func anEarlyReadNobodyAskedForNeverAnswersTheNextTransaction() throws {
        try Self.withDatabase { db, gate in
            let before: Int64 = try db.writer.submit { conn in
                let end = try conn.subscriptionEnd(orgId: "org_1") ?? -1
                conn.prefetchSubscriptionEnd(orgId: "org_1")
                _ = try conn.query("SELECT 1 AS one")  // sends the early read with it; its answer is kept
                return end
            }
            let later = before + 1000
            _ = try db.securityWrite(orgId: "org_1", actor: "t") { tx in try tx.setSubscription(orgId: "org_1", expiresAt: later) }
            let seen: Int64 = try db.writer.submit { try $0.subscriptionEnd(orgId: "org_1") ?? -1 }
            #expect(seen == later)
        }
    }
}
