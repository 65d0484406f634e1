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

    // MARK: the next write's opening, sent after the COMMIT of the one before it

    /// Writes queued behind a busy write connection: each announces a count of the surveys in
    /// its opening and reads it in `prepare`, then creates survey `ids[k]` (`nil` in `fail`: the
    /// body throws a unique violation by creating a survey twice). Returns each write's result in
    /// order, the count each read, and the connection's round trips counted at each `prepare`.
    /// `hold: false`: no job holds the connection first (a single write then runs alone).
    static func queuedWrites(_ gate: WriteGate, _ db: Database, ids: [String], duplicates: Set<String> = [], onConflict: Bool = false,
                             hold: Bool = true, before: [Int: @Sendable (GatedTransaction) throws -> Void] = [:])
        -> (results: [Result<WriteGate.Outcome<String>, any Error>], counts: [Int64], roundTrips: [Int]) {
        let release = DispatchSemaphore(value: 0), busy = DispatchSemaphore(value: 0)
        if hold {
            db.writer.submitAsync({ _, _ in busy.signal(); release.wait() }, then: { _ in })
            busy.wait()
        }
        let results = Mutex<[Int: Result<WriteGate.Outcome<String>, any Error>]>([:])
        let counts = Mutex<[Int: Int64]>([:]), trips = Mutex<[Int: Int]>([:])
        let done = DispatchGroup()
        let countSQL = "SELECT COUNT(*) AS n FROM surveys"
        for (k, id) in ids.enumerated() {
            done.enter()
            gate.writeAsync(orgId: "org_1", opening: { read in read.conn.prefetch(countSQL, []) }, prepare: { read in
                trips.withLock { $0[k] = (read.conn as? PostgresConnection)?.roundTrips ?? -1 }
                let n = try read.conn.query(countSQL, []).first?.int("n") ?? -1
                counts.withLock { $0[k] = n }
                let readIn = try Self.transactionId(read)
                let twice = duplicates.contains(id), first = before[k]
                return .write(WriteGate.PreparedWrite(actor: "u", organization: nil, replay: { _ in onConflict ? "replayed \(id)" : nil },
                                                      replayCheck: onConflict ? .onConflict : .beforeWrite) { tx in
                    // Its reads and its write are one transaction, whichever way it was opened.
                    guard try Self.transactionId(tx.read) == readIn else { throw ApiError(.internalError, "read and write in two transactions") }
                    try first?(tx)
                    _ = try tx.createSurvey(surveyId: id, title: "T", reviewRequired: false, createdBy: "u")
                    if twice { _ = try tx.createSurvey(surveyId: id, title: "T", reviewRequired: false, createdBy: "u") }
                    return id
                })
            }, then: { result in
                results.withLock { $0[k] = result }
                done.leave()
            })
        }
        release.signal()
        done.wait()
        return (ids.indices.map { k in results.withLock { $0[k]! } }, ids.indices.map { k in counts.withLock { $0[k]! } },
                ids.indices.map { k in trips.withLock { $0[k]! } })
    }

    /// Under load a write's BEGIN and first reads go after the COMMIT of the write before it on the
    /// same connection: one round trip fewer per write than when each waits for its own, and each
    /// one's reads still see every write committed before it.
    @Test func aQueuedWriteBeginsInTheRoundTripOfTheCommitBeforeIt() throws {
        try Self.withDatabase { db, gate in
            // One at a time: nothing is queued behind a write, so each opens on its own.
            var alone: [Int] = []
            for k in 0..<4 {
                let run = Self.queuedWrites(gate, db, ids: ["alone\(k)"], hold: false)
                #expect(run.counts == [Int64(k)])
                alone.append(run.roundTrips[0])
            }
            let perWriteAlone = alone[3] - alone[2]
            let queued = Self.queuedWrites(gate, db, ids: (0..<12).map { "queued\($0)" })
            for (k, r) in queued.results.enumerated() {
                guard case .success(.written("queued\(k)")) = r else { Issue.record("write \(k): \(r)"); continue }
            }
            #expect(queued.counts == (0..<12).map { Int64(4 + $0) }, "a write's early read missed a write committed before it")
            let perWrite = zip(queued.roundTrips.dropFirst(), queued.roundTrips).map { $0 - $1 }
            #expect(perWrite.dropFirst().allSatisfy { $0 == perWriteAlone - 1 }, "round trips per write: \(perWrite), alone \(perWriteAlone)")
            let surveys = try Self.count("surveys", db)
            #expect(surveys == 16)
        }
    }

    /// A write that fails after the next one's opening went (its insert broke a unique key, so its
    /// transaction was aborted and the opening with it) leaves nothing behind, and the next write
    /// opens on its own and commits; so does one whose conflict the gate answers with the stored
    /// row.
    @Test func aWriteThatFailsBeforeAQueuedOneLeavesItToOpenOnItsOwn() throws {
        try Self.withDatabase { db, gate in
            let failed = Self.queuedWrites(gate, db, ids: ["a", "b", "c"], duplicates: ["b"])
            guard case .success(.written("a")) = failed.results[0], case .success(.written("c")) = failed.results[2] else {
                Issue.record("\(failed.results)"); return
            }
            #expect((try? failed.results[1].get()) == nil)
            #expect(failed.counts == [0, 1, 1])
            let replayed = Self.queuedWrites(gate, db, ids: ["d", "e", "f"], duplicates: ["e"], onConflict: true)
            guard case .success(.written("d")) = replayed.results[0], case .success(.replayed("replayed e")) = replayed.results[1],
                  case .success(.written("f")) = replayed.results[2] else { Issue.record("\(replayed.results)"); return }
            #expect(replayed.counts == [2, 3, 3])
            #expect(try db.read { try $0.conn.query("SELECT survey_id FROM surveys ORDER BY survey_id").map { try $0.string("survey_id") } } == ["a", "c", "d", "f"])
            // Nothing is left open: a renewal goes through at once.
            _ = try db.securityWrite(orgId: "org_1", actor: "t") { tx in
                try tx.setSubscription(orgId: "org_1", expiresAt: Timestamp.nowMillis() + 7_200_000)
            }
        }
    }

    /// A write whose COMMIT itself fails (a deferred unique key), after which the next write's
    /// opening has already begun a transaction: that transaction is ended, nothing of the failed
    /// write stays, and the next write opens on its own and commits.
    @Test func aWriteWhoseCommitFailsLeavesTheNextToOpenOnItsOwn() throws {
        try Self.withDatabase { db, gate in
            try db.writer.submit { conn in try conn.execute("CREATE TABLE once (x INT UNIQUE DEFERRABLE INITIALLY DEFERRED)") }
            let run = Self.queuedWrites(gate, db, ids: ["a", "b", "c"], before: [1: { tx in
                try tx.context.conn.run("INSERT INTO once VALUES (1), (1)", [])
            }])
            guard case .success(.written("a")) = run.results[0], case .success(.written("c")) = run.results[2] else {
                Issue.record("\(run.results)"); return
            }
            #expect {
                _ = try run.results[1].get()
            } throws: { ($0 as? PostgresError)?.isUniqueViolation == true }
            #expect(run.counts == [0, 1, 1])
            #expect(try db.read { try $0.conn.query("SELECT survey_id FROM surveys ORDER BY survey_id").map { try $0.string("survey_id") } } == ["a", "c"])
            let rows = try db.read { try $0.conn.query("SELECT COUNT(*) AS n FROM once").first?.int("n") }
            #expect(rows == 0)
            _ = try db.securityWrite(orgId: "org_1", actor: "t") { tx in
                try tx.setSubscription(orgId: "org_1", expiresAt: Timestamp.nowMillis() + 7_200_000)
            }
        }
    }
}
