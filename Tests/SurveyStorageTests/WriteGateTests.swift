import Foundation
import Synchronization
import Testing
@testable import SurveyStorage
import SurveyDomain

/// The gate's own order inside the transaction: replay, then subscription, then the write with
/// its audit entry — all or nothing.
@Suite struct WriteGateTests {
    func setUp(expiresIn: Int64) throws -> (TempDir, Database, WriteGate) {
        let dir = TempDir()
        let db = try Database(.init(path: dir.db))
        _ = try db.securityWrite(orgId: "org_1", actor: "t") { tx in
            try tx.createOrg(orgId: "org_1", name: "A", expiresAt: Timestamp.nowMillis() + expiresIn)
        }
        return (dir, db, WriteGate(database: db))
    }

    func surveys(_ db: Database) throws -> Int64 {
        try db.writer.submit { try $0.query("SELECT COUNT(*) AS n FROM surveys").first?.int("n") ?? -1 }
    }
    func audits(_ db: Database) throws -> Int64 {
        try db.writer.submit { try $0.query("SELECT COUNT(*) AS n FROM audit").first?.int("n") ?? -1 }
    }

    @Test func expiredSubscriptionRefusesWithNothingWritten() throws {
        let (dir, db, gate) = try setUp(expiresIn: -1000)
        defer { db.close(); _ = dir }
        let audits = try audits(db)
        #expect {
            _ = try gate.write(orgId: "org_1", actor: "u") { tx in
                try tx.createSurvey(surveyId: "s1", title: "T", reviewRequired: false, createdBy: "u")
            }
        } throws: { ($0 as? ApiError)?.code == .subscriptionExpired }
        #expect(try surveys(db) == 0)
        #expect(try self.audits(db) == audits)
    }

    @Test func replayIsAnsweredBeforeTheSubscriptionCheck() throws {
        let (dir, db, gate) = try setUp(expiresIn: -1000)
        defer { db.close(); _ = dir }
        let outcome = try gate.write(orgId: "org_1", actor: "u", replay: { _ in "stored answer" }) { _ in "written" }
        guard case .replayed(let s) = outcome else { Issue.record("expected a replay"); return }
        #expect(s == "stored answer")
    }

    /// `.onConflict`: the replay is not looked for before the write; when the write's UNIQUE key is
    /// taken, everything the write did is rolled back and the stored answer returned.
    @Test func onConflictTheWriteIsUndoneAndTheStoredAnswerReturned() throws {
        let (dir, db, gate) = try setUp(expiresIn: 60_000)
        defer { db.close(); _ = dir }
        _ = try gate.write(orgId: "org_1", actor: "u") { tx in
            try tx.createSurvey(surveyId: "s1", title: "T", reviewRequired: false, createdBy: "u")
        }
        let audits = try audits(db)
        // A successful write never consults the replay.
        let fresh = try gate.write(orgId: "org_1", actor: "u", replay: { _ in "stored" }, replayCheck: .onConflict) { tx in
            _ = try tx.createSurvey(surveyId: "s2", title: "T", reviewRequired: false, createdBy: "u")
            return "written"
        }
        guard case .written = fresh else { Issue.record("expected a write, got \(fresh)"); return }
        // s3 is written first, then s1 collides: s3 and its audit entry are taken back.
        let outcome = try gate.write(orgId: "org_1", actor: "u", replay: { db in
            try db.conn.query("SELECT title FROM surveys WHERE survey_id = 's1'").first.map { "stored " + (try $0.string("title")) }
        }, replayCheck: .onConflict) { tx in
            _ = try tx.createSurvey(surveyId: "s3", title: "T", reviewRequired: false, createdBy: "u")
            _ = try tx.createSurvey(surveyId: "s1", title: "again", reviewRequired: false, createdBy: "u")
            return "written"
        }
        guard case .replayed(let s) = outcome else { Issue.record("expected a replay, got \(outcome)"); return }
        #expect(s == "stored T")
        #expect(try surveys(db) == 2)
        #expect(try self.audits(db) == audits + 1)
        // A collision with nothing to replay is the write's own error, and nothing is written.
        #expect(throws: SQLiteError.self) {
            _ = try gate.write(orgId: "org_1", actor: "u", replay: { _ in nil as String? }, replayCheck: .onConflict) { tx in
                _ = try tx.createSurvey(surveyId: "s4", title: "T", reviewRequired: false, createdBy: "u")
                _ = try tx.createSurvey(surveyId: "s1", title: "again", reviewRequired: false, createdBy: "u")
                return "written"
            }
        }
        #expect(try surveys(db) == 2)
        #expect(try self.audits(db) == audits + 1)
    }

    /// `.onConflict` still answers a replay, not 1001, while the subscription has expired.
    @Test func onConflictAReplayIsAnsweredWhileExpired() throws {
        let (dir, db, gate) = try setUp(expiresIn: -1000)
        defer { db.close(); _ = dir }
        let outcome = try gate.write(orgId: "org_1", actor: "u", replay: { _ in "stored answer" }, replayCheck: .onConflict) { _ in "written" }
        guard case .replayed(let s) = outcome else { Issue.record("expected a replay"); return }
        #expect(s == "stored answer")
    }

    @Test func activeSubscriptionWritesRowAndAuditTogether() throws {
        let (dir, db, gate) = try setUp(expiresIn: 60_000)
        defer { db.close(); _ = dir }
        let audits = try audits(db)
        let outcome = try gate.write(orgId: "org_1", actor: "u") { tx in
            try tx.createSurvey(surveyId: "s1", title: "T", reviewRequired: false, createdBy: "u")
        }
        guard case .written = outcome else { Issue.record("expected a write"); return }
        #expect(try surveys(db) == 1)
        #expect(try self.audits(db) == audits + 1)
    }

    @Test func aWriteWithoutAuditIsRolledBack() throws {
        let (dir, db, gate) = try setUp(expiresIn: 60_000)
        defer { db.close(); _ = dir }
        #expect {
            _ = try gate.write(orgId: "org_1", actor: "u") { tx in
                try tx.context.conn.run("INSERT INTO surveys(survey_id, org_id, title, review_required, created_by, created_at) VALUES ('s2','org_1','T',0,'u',0)")
            }
        } throws: { ($0 as? ApiError)?.code == .internalError }
        #expect(try surveys(db) == 0)
    }

    /// Holds the writer on a job of its own until the returned closure is called; jobs
    /// submitted meanwhile queue behind it, and the writer takes them all into its next group.
    func holdWriter(_ db: Database) throws -> @Sendable () -> Void {
        let started = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        db.writer.submitAsync({ _, _ in started.signal(); gate.wait() }, then: { (_: Result<Void, any Error>) in })
        try #require(started.wait(timeout: .now() + 10) == .success, "the writer never started the holding job")
        return { gate.signal() }
    }

    /// Waits (up to 10 s) until `n` jobs wait for the writer.
    func waitForQueue(_ db: Database, _ n: Int) throws {
        let deadline = Date().addingTimeInterval(10)
        while db.writer.queuedJobs < n && Date() < deadline { usleep(2_000) }
        try #require(db.writer.queuedJobs >= n, "the writer's queue reached \(db.writer.queuedJobs), not \(n)")
    }

    /// The gate decides inside the write's transaction, by server time then: a write whose
    /// subscription was active when it was checked before queueing, and ended while it waited
    /// for the writer, is refused with 1001 and writes nothing.
    @Test func aSubscriptionThatEndsWhileTheWriteWaitsForTheWriterRefusesIt() throws {
        let dir = TempDir()
        let clock = ManualClock()
        var configuration = Database.Configuration(path: dir.db)
        configuration.clock = clock
        let db = try Database(configuration)
        defer { db.close(); _ = dir }
        let expiresAt = clock.nowMillis() + 60_000
        _ = try db.securityWrite(orgId: "org_1", actor: "t") { tx in
            try tx.createOrg(orgId: "org_1", name: "A", expiresAt: expiresAt)
        }
        let refusals = Mutex(0)
        let gate = WriteGate(database: db, onRefusal: { refusals.withLock { $0 += 1 } })
        let audits = try audits(db)

        let release = try holdWriter(db)
        let answered = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<WriteGate.Outcome<String>, any Error>?>(nil)
        // Checked now (active), then queued behind the held writer.
        gate.writeAsync(orgId: "org_1", actor: "u", { tx in
            try tx.createSurvey(surveyId: "s1", title: "T", reviewRequired: false, createdBy: "u")
            return "written"
        }, then: { result in
            outcome.withLock { $0 = result }
            answered.signal()
        })
        #expect(refusals.withLock { $0 } == 0, "not refused before queueing")
        clock.advance(byMillis: 61_000)
        release()
        try #require(answered.wait(timeout: .now() + 10) == .success)
        switch outcome.withLock({ $0 }) {
        case .failure(let error as ApiError)?:
            #expect(error.code == .subscriptionExpired)
            #expect(error.extra["expiresAt"] == .string(Timestamp.format(expiresAt)))
        default:
            Issue.record("not refused: \(String(describing: outcome.withLock { $0 }))")
        }
        #expect(refusals.withLock { $0 } == 1, "the refusal is counted once")
        #expect(try surveys(db) == 0)
        #expect(try self.audits(db) == audits)
    }

    @Test func aFailingJobRollsBackAloneInsideItsGroup() throws {
        let (dir, db, gate) = try setUp(expiresIn: 60_000)
        defer { db.close(); _ = dir }
        // 40 jobs queue behind a held writer, so all of them run in its next group; every third
        // one throws after writing.
        let release = try holdWriter(db)
        let outcomes = Mutex<[Int: Result<Int, any Error>]>([:])
        let done = DispatchGroup()
        for i in 0..<40 {
            done.enter()
            Thread.detachNewThread {
                let outcome = Result { () throws -> Int in
                    let written = try gate.write(orgId: "org_1", actor: "u") { tx in
                        _ = try tx.createSurvey(surveyId: "s\(i)", title: "T", reviewRequired: false, createdBy: "u")
                        if i % 3 == 0 { throw ApiError(.validationFailed) }
                        return i
                    }
                    guard case .written(let v) = written else { return -1 }
                    return v
                }
                outcomes.withLock { $0[i] = outcome }
                done.leave()
            }
        }
        try waitForQueue(db, 40)
        let before = db.writerStats
        release()
        #expect(done.wait(timeout: .now() + 30) == .success)
        // One COMMIT for the holding job and the 40: they shared it.
        let after = db.writerStats
        #expect(after.commits - before.commits == 1)
        #expect(after.jobs - before.jobs == 41)
        let all = outcomes.withLock { $0 }
        for i in 0..<40 {
            switch all[i] {
            case .success(let v)?: #expect(i % 3 != 0 && v == i, "job \(i) succeeded")
            case .failure(let e)?: #expect(i % 3 == 0 && (e as? ApiError)?.code == .validationFailed, "job \(i): \(e)")
            case nil: Issue.record("job \(i) was never answered")
            }
        }
        #expect(try surveys(db) == Int64((0..<40).filter { $0 % 3 != 0 }.count))
        let orphanAudits = try db.writer.submit {
            try $0.query("SELECT COUNT(*) AS n FROM audit WHERE action = 'survey.create' AND target_id NOT IN (SELECT survey_id FROM surveys)").first?.int("n") ?? -1
        }
        #expect(orphanAudits == 0)
    }

    /// When the savepoint machinery itself fails (a failing disk; here a job that releases its
    /// own savepoint, so that taking its work back fails), the whole group is rolled back: every
    /// job of the group is answered with the error and its file-system steps are undone, and
    /// the writer goes on with the next group.
    @Test func aFailedSavepointRollsBackAndUndoesTheWholeGroup() throws {
        let (dir, db, _) = try setUp(expiresIn: 60_000)
        defer { db.close(); _ = dir }
        let release = try holdWriter(db)
        let undone = Mutex<Set<String>>([])
        let outcomes = Mutex<[String: Result<Void, any Error>]>([:])
        let answered = DispatchGroup()
        func job(_ name: String, _ body: @escaping (any SQLConnection) throws -> Void) {
            answered.enter()
            db.writer.submitAsync({ conn, undo in
                undo.add { undone.withLock { _ = $0.insert(name) } }
                try conn.run("INSERT INTO orgs(org_id, name, expires_at, created_at) VALUES (?, ?, 0, 0)", [.text("org_" + name), .text(name)])
                try body(conn)
            }, then: { (outcome: Result<Void, any Error>) in
                outcomes.withLock { $0[name] = outcome }
                answered.leave()
            })
        }
        job("before") { _ in }
        job("breaker") { conn in
            try conn.execute("RELEASE job")
            throw ApiError(.validationFailed)
        }
        job("after") { _ in }
        try waitForQueue(db, 3)
        release()
        #expect(answered.wait(timeout: .now() + 30) == .success)
        let all = outcomes.withLock { $0 }
        #expect(all.count == 3)
        for name in ["before", "breaker", "after"] {
            guard case .failure? = all[name] else { Issue.record("\(name) was answered \(String(describing: all[name]))"); continue }
        }
        // The two jobs that ran had their file-system steps undone; the one after never ran.
        #expect(undone.withLock { $0 } == ["before", "breaker"])
        let kept = try db.writer.submit { try $0.query("SELECT COUNT(*) AS n FROM orgs WHERE org_id IN ('org_before', 'org_breaker', 'org_after')").first?.int("n") ?? -1 }
        #expect(kept == 0)
        // The writer goes on with the next group.
        try db.writer.submit { try $0.run("INSERT INTO orgs(org_id, name, expires_at, created_at) VALUES ('org_next', 'next', 0, 0)") }
        #expect(try db.writer.submit { try $0.query("SELECT COUNT(*) AS n FROM orgs WHERE org_id = 'org_next'").first?.int("n") } == 1)
    }
}

@Suite struct WriteGateReadPathTests {
    /// While expired, refusals and replays come from a reader: they work even with the writer
    /// stopped, which shows they never wait for the write lock.
    @Test func expiredRefusalsAndReplaysNeverTouchTheWriter() throws {
        let dir = TempDir()
        let db = try Database(.init(path: dir.db))
        _ = try db.securityWrite(orgId: "org_1", actor: "t") { tx in try tx.createOrg(orgId: "org_1", name: "A", expiresAt: 1) }
        let gate = WriteGate(database: db)
        db.close()  // the writer is gone: anything that needs it answers 1040
        #expect {
            _ = try gate.write(orgId: "org_1", actor: "u") { tx in try tx.createSurvey(surveyId: "s", title: "T", reviewRequired: false, createdBy: "u") }
        } throws: { ($0 as? ApiError)?.code == .subscriptionExpired }
        let replay = try gate.write(orgId: "org_1", actor: "u", replay: { _ in 42 }) { _ in 0 }
        guard case .replayed(42) = replay else { Issue.record("expected the replay"); return }
    }
}
