import Foundation
import Synchronization
import Testing
import SurveyDomain
import SurveyServer
@testable import SurveyStorage

/// PostgreSQL stops (as a crash would) while collectors keep submitting: every request
/// in between gets a retryable 503 / 1040 with Retry-After, `/readyz` says not ready, nothing is
/// half-written, and once the database is back the server serves again by itself — and every
/// refused request, sent again, is accepted exactly once.
@Suite(.serialized, .enabled(if: TestEngine.isPostgres, "a PostgreSQL server to stop"))
struct DatabaseOutageTests {
    static let script = ServerProcess.packageRoot.appendingPathComponent("scripts/pg_cluster.sh").path

    /// `sh -c command` through posix_spawn and waitpid (Foundation's Process would wait for the
    /// database server the script starts, which keeps the descriptor Process watches).
    static func shell(_ command: String) -> Int32 {
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(command), nil]
        defer { for a in argv { free(a) } }
        guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }

    @Test func whileTheDatabaseIsDownEveryWriteIs503ThenFullService() throws {
        let dir = NSTemporaryDirectory() + "surveyd-outage-" + UUID().uuidString
        // No TCP: the cluster listens only on a Unix socket in its own directory, and the port
        // only names that socket file, so it can never be taken by another process.
        let port = 5432
        #expect(Self.shell("\"\(Self.script)\" start \(dir) \(port) > \(dir).url") == 0)
        defer { _ = Self.shell("\"\(Self.script)\" stop \(dir)"); try? FileManager.default.removeItem(atPath: dir + ".url") }
        let url = try String(contentsOfFile: dir + ".url", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let dataDir = NSTemporaryDirectory() + "surveyd-outage-data-" + UUID().uuidString
        try TestEngine.share(url, with: dataDir)
        let f = try Fixture(server: try TestServer(dataDir: dataDir))
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let v = try f.publishSurvey()

        struct Outcome { let id: String; let status: Int; let retryAfter: String?; let code: Int? }
        let outcomes = Mutex<[Outcome]>([])
        let stop = Atomic(false), counter = Atomic(0)
        let group = DispatchGroup()
        for _ in 0..<8 {
            group.enter()
            Thread.detachNewThread {
                while !stop.load(ordering: .relaxed) {
                    let id = "outage-\(counter.add(1, ordering: .relaxed).oldValue)"
                    let body: JSONValue = ["clientSubmissionId": .string(id), "surveyVersionId": .string(v.versionId),
                                           "contentHash": .string(v.contentHash), "answers": ["size": 3]]
                    guard let r = try? f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, body) else { continue }
                    outcomes.withLock { $0.append(Outcome(id: id, status: r.status, retryAfter: r.header("retry-after"), code: r.json?["errorCode"]?.intValue)) }
                    if r.status != 201 { usleep(50_000) }
                }
                group.leave()
            }
        }
        /// Waits, polling, until `condition` holds; false when `seconds` pass first.
        func within(_ seconds: Double, _ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while !condition() { guard Date() < deadline else { return false }; usleep(20_000) }
            return true
        }
        // The load is flowing and accepted.
        #expect(within(10) { outcomes.withLock { $0.filter { $0.status == 201 }.count } >= 20 })
        #expect(try f.client.get("/readyz").status == 200)
        #expect(Self.shell("\"\(Self.script)\" down \(dir)") == 0)
        let downAt = outcomes.withLock { $0.count }
        // The server says so, and keeps refusing while the database stays down.
        #expect(within(10) { (try? f.client.get("/readyz"))?.status == 503 })
        #expect(within(20) { outcomes.withLock { $0[downAt...].filter { $0.status != 201 }.count } > 20 })
        let duringDown = outcomes.withLock { Array($0[downAt...]) }
        #expect(Self.shell("\"\(Self.script)\" up \(dir) \(port)") == 0)
        #expect(within(10) { (try? f.client.get("/readyz"))?.status == 200 }, "not ready 10 s after the database came back")
        // Full service again: every pooled connection replaced, twenty requests in a row accepted.
        let upAt = outcomes.withLock { $0.count }
        #expect(within(20) { outcomes.withLock { $0.count >= upAt + 20 && $0.suffix(20).allSatisfy { $0.status == 201 } } })
        stop.store(true, ordering: .relaxed)
        group.wait()

        let all = outcomes.withLock { $0 }
        let refused = duringDown.filter { $0.status != 201 }
        #expect(refused.count > 20, "requests refused while down: \(refused.count)")
        #expect(refused.allSatisfy { $0.status == 503 && $0.code == 1040 && $0.retryAfter != nil },
                "\(refused.filter { $0.status != 503 || $0.code != 1040 || $0.retryAfter == nil }.prefix(3).map { "\($0.status) \($0.code ?? 0)" })")
        // Full service once it is back: the last requests were accepted.
        #expect(all.suffix(20).allSatisfy { $0.status == 201 })
        // Nothing partial: every acknowledged response is there with its audit entry, and no
        // response exists without one.
        let stored = Set(try f.server.rows("SELECT client_submission_id FROM responses").map { try $0.string("client_submission_id") })
        #expect(all.filter { $0.status == 201 }.allSatisfy { stored.contains($0.id) })
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses r WHERE NOT EXISTS (SELECT 1 FROM audit a WHERE a.target_id = r.response_id AND a.action = 'response.accept')") == 0)
        // Each refused request, sent again unchanged, is accepted once (or answered as the
        // replay of a commit whose answer the outage swallowed).
        for o in all where o.status != 201 {
            let body: JSONValue = ["clientSubmissionId": .string(o.id), "surveyVersionId": .string(v.versionId),
                                   "contentHash": .string(v.contentHash), "answers": ["size": 3]]
            let again = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, body)
            #expect(again.status == 201 || again.status == 200, "\(again.text)")
        }
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses") == Int64(Set(all.map(\.id)).count))
    }
}
