import Foundation
import Synchronization
import Testing
@testable import SurveyStorage

/// The libpq connection against a real throwaway PostgreSQL 15 cluster (`scripts/pg_cluster.sh`),
/// and the two database behaviours the engine rests on: insert-or-read for exactly-once, and
/// the subscription gate's locks across processes.
@Suite struct PostgresConnectionTests {
    /// A cluster for one test: started before `body`, stopped after it.
    static func withCluster(_ body: (String) throws -> Void) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("scripts/pg_cluster.sh").path
        let dir = "/tmp/surveyd-pg-" + UUID().uuidString.prefix(8)
        // No TCP: the cluster listens only on a Unix socket in its own directory, and the port
        // only names that socket file, so clusters of tests running at once never collide.
        let port = 5432
        let urlFile = dir + ".url"
        guard shell("\"\(script)\" start \(dir) \(port) > \(urlFile)") == 0 else {
            throw PostgresError(sqlState: "", message: "the cluster did not start", sql: nil)
        }
        defer { _ = shell("\"\(script)\" stop \(dir)"); try? FileManager.default.removeItem(atPath: urlFile) }
        try body((try String(contentsOfFile: urlFile, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// `sh -c command` through posix_spawn and waitpid. Not Foundation's Process: the server the
    /// script starts outlives it and keeps the descriptor Process watches, so Process would wait
    /// for the cluster to stop.
    static func shell(_ command: String) -> Int32 {
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(command), nil]
        defer { for a in argv { free(a) } }
        guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    @Test func everyValueKindRoundTripsAndPlaceholdersSkipLiterals() throws {
        try Self.withCluster { url in
            let c = try PostgresConnection(url: url)
            try c.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, data BYTEA, score DOUBLE PRECISION, note TEXT)")
            let bytes: [UInt8] = [0, 1, 0x7F, 0x80, 0xFF, 10, 13]
            try c.run("INSERT INTO t(id, name, data, score, note) VALUES (?, ?, ?, ?, ?)",
                      [.int(9_007_199_254_740_993), .text("Wanjiru 'Kamau' ? ünïcode"), .blob(bytes), .double(2.5), .null])
            #expect(c.changes == 1)
            let row = try #require(try c.query("SELECT id, name, data, score, note FROM t WHERE id = ?", [.int(9_007_199_254_740_993)]).first)
            #expect(try row.int("id") == 9_007_199_254_740_993)
            #expect(try row.string("name") == "Wanjiru 'Kamau' ? ünïcode")
            #expect(try row.blob("data") == bytes)
            #expect(try row.value("score") == .double(2.5))
            #expect(try row.value("note") == .null)
            // A `?` inside a literal is text, not a parameter.
            let q = try #require(try c.query("SELECT '?' AS mark, ? AS given", [.text("x")]).first)
            #expect(try q.string("mark") == "?" && q.string("given") == "x")
            try c.run("UPDATE t SET score = score + 1 WHERE id > ?", [.int(-1)])
            #expect(c.changes == 1)
        }
    }

    /// Statements held back by `enqueue` go with the next awaited one, in one round trip; an error
    /// among them is thrown there, skips what follows it, and leaves the connection usable (a
    /// statement whose PREPARE was skipped is prepared again on its next use).
    @Test func enqueuedStatementsShareARoundTripAndReportTheirErrorWhereAwaited() throws {
        try Self.withCluster { url in
            let c = try PostgresConnection(url: url)
            try c.execute("CREATE TABLE k (id TEXT PRIMARY KEY, n BIGINT)")
            try c.run("INSERT INTO k VALUES (?, ?)", [.text("warm"), .int(0)])
            try c.run("BEGIN")
            try c.run("SAVEPOINT job")
            try c.run("COMMIT")
            let before = c.roundTrips
            c.enqueue("BEGIN")
            c.enqueue("SAVEPOINT job")
            c.enqueue("INSERT INTO k VALUES (?, ?)", [.text("a"), .int(1)])
            let seen = try c.query("SELECT COUNT(*) AS n FROM k WHERE id = ?", [.text("a")])
            #expect(try seen.first?.int("n") == 1)
            #expect(c.changes == 1)
            try c.run("COMMIT")
            // BEGIN, SAVEPOINT, INSERT (and its PREPARE) and the SELECT (and its PREPARE): one
            // pipeline; then the COMMIT.
            #expect(c.roundTrips - before == 2)

            c.enqueue("BEGIN")
            c.enqueue("INSERT INTO k VALUES (?, ?)", [.text("a"), .int(2)])  // taken
            c.enqueue("INSERT INTO k VALUES (?, ?) -- never prepared before", [.text("b"), .int(3)])
            #expect { try c.flush() } throws: { ($0 as? PostgresError)?.isUniqueViolation == true }
            try c.execute("ROLLBACK")
            #expect(try c.query("SELECT COUNT(*) AS n FROM k WHERE id = ?", [.text("b")]).first?.int("n") == 0)
            // The statement whose PREPARE the error skipped works on its next use.
            try c.run("INSERT INTO k VALUES (?, ?) -- never prepared before", [.text("b"), .int(3)])
            #expect(try c.query("SELECT n FROM k WHERE id = ?", [.text("b")]).first?.int("n") == 3)

            // `execute` sends what is held back first, and runs its own SQL even after an error.
            c.enqueue("BEGIN")
            c.enqueue("INSERT INTO k VALUES (?, ?)", [.text("a"), .int(4)])
            #expect { try c.execute("ROLLBACK") } throws: { ($0 as? PostgresError)?.isUniqueViolation == true }
            #expect(try c.query("SELECT n FROM k WHERE id = ?", [.text("a")]).first?.int("n") == 1)
        }
    }

    /// A job's end (`finishJob`) on a connection whose job owns its transaction: the held-back
    /// INSERTs and the COMMIT in one round trip; after an error among them the COMMIT is skipped
    /// and the transaction stays open, to be rolled back to its savepoint and committed.
    @Test func aJobCommitsWithItsHeldBackStatementsUnlessOneFails() throws {
        try Self.withCluster { url in
            let c = try PostgresConnection(url: url)
            try c.execute("CREATE TABLE k (id TEXT PRIMARY KEY)")
            for id in ["warm", "a", "b"] {
                c.jobOwnsTransaction = true
                c.enqueue("BEGIN")
                c.enqueue("SAVEPOINT job")
                #expect(try c.query("SELECT COUNT(*) AS n FROM k WHERE id = ?", [.text(id)]).first?.int("n") == 0)
                let before = c.roundTrips
                c.enqueue("INSERT INTO k VALUES (?)", [.text(id)])
                try c.finishJob()
                if id != "warm" { #expect(c.roundTrips - before == 1) }
                #expect(!c.inTransaction)
                c.jobOwnsTransaction = false
            }
            c.jobOwnsTransaction = true
            c.enqueue("BEGIN")
            c.enqueue("SAVEPOINT job")
            c.enqueue("INSERT INTO k VALUES (?)", [.text("c")])
            c.enqueue("INSERT INTO k VALUES (?)", [.text("a")])  // taken
            #expect { try c.finishJob() } throws: { ($0 as? PostgresError)?.isUniqueViolation == true }
            #expect(c.inTransaction)
            try c.execute("ROLLBACK TO SAVEPOINT job")
            try c.run("COMMIT")
            c.jobOwnsTransaction = false
            #expect(try c.query("SELECT COUNT(*) AS n FROM k").first?.int("n") == 3)
        }
    }

    /// A prefetched read goes with the next awaited statement and answers the later `query` of
    /// the same statement (same text, same arguments) without another round trip; an answer
    /// nobody asked for is dropped at the transaction's end.
    @Test func aPrefetchedReadAnswersItsLaterQueryWithoutARoundTrip() throws {
        try Self.withCluster { url in
            let c = try PostgresConnection(url: url), other = try PostgresConnection(url: url)
            try c.execute("CREATE TABLE k (id TEXT PRIMARY KEY, n BIGINT)")
            try c.run("INSERT INTO k VALUES (?, ?), (?, ?)", [.text("a"), .int(1), .text("b"), .int(2)])
            let byId = "SELECT n FROM k WHERE id = ?"
            for _ in 0..<2 {  // the second time, every statement is prepared
                c.enqueue("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                c.prefetch(byId, [.text("a")])
                c.prefetch(byId, [.text("b")])
                c.prefetch(byId, [.text("never asked")])
                let before = c.roundTrips
                #expect(try c.query("SELECT COUNT(*) AS n FROM k").first?.int("n") == 2)
                let afterFirst = c.roundTrips
                try other.run("UPDATE k SET n = n + 10")  // committed after the snapshot: not seen
                #expect(try c.query(byId, [.text("b")]).first?.int("n") == 2)
                #expect(try c.query(byId, [.text("a")]).first?.int("n") == 1)
                #expect(c.roundTrips == afterFirst)
                #expect(afterFirst - before >= 1)
                c.sendUnawaited("COMMIT")
                try other.run("UPDATE k SET n = n - 10")
            }
            // Nothing kept past the transaction: a new read asks again and sees the rows as they are.
            try other.run("UPDATE k SET n = 5 WHERE id = ?", [.text("never asked")])
            #expect(try c.query(byId, [.text("a")]).first?.int("n") == 1)
            let before = c.roundTrips
            _ = try c.query(byId, [.text("never asked")])
            #expect(c.roundTrips == before + 1)
        }
    }

    /// A read's COMMIT is not waited for, yet the server runs it at once: another connection sees
    /// no transaction left open, and the next statement reads the answer first.
    @Test func anUnawaitedCommitEndsTheTransactionAtOnce() throws {
        try Self.withCluster { url in
            let c = try PostgresConnection(url: url), other = try PostgresConnection(url: url)
            try c.execute("CREATE TABLE k (id TEXT PRIMARY KEY)")
            let pid = try #require(try c.query("SELECT pg_backend_pid() AS pid").first?.int("pid"))
            for round in 0..<3 {
                c.enqueue("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                #expect(try c.query("SELECT COUNT(*) AS n FROM k").first?.int("n") == Int64(round))
                c.sendUnawaited("COMMIT")
                var state = ""
                for _ in 0..<200 {
                    state = try other.query("SELECT state FROM pg_stat_activity WHERE pid = ?", [.int(pid)]).first?.string("state") ?? ""
                    if state == "idle" { break }
                    usleep(5_000)
                }
                #expect(state == "idle")
                try other.run("INSERT INTO k VALUES (?)", [.text("r\(round)")])
            }
            #expect(try c.query("SELECT COUNT(*) AS n FROM k").first?.int("n") == 3)
        }
    }

    /// On a freshly migrated database (no statistics yet) the replay check's generic plan, the one
    /// a connection keeps after its fifth execution, looks the row up by both columns of the
    /// UNIQUE index — not by org_id alone, which reads every response of the organization.
    @Test func theReplayCheckFindsItsRowByTheUniqueIndexOnAFreshDatabase() throws {
        try Self.withCluster { url in
            let c = try PostgresConnection(url: url)
            try Migrations.run(on: c)
            let check = "SELECT response_id FROM responses WHERE org_id = ? AND client_submission_id = ?"
            for _ in 0..<6 { _ = try c.query(check, [.text("org"), .text("csid")]) }
            try c.execute("PREPARE replay_check(text, text) AS SELECT response_id FROM responses WHERE org_id = $1 AND client_submission_id = $2")
            for _ in 0..<6 { try c.execute("EXECUTE replay_check('org', 'csid')") }
            let plan = try c.query("EXPLAIN EXECUTE replay_check('org', 'csid')").map { try $0.string("QUERY PLAN") }.joined(separator: "\n")
            #expect(plan.contains("responses_client_submission") && plan.contains("client_submission_id = $2") && !plan.contains("Filter"), "\(plan)")
        }
    }

    /// Binary results: a bytea arrives as its bytes; integers, text and NULL read as in text format.
    @Test func binaryResultsReadLikeTextResults() throws {
        try Self.withCluster { url in
            let c = try PostgresConnection(url: url)
            try c.execute("CREATE TABLE b (n BIGINT, i INTEGER, s SMALLINT, t TEXT, bytes BYTEA, nothing BYTEA)")
            let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            try c.run("INSERT INTO b VALUES (?, ?, ?, ?, ?, ?)", [.int(-5_000_000_000), .int(-7), .int(3), .text("ünï"), .blob(bytes), .null])
            let row = try #require(try c.queryBinary("SELECT n, i, s, t, bytes, nothing FROM b").first)
            #expect(try row.int("n") == -5_000_000_000)
            #expect(try row.int("i") == -7)
            #expect(try row.int("s") == 3)
            #expect(try row.string("t") == "ünï")
            #expect(try row.blob("bytes") == bytes)
            #expect(try row.value("nothing") == .null)
            #expect(try c.query("SELECT bytes FROM b").first?.blob("bytes") == bytes)
        }
    }

    @Test func aTakenKeyIsAUniqueViolationAndABadServerIsConnectionLost() throws {
        try Self.withCluster { url in
            let c = try PostgresConnection(url: url)
            try c.execute("CREATE TABLE k (org TEXT, client_id TEXT, PRIMARY KEY (org, client_id))")
            try c.run("INSERT INTO k VALUES (?, ?)", [.text("o"), .text("a")])
            #expect {
                try c.run("INSERT INTO k VALUES (?, ?)", [.text("o"), .text("a")])
            } throws: { ($0 as? PostgresError)?.isUniqueViolation == true }
        }
        do {
            _ = try PostgresConnection(url: "postgresql:///postgres?host=/nonexistent&port=1&connect_timeout=2")
            Issue.record("connected to nothing")
        } catch {
            #expect(error.isConnectionLost)
        }
    }

    /// Exactly-once across processes: two writers insert the same client id at once; the second
    /// one's insert waits for the first one's commit, inserts nothing, and reads the first one's row.
    @Test func insertOrReadWaitsForTheOtherWriterAndReadsItsRow() throws {
        try Self.withCluster { url in
            let a = try PostgresConnection(url: url), b = try PostgresConnection(url: url)
            try a.execute("CREATE TABLE responses (org TEXT, client_id TEXT, response_id TEXT, PRIMARY KEY (org, client_id))")
            let insert = "INSERT INTO responses VALUES (?, ?, ?) ON CONFLICT (org, client_id) DO NOTHING RETURNING response_id"
            try a.execute("BEGIN")
            #expect(try a.query(insert, [.text("o"), .text("c-1"), .text("rsp_A")]).first?.string("response_id") == "rsp_A")
            let answered = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var bAnswer: String?
            nonisolated(unsafe) var bInserted = true
            Thread {
                try? b.execute("BEGIN")
                bInserted = (try? b.query(insert, [.text("o"), .text("c-1"), .text("rsp_B")]))?.isEmpty == false
                bAnswer = try? b.query("SELECT response_id FROM responses WHERE org = ? AND client_id = ?", [.text("o"), .text("c-1")]).first?.string("response_id")
                try? b.execute("COMMIT")
                answered.signal()
            }.start()
            // B waits on A's uncommitted row.
            #expect(answered.wait(timeout: .now() + 0.5) == .timedOut)
            try a.execute("COMMIT")
            #expect(answered.wait(timeout: .now() + 10) == .success)
            #expect(!bInserted)
            #expect(bAnswer == "rsp_A")
            #expect(try a.query("SELECT COUNT(*) AS n FROM responses").first?.int("n") == 1)
        }
    }

    /// The gate across processes: a write reads the subscription `FOR SHARE` in its transaction,
    /// so a renewal or an expiry waits for the write to finish and never interleaves with it.
    @Test func aSharedSubscriptionReadMakesARenewalWait() throws {
        try Self.withCluster { url in
            let writer = try PostgresConnection(url: url), operatorSide = try PostgresConnection(url: url)
            try Self.createOrg(writer)
            try writer.execute("BEGIN")
            #expect(try writer.subscriptionEnd(orgId: "o") == 100)
            let renewed = DispatchSemaphore(value: 0)
            Thread {
                try? Self.renew(operatorSide, to: 200)
                renewed.signal()
            }.start()
            #expect(renewed.wait(timeout: .now() + 0.5) == .timedOut)
            try writer.execute("COMMIT")
            #expect(renewed.wait(timeout: .now() + 10) == .success)
            #expect(try writer.subscriptionEnd(orgId: "o") == 200)
        }
    }

    /// A renewal that waits for the writes holding the subscription is not starved by writes that
    /// keep coming: a later write queues behind it, then reads the renewed end. (Row share locks
    /// alone let the later write join the held ones at once and read the old end.)
    @Test func aWaitingRenewalIsNotOvertakenByALaterWrite() throws {
        try Self.withCluster { url in
            let first = try PostgresConnection(url: url), later = try PostgresConnection(url: url)
            let operatorSide = try PostgresConnection(url: url), observer = try PostgresConnection(url: url)
            try Self.createOrg(first)
            try first.execute("BEGIN")
            #expect(try first.subscriptionEnd(orgId: "o") == 100)
            let renewed = DispatchSemaphore(value: 0), laterRead = DispatchSemaphore(value: 0)
            let laterEnd = Mutex<Int64?>(nil)
            Thread {
                try? Self.renew(operatorSide, to: 200)
                renewed.signal()
            }.start()
            #expect(try Self.waitForWaiters(observer, 1))
            Thread {
                try? later.execute("BEGIN")
                let end = try? later.subscriptionEnd(orgId: "o")
                laterEnd.withLock { $0 = end ?? nil }
                laterRead.signal()
                try? later.execute("COMMIT")
            }.start()
            #expect(try Self.waitForWaiters(observer, 2), "the later write did not queue behind the renewal")
            try first.execute("COMMIT")
            #expect(renewed.wait(timeout: .now() + 10) == .success)
            #expect(laterRead.wait(timeout: .now() + 10) == .success)
            #expect(laterEnd.withLock { $0 } == 200)
        }
    }

    /// Every backend of the pools ends while the pools are idle (PostgreSQL restarted, or the
    /// network path to it was cut): the next write and the next read fail on their first
    /// statement, before the server acted on anything, and run again on a new connection — the
    /// database is there, so they succeed instead of answering 1040. A write that got further
    /// than that is not run again (its COMMIT may have happened).
    @Test func aPooledConnectionThatDiedWhileIdleIsOpenedAgainForTheNextWriteAndRead() throws {
        try Self.withCluster { url in
            let db = try Self.database(url)
            defer { db.close() }
            #expect(db.isWritable())
            #expect(try db.read { try $0.org("o") } == nil)
            let admin = try PostgresConnection(url: url)
            let ended = try admin.query("""
                SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
                WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND datname = current_database()
                """)
            #expect(ended.count == 2)  // the writer's and the reader's
            // pg_terminate_backend signals; wait until both have gone.
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, try admin.query("""
                SELECT 1 FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'
                AND datname = current_database()
                """).count > 0 { usleep(20_000) }
            #expect(db.isWritable(), "a write after the backends ended answered as if the database were unreachable")
            #expect(throws: Never.self) { try db.read { try $0.org("o") } }

            // A job that had the server's answers before the connection broke is not run again.
            let runs = Mutex(0)
            #expect(throws: PostgresError.self) {
                try db.writer.submit { conn in
                    runs.withLock { $0 += 1 }
                    _ = try conn.query("SELECT pg_terminate_backend(pg_backend_pid())")
                }
            }
            #expect(runs.withLock { $0 } == 1)
        }
    }

    /// The store on the cluster at `url`, with one write connection and one reader.
    static func database(_ url: String) throws -> Database {
        var config = Database.Configuration(path: "/nonexistent/surveyd.sqlite", readers: 1)
        config.databaseURL = url
        config.writers = 1
        return try Database(config)
    }

    static func createOrg(_ conn: PostgresConnection) throws {
        try conn.execute("CREATE TABLE orgs (org_id TEXT PRIMARY KEY, expires_at BIGINT NOT NULL)")
        try conn.run("INSERT INTO orgs VALUES (?, ?)", [.text("o"), .int(100)])
    }

    /// A change of the subscription as `setSubscription` makes it: hold the organization, update.
    static func renew(_ conn: PostgresConnection, to expiresAt: Int64) throws {
        try conn.execute("BEGIN")
        try conn.holdOrganization("o")
        try conn.run("UPDATE orgs SET expires_at = ? WHERE org_id = ?", [.int(expiresAt), .text("o")])
        try conn.execute("COMMIT")
    }

    /// True once `count` lock requests wait (ungranted) in the cluster; false after 10 s.
    static func waitForWaiters(_ observer: PostgresConnection, _ count: Int64) throws -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if try observer.query("SELECT COUNT(*) AS n FROM pg_locks WHERE NOT granted").first?.int("n") == count { return true }
            usleep(5_000)
        }
        return false
    }
}
