import Foundation
import Synchronization
import Testing
import SurveyDomain
@testable import SurveyStorage

/// Three `surveyd` processes on three ports sharing one PostgreSQL database, as behind a load
/// balancer: the promises that one process keeps with its single writer must hold across them.
/// PostgreSQL only (SQLite is one process by design).
@Suite(.serialized, .enabled(if: TestEngine.isPostgres, "several processes need PostgreSQL"))
struct MultiProcessTests {
    /// Three servers on one database, an organization with an admin, a collector and a reviewer,
    /// and a survey whose responses wait for review.
    final class Cluster: @unchecked Sendable {
        // @unchecked: set up in init, then read (the processes are only killed by the test thread).
        let servers: [ServerProcess]
        let orgId, operatorToken, adminToken, collectorToken, reviewerToken, versionId, contentHash: String
        /// The seed's survey, whose `video` question takes large files.
        let mediaVersionId: String

        init(extra: [String] = []) throws {
            let first = ServerProcess()
            let big = ["--max-file-bytes", String(2 << 30)] + extra  // the gibibyte test
            try first.start(extra: big)
            let url = try #require(try TestEngine.database(for: first.dataDir))
            let others = try (0..<2).map { _ in
                let s = ServerProcess()
                try TestEngine.share(url, with: s.dataDir)
                try s.start(extra: big)
                return s
            }
            servers = [first] + others
            let seed = try first.seed()
            orgId = seed.orgId
            operatorToken = seed.operatorToken
            adminToken = seed.adminToken
            collectorToken = seed.collectorToken
            mediaVersionId = seed.versionId
            let c = first.client
            let reviewer = try c.post("/v1/orgs/\(orgId)/users", token: adminToken, ["name": "R", "roles": ["reviewer"]])
            reviewerToken = try #require(reviewer.json?["token"]?.stringValue, "\(reviewer.text)")
            let survey = try c.post("/v1/orgs/\(orgId)/surveys", token: adminToken, ["title": "Wells", "reviewRequired": true])
            let surveyId = try #require(survey.json?["surveyId"]?.stringValue, "\(survey.text)")
            let v = try c.post("/v1/orgs/\(orgId)/surveys/\(surveyId)/versions", token: adminToken,
                               ["definition": ["title": "Wells", "questions": [["id": "n", "type": "integer", "label": "N"]]]])
            versionId = try #require(v.json?["surveyVersionId"]?.stringValue, "\(v.text)")
            contentHash = try #require(v.json?["contentHash"]?.stringValue)
        }

        func client(_ i: Int) -> RawHTTPClient { servers[i % servers.count].client }

        func submission(_ id: String, _ n: Int = 1) -> JSONValue {
            ["clientSubmissionId": .string(id), "surveyVersionId": .string(versionId), "contentHash": .string(contentHash), "answers": ["n": .number(Double(n))]]
        }

        func submit(_ i: Int, _ id: String) -> Reply? {
            try? client(i).post("/v1/orgs/\(orgId)/responses", token: collectorToken, submission(id))
        }

        func count(_ sql: String, _ args: [SQLValue] = []) throws -> Int64 {
            try TestEngine.rows(dataDir: servers[0].dataDir, sql, args).first?.int("n") ?? -1
        }

        func setExpiry(_ millis: Int64) throws -> Reply {
            try servers[0].client.request("PUT", "/v1/orgs/\(orgId)/subscription", token: operatorToken,
                                          json: ["expiresAt": .string(Timestamp.format(millis))])
        }
    }

    /// Runs `body(i)` for i in 0..<n on `threads` threads at once; the answers by i.
    static func parallel(_ n: Int, threads: Int = 48, _ body: @escaping @Sendable (Int) -> Reply?) -> [Reply?] {
        let results = Mutex([Reply?](repeating: nil, count: n))
        let next = Atomic(0)
        let group = DispatchGroup()
        for _ in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                while true {
                    let i = next.add(1, ordering: .relaxed).oldValue
                    guard i < n else { break }
                    let r = body(i)
                    results.withLock { $0[i] = r }
                }
                group.leave()
            }
        }
        group.wait()
        return results.withLock { $0 }
    }

    @Test func aThousandSubmissionsOfAHundredIdsMakeAHundredRowsWithOneReceiptEach() throws {
        let c = try Cluster()
        // A client follows the changes feed through the third process while the writes land in
        // all three: a cursor moved past an entry committed late would never see it.
        let done = Atomic(false)
        let followed = Mutex<[String]>([])
        let follower = DispatchGroup()
        follower.enter()
        Thread.detachNewThread {
            var cursor: String?
            func page() -> Bool {
                guard let r = try? c.client(2).get("/v1/orgs/\(c.orgId)/changes?limit=500" + (cursor.map { "&after=\($0)" } ?? ""), token: c.reviewerToken),
                      let items = r.json?["items"]?.arrayValue, let last = items.last?["cursor"]?.stringValue else { return false }
                followed.withLock { $0 += items.compactMap { $0["id"]?.stringValue } }
                cursor = last
                return true
            }
            while !done.load(ordering: .relaxed) { if !page() { usleep(2_000) } }
            while page() {}
            follower.leave()
        }
        let replies = Self.parallel(1_000) { i in c.submit(i, "multi-sub-\(i % 100)") }
        done.store(true, ordering: .relaxed)
        follower.wait()
        #expect(replies.allSatisfy { $0?.status == 201 || $0?.status == 200 }, "\(replies.compactMap { $0 }.filter { $0.status >= 300 }.prefix(3).map(\.text))")
        #expect(try c.count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id LIKE 'multi-sub-%'") == 100)
        #expect(try c.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'response.accept'") == 100)
        // Every answer for one id is the same receipt: one 201, the rest replays of it.
        for id in 0..<100 {
            let answers = stride(from: id, to: 1_000, by: 100).compactMap { replies[$0] }
            #expect(answers.count == 10)
            #expect(Set(answers.map { $0.json?["responseId"]?.stringValue ?? "?" }).count == 1)
            #expect(Set(answers.map { CanonicalJSON.string($0.json ?? .null) }).count == 1, "id multi-sub-\(id)")
            #expect(answers.filter { $0.status == 201 }.count == 1, "id mp-\(id): \(answers.map(\.status))")
        }
        // The follower saw every acceptance, each once.
        let seen = followed.withLock { $0 }
        #expect(seen.count == 100 && Set(seen).count == 100, "followed \(seen.count) entries, \(Set(seen).count) distinct")
    }

    /// `--database-writers` bounds each process's write connections: three processes with two
    /// each hold far fewer than three with the default eight, and still accept every submission.
    @Test func threeProcessesWithTwoWritersEachAcceptEverySubmissionOnFewConnections() throws {
        let c = try Cluster(extra: ["--database-writers", "2"])
        let replies = Self.parallel(300) { i in c.submit(i, "two-writers-\(i)") }
        #expect(replies.allSatisfy { $0?.status == 201 }, "\(replies.compactMap { $0 }.filter { $0.status != 201 }.prefix(3).map(\.text))")
        #expect(try c.count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id LIKE 'two-writers-%'") == 300)
        // Per process: 2 writers, at most 4 readers and 1 for webhooks; the default's writers
        // alone would be 24.
        let held = try c.count("SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        #expect(held >= 6 && held <= 21, "connections held on the database: \(held)")
    }

    @Test func twoHundredKeyedReviewRequestsRunEachActionOnce() throws {
        let c = try Cluster()
        var responseIds: [String] = []
        for i in 0..<20 {
            let r = try #require(c.submit(i, "keyed-sub-\(i)"))
            responseIds.append(try #require(r.json?["responseId"]?.stringValue, "\(r.text)"))
        }
        let ids = responseIds
        // 20 responses, each asked to start review 10 times with one key, through all three processes.
        let replies = Self.parallel(200) { i in
            let target = i % 20
            return try? c.client(i / 20).post("/v1/orgs/\(c.orgId)/responses/\(ids[target])/review", token: c.reviewerToken,
                                              ["action": "startReview", "expectedRevision": 1], headers: ["Idempotency-Key": "mp-review-key-\(target)"])
        }
        #expect(replies.allSatisfy { $0?.status == 200 }, "\(replies.compactMap { $0 }.filter { $0.status != 200 }.prefix(3).map(\.text))")
        for target in 0..<20 {
            let answers = stride(from: target, to: 200, by: 20).compactMap { replies[$0] }
            #expect(Set(answers.map(\.body)).count == 1)
            #expect(answers.filter { $0.header("idempotent-replayed") == "true" }.count == 9)
        }
        #expect(try c.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'review.startReview'") == 20)
        #expect(try c.count("SELECT COUNT(*) AS n FROM responses WHERE revision = 2") == 20)
        #expect(try c.count("SELECT COUNT(*) AS n FROM idempotency_keys WHERE idempotency_key LIKE 'mp-review-key-%'") == 20)
    }

    @Test func anExpiryRacingABurstLetsNoWriteCommitAfterIt() throws {
        let c = try Cluster()
        let expiredAt = Mutex<Int64?>(nil)
        // The expiry must not wait for the burst to end: writes that keep coming may not starve it.
        let startedAfterExpiry = Atomic(0)
        let replies = Self.parallel(600, threads: 24) { i in
            if i == 300 {
                // Midway, the operator ends the subscription now (an expiry is a renewal to the past).
                let at = Timestamp.nowMillis()
                let r = try? c.setExpiry(at)
                expiredAt.withLock { $0 = at }
                return r
            }
            if expiredAt.withLock({ $0 }) != nil { startedAfterExpiry.add(1, ordering: .relaxed) }
            return c.submit(i, "race-sub-\(i)")
        }
        let at = try #require(expiredAt.withLock { $0 })
        print("expiry racing a burst: \(startedAfterExpiry.load(ordering: .relaxed)) of 299 later submissions started after it answered")
        #expect(replies[300]?.status == 200)
        let accepted = (0..<600).filter { $0 != 300 && replies[$0]?.status == 201 }
        let refused = (0..<600).filter { $0 != 300 && replies[$0]?.status != 201 }
        #expect(refused.allSatisfy { replies[$0]?.json?["errorCode"]?.intValue == 1001 }, "\(refused.prefix(3).map { replies[$0]?.text ?? "no answer" })")
        #expect(!accepted.isEmpty && !refused.isEmpty, "\(startedAfterExpiry.load(ordering: .relaxed)) submissions started after the expiry answered")
        #expect(startedAfterExpiry.load(ordering: .relaxed) >= 100)
        // Every acknowledged write is there, and none committed after the expiry did (commit
        // times: the test cluster runs with track_commit_timestamp). A write that was already
        // through the gate when the expiry came may be stamped after `at`: it holds the
        // organization row, so the expiry waited for its commit.
        #expect(try c.count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id LIKE 'race-sub-%'") == Int64(accepted.count))
        #expect(try c.count("""
            SELECT COUNT(*) AS n FROM responses r, orgs o WHERE o.org_id = ? AND r.client_submission_id LIKE 'race-sub-%'
              AND pg_xact_commit_timestamp(r.xmin) > pg_xact_commit_timestamp(o.xmin)
            """, [.text(c.orgId)]) == 0)
        #expect(try c.count("SELECT COUNT(*) AS n FROM orgs WHERE org_id = ? AND expires_at = ?", [.text(c.orgId), .int(at)]) == 1)
        // Renewed: each refused request, sent again unchanged, is accepted exactly once.
        #expect(try c.setExpiry(Timestamp.nowMillis() + 86_400_000).status == 200)
        let again = Self.parallel(refused.count) { k in c.submit(k, "race-sub-\(refused[k])") }
        #expect(again.allSatisfy { $0?.status == 201 })
        #expect(try c.count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id LIKE 'race-sub-%'") == 599)
    }

    @Test func killingOneProcessMidLoadLosesNoAcknowledgedWrite() throws {
        let c = try Cluster()
        let killed = Atomic(false)
        let replies = Self.parallel(900, threads: 24) { i in
            if i == 300, !killed.exchange(true, ordering: .relaxed) { c.servers[2].kill9() }
            return c.submit(i, "kill-sub-\(i)")
        }
        let acknowledged = (0..<900).filter { replies[$0]?.status == 201 }
        // The two survivors answered everything sent to them.
        let survivors = (0..<900).filter { $0 % 3 != 2 }
        #expect(survivors.allSatisfy { replies[$0]?.status == 201 }, "\(survivors.compactMap { replies[$0] }.filter { $0.status != 201 }.prefix(3).map(\.text))")
        #expect(acknowledged.count >= survivors.count)
        let stored = Set(try TestEngine.rows(dataDir: c.servers[0].dataDir, "SELECT client_submission_id FROM responses WHERE client_submission_id LIKE 'kill-sub-%'", [])
            .map { try $0.string("client_submission_id") })
        #expect(acknowledged.allSatisfy { stored.contains("kill-sub-\($0)") })
        // What the killed process never answered is sent again to a survivor: accepted once.
        let unanswered = (0..<900).filter { replies[$0]?.status != 201 }
        let again = Self.parallel(unanswered.count) { k in try? c.client(k % 2).post("/v1/orgs/\(c.orgId)/responses", token: c.collectorToken, c.submission("kill-sub-\(unanswered[k])")) }
        #expect(again.allSatisfy { $0?.status == 201 || $0?.status == 200 })
        #expect(try c.count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id LIKE 'kill-sub-%'") == 900)
        let check = try ServerProcess.command(["check", "--data-dir", c.servers[0].dataDir] + TestEngine.urlArguments(dataDir: c.servers[0].dataDir))
        #expect(check.status == 0, "\(check.stdout)")
    }

    /// A gibibyte uploaded through one process is read back, byte for byte, through
    /// another; neither process holds it in memory.
    @Test func aGibibyteUploadedThroughOneProcessIsReadBackThroughAnother() throws {
        let c = try Cluster()
        let total = 1 << 30
        let before = (c.servers[0].memoryKB("VmRSS"), c.servers[1].memoryKB("VmRSS"))
        let up = try ProcessTests.streamUpload(c.servers[0].client, path: "/v1/orgs/\(c.orgId)/uploads/gib-shared-0001", token: c.collectorToken,
                                               versionId: c.mediaVersionId, total: total)
        var patience = timeval(tv_sec: 300, tv_usec: 0)
        setsockopt(up, SOL_SOCKET, SO_RCVTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))
        let stored = try RawHTTPClient.readReply(up)
        close(up)
        #expect(stored.status == 201, "\(stored.text)")
        let sha = try #require(stored.json?["sha256"]?.stringValue)

        // Read back through the second process, hashing as the bytes arrive.
        let fd = try c.servers[1].client.connect()
        defer { close(fd) }
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))
        RawHTTPClient.sendAll(fd, Array("GET /v1/orgs/\(c.orgId)/uploads/gib-shared-0001/content HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(c.reviewerToken)\r\nConnection: close\r\n\r\n".utf8))
        var head: [UInt8] = [], digest = Digest(.sha256), received = 0, pastHead = false
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            if pastHead {
                buffer.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                received += n
                continue
            }
            head += buffer[0..<n]
            if let split = head.indices.dropLast(3).first(where: { head[$0] == 13 && head[$0 + 1] == 10 && head[$0 + 2] == 13 && head[$0 + 3] == 10 }) {
                let body = Array(head[(split + 4)...])
                head = Array(head[..<split])
                digest.update(body)
                received += body.count
                pastHead = true
            }
        }
        let status = String(decoding: head.prefix(12), as: UTF8.self)
        #expect(status.hasPrefix("HTTP/1.1 200"), "\(status)")
        #expect(received == total)
        #expect(Hex.encode(digest.finalize()) == sha)
        let peaks = (c.servers[0].memoryKB("VmHWM"), c.servers[1].memoryKB("VmHWM"))
        print("1 GiB through two processes: RSS before \(before), peak \(peaks) kB")
        #expect(peaks.0 < 150 * 1024 && peaks.1 < 150 * 1024)
    }

    /// One process delivers webhooks at a time (a lease): every event reaches the receiver, in the
    /// audit log's order, even when a process is killed mid-stream — whichever one it was.
    @Test func webhookEventsArriveOnceEachInOrderWhileAProcessDies() throws {
        let receiver = try WebhookReceiver()
        let c = try Cluster(extra: ["--webhooks-allow-private"])
        let hook = try c.client(1).post("/v1/orgs/\(c.orgId)/webhooks", token: c.adminToken,
                                        ["url": .string(receiver.url()), "events": ["response.accepted"]])
        #expect(hook.status == 201, "\(hook.text)")
        let killed = Atomic(false)
        let replies = Self.parallel(300, threads: 12) { i in
            if i == 150, !killed.exchange(true, ordering: .relaxed) { c.servers[0].kill9() }
            return c.submit(i % 2 == 0 ? 1 : 2, "hooked-\(i)")  // the survivors take the submissions
        }
        #expect(replies.allSatisfy { $0?.status == 201 })
        #expect(receiver.wait(seconds: 60) { Set($0.filter { $0.status == 200 }.map(\.id)).count >= 300 })
        // Anything sent twice is sent before the process holding the deliveries next finds
        // nothing to send (two more idle looks: the second began after this point).
        let survivors = [c.servers[1], c.servers[2]]
        let idleBefore = try survivors.map { try WebhookCrashTests.idleLooks($0, operatorToken: c.operatorToken) }
        let idleDeadline = Date(timeIntervalSinceNow: 10)
        var idle = false
        while !idle && Date() < idleDeadline {
            idle = try zip(survivors, idleBefore).contains { try WebhookCrashTests.idleLooks($0, operatorToken: c.operatorToken) >= $1 + 2 }
            if !idle { usleep(20_000) }
        }
        #expect(idle)
        let delivered = receiver.calls.filter { $0.status == 200 }
        // Each event once (an attempt cut off by the kill may be repeated with its own id).
        #expect(Set(delivered.map(\.id)).count == 300)
        // Only one process sends: at most the one attempt the killed process had in flight comes twice.
        #expect(delivered.count <= 301, "\(delivered.count) deliveries of 300 events")
        var firstSeen: [String] = []
        var seen = Set<String>()
        for call in delivered where seen.insert(call.id).inserted {
            firstSeen.append(call.json?["data"]?["responseId"]?.stringValue ?? "?")
        }
        let logOrder = try TestEngine.rows(dataDir: c.servers[1].dataDir,
                                           "SELECT target_id FROM audit WHERE action = 'response.accept' ORDER BY seq", []).map { try $0.string("target_id") }
        #expect(firstSeen == logOrder)
    }

    /// `--max-keyed-in-flight` counts a caller's keyed requests in every process: with a limit of
    /// 3, two requests held in one process and two in another make one 1030, and the refused one,
    /// sent again once the others are done, is applied.
    @Test func theKeyedInFlightLimitCountsEveryProcess() throws {
        let c = try Cluster(extra: ["--max-keyed-in-flight", "3"])
        let lock = try TestEngine.WriteLock(dataDir: c.servers[0].dataDir)
        var released = false
        defer { if !released { lock.release() } }
        // Four at once, two to each process; the writes wait on the lock, their claims held.
        let answered = Mutex<[Int: Reply]>([:])
        let group = DispatchGroup()
        for i in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                let r = try? c.client(i % 2).post("/v1/orgs/\(c.orgId)/surveys", token: c.adminToken, ["title": .string("Held \(i)")],
                                                  headers: ["Idempotency-Key": "held-key-000\(i)"])
                answered.withLock { $0[i] = r }
                group.leave()
            }
        }
        // Three claims held while the fourth request is already answered: then the writes go.
        let deadline = Date(timeIntervalSinceNow: 20)
        func settled() -> Bool { answered.withLock { $0.count } == 1 && (try? c.count("SELECT COUNT(*) AS n FROM keyed_in_flight")) == 3 }
        while !settled() && Date() < deadline { usleep(10_000) }
        #expect(settled(), "answered \(answered.withLock { $0.keys.sorted() }) before the writes were let go")
        lock.release()
        released = true
        #expect(group.wait(timeout: .now() + 30) == .success)
        let replies = (0..<4).map { i in answered.withLock { $0[i] } }
        #expect(replies.filter { $0?.status == 201 }.count == 3, "\(replies.map { $0?.status ?? 0 })")
        let refused = try #require(replies.firstIndex { $0?.json?["errorCode"]?.intValue == 1030 })
        #expect(replies[refused]?.header("retry-after") != nil)
        let again = try c.client(2).post("/v1/orgs/\(c.orgId)/surveys", token: c.adminToken, ["title": .string("Held \(refused)")],
                                         headers: ["Idempotency-Key": "held-key-000\(refused)"])
        #expect(again.status == 201, "\(again.text)")
        #expect(try c.count("SELECT COUNT(*) AS n FROM surveys WHERE title LIKE 'Held %'") == 4)
        #expect(try c.count("SELECT COUNT(*) AS n FROM keyed_in_flight") == 0)
    }

    /// Sign-in attempts are counted in the database: wrong passwords for one account spread over
    /// three processes, even sent at once, get ten checks in all, not ten in each process.
    @Test func signInThrottlingCountsAcrossProcesses() throws {
        let c = try Cluster()
        let body = Array("email=nobody%40example.org&password=guess+guess+guess".utf8)
        let headers = ["Content-Type": "application/x-www-form-urlencoded"]
        let statuses = Mutex<[Int]>([])
        atOnce(30) { i in
            let s = (try? c.client(i).request("POST", "/console/sign-in", body: body, headers: headers))?.status ?? -1
            statuses.withLock { $0.append(s) }
        }
        var checked = statuses.withLock { $0 }.filter { $0 == 401 }.count
        var i = 0
        while checked <= 10, try c.client(i).request("POST", "/console/sign-in", body: body, headers: headers).status == 401 {
            checked += 1
            i += 1
        }
        #expect(checked == 10, "\(checked) checks; the burst answered \(statuses.withLock { $0 })")
        #expect(try c.count("SELECT COUNT(*) AS n FROM sign_in_attempts WHERE key = 'account:nobody@example.org'") == 10)
    }
}
