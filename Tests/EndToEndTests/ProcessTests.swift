import Foundation
import Synchronization
import Testing
import SurveyDomain
import TestProcesses
@testable import SurveyStorage

/// What only a real process shows: kill -9 mid-upload, graceful shutdown, memory while streaming.
@Suite(.serialized) struct ProcessTests {
    /// Streams `total` bytes of a JPEG-looking body in 1 MiB pieces without holding them.
    static func streamUpload(_ client: RawHTTPClient, path: String, token: String, versionId: String, total: Int, stopAfter: Int? = nil) throws -> Int32 {
        let fd = try client.connect()
        let head = "PUT \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: image/jpeg\r\n" +
            "Survey-Version-Id: \(versionId)\r\nQuestion-Id: video\r\nContent-Length: \(total)\r\n\r\n"
        RawHTTPClient.sendAll(fd, Array(head.utf8))
        var chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
        chunk[0] = 0xFF; chunk[1] = 0xD8; chunk[2] = 0xFF; chunk[3] = 0xE0
        var sent = 0
        while sent < total {
            let n = min(chunk.count, total - sent)
            if !RawHTTPClient.sendAll(fd, Array(chunk[0..<n])) { break }
            if sent == 0 { chunk[0] = 0x5A; chunk[1] = 0x5A; chunk[2] = 0x5A; chunk[3] = 0x5A }
            sent += n
            if let stop = stopAfter, sent >= stop { return fd }
        }
        return fd
    }

    @Test func kill9MidUploadLeavesNoRowAndNoTempFile() throws {
        let server = ServerProcess()
        try server.start()
        let seed = try server.seed()
        let fd = try Self.streamUpload(server.client, path: "/v1/orgs/\(seed.orgId)/uploads/killed-0001", token: seed.collectorToken,
                                       versionId: seed.versionId, total: 50 << 20, stopAfter: 8 << 20)
        // The server is mid-body: a temp file exists.
        let tmp = server.dataDir + "/tmp"
        let deadline = Date().addingTimeInterval(5)
        while ((try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []).isEmpty && Date() < deadline { usleep(10_000) }
        #expect(!((try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []).isEmpty)
        server.kill9()
        close(fd)
        try server.start()
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []).isEmpty)
        let conn = try TestEngine.Reader(dataDir: server.dataDir)
        #expect(try conn.query("SELECT COUNT(*) AS n FROM uploads").first?.int("n") == 0)
        #expect(ServerProcess.regularFiles(under: server.dataDir + "/blobs").isEmpty)
        // The same upload afterwards succeeds.
        let ok = try server.client.request("PUT", "/v1/orgs/\(seed.orgId)/uploads/killed-0001", token: seed.collectorToken,
                                           body: Files.jpeg(10_000), headers: ["Content-Type": "image/jpeg", "Survey-Version-Id": seed.versionId, "Question-Id": "video"])
        #expect(ok.status == 201)
    }

    @Test func sigtermAnswersInFlightRequestsAndExitsZero() throws {
        let server = ServerProcess()
        try server.start()
        let seed = try server.seed()
        // An upload in flight when SIGTERM arrives is still answered once its body is complete.
        let total = 20 << 20
        let fd = try Self.streamUpload(server.client, path: "/v1/orgs/\(seed.orgId)/uploads/inflight-0001", token: seed.collectorToken,
                                       versionId: seed.versionId, total: total, stopAfter: 10 << 20)
        let p = server.process!
        p.send(SIGTERM)
        usleep(100_000)
        var rest = [UInt8](repeating: 0x5A, count: 1 << 20)
        for _ in 0..<10 { RawHTTPClient.sendAll(fd, rest); rest[0] = 0x5A }
        let reply = try RawHTTPClient.readReply(fd)
        close(fd)
        let ended = p.waitUntilExit()
        #expect(reply.status == 201, "\(reply.text)")
        #expect(ended == .exited(0), "\(ended); stderr: \(server.stderrText.suffix(4000))")
        let conn = try TestEngine.Reader(dataDir: server.dataDir)
        #expect(try conn.query("SELECT COUNT(*) AS n FROM uploads").first?.int("n") == 1)
    }

    /// Submissions wait for their group commit with their connection suspended (no thread held).
    /// SIGTERM in the middle of a burst of them: every request already begun is answered, every
    /// 201 is stored, nothing is stored that was not answered, and the process exits 0.
    @Test func sigtermDuringASubmissionBurstAnswersEverySuspendedRequest() throws {
        let server = ServerProcess()
        try server.start()
        let seed = try server.seed()
        let accepted = Mutex<[String: String]>([:])  // clientSubmissionId -> responseId
        let stop = Atomic<Bool>(false)
        let group = DispatchGroup()
        for t in 0..<16 {
            DispatchQueue.global().async(group: group) {
                var i = 0
                while !stop.load(ordering: .relaxed) {
                    i += 1
                    let csid = "burst-\(t)-\(i)-0000"
                    let body: JSONValue = ["clientSubmissionId": .string(csid), "surveyVersionId": .string(seed.versionId),
                                           "contentHash": .string(seed.contentHash), "answers": ["n": .number(Double(i))]]
                    // After the listening socket closes, connecting fails: that request never began.
                    guard let r = try? server.client.post("/v1/orgs/\(seed.orgId)/responses", token: seed.collectorToken, body) else { return }
                    if r.status == 201, let id = r.json?["responseId"]?.stringValue { accepted.withLock { $0[csid] = id } }
                }
            }
        }
        // Let the burst run, then stop the server in the middle of it.
        let deadline = Date().addingTimeInterval(60)
        while accepted.withLock({ $0.count }) < 200 && Date() < deadline { usleep(5_000) }
        guard accepted.withLock({ $0.count }) >= 200, let p = server.process else {
            stop.store(true, ordering: .relaxed)
            group.wait()
            Issue.record("the burst got \(accepted.withLock { $0.count }) answers in 60 s; stderr: \(server.stderrText.suffix(4000))")
            return
        }
        p.send(SIGTERM)
        let ended = p.waitUntilExit()
        stop.store(true, ordering: .relaxed)
        group.wait()
        #expect(ended == .exited(0), "\(ended); stderr: \(server.stderrText.suffix(4000))")
        let answered = accepted.withLock { $0 }
        let conn = try TestEngine.Reader(dataDir: server.dataDir)
        let stored = Dictionary(uniqueKeysWithValues: try conn.query(
            "SELECT client_submission_id, response_id FROM responses WHERE client_submission_id LIKE 'burst-%'").map { (try $0.string("client_submission_id"), try $0.string("response_id")) })
        #expect(answered.count >= 200)
        #expect(stored == answered, "stored \(stored.count), answered 201 \(answered.count)")
    }

    /// RFC 9112: a client may half-close its side once the request is sent and still expects the
    /// answer. Both a submission (which waits for its group commit) and another write get it, in
    /// both HTTP models (the polling one parks these requests; libmicrohttpd closes a parked
    /// connection whose FIN it reads on resume, and the server then sends the answer itself).
    @Test(arguments: [[], ["--http-threads", "0"]])
    func aClientThatHalfClosesAfterItsRequestStillGetsTheAnswer(_ model: [String]) throws {
        let server = ServerProcess()
        try server.start(extra: model)
        let seed = try server.seed()
        @Sendable func halfClosed(_ method: String, _ path: String, token: String, _ json: JSONValue) throws -> Reply {
            let body = CanonicalJSON.encode(json)
            let head = "\(method) \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n" +
                "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
            let fd = try server.client.connect()
            defer { close(fd) }
            RawHTTPClient.sendAll(fd, Array(head.utf8) + body)
            shutdown(fd, Int32(SHUT_WR))
            return try RawHTTPClient.readReply(fd)
        }
        // Concurrent, so that answers wait for commits while other requests come and go.
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 40) { i in
            let submitted = try? halfClosed("POST", "/v1/orgs/\(seed.orgId)/responses", token: seed.collectorToken,
                                            ["clientSubmissionId": .string("half-closed-\(i)"), "surveyVersionId": .string(seed.versionId),
                                             "contentHash": .string(seed.contentHash), "answers": ["n": .number(Double(i))]])
            let survey = try? halfClosed("POST", "/v1/orgs/\(seed.orgId)/surveys", token: seed.adminToken, ["title": .string("Half \(i)")])
            statuses.withLock { $0 += [submitted?.status ?? 0, survey?.status ?? 0] }
        }
        #expect(statuses.withLock { $0 } == [Int](repeating: 201, count: 80))
        let conn = try TestEngine.Reader(dataDir: server.dataDir)
        #expect(try conn.query("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id LIKE 'half-closed-%'").first?.int("n") == 40)
    }

    /// A client that sends part of a request and then its FIN is cut off at once, not held until
    /// the 60 s idle timeout (libmicrohttpd's epoll mode took a short read as "drained" and never
    /// read the FIN that came with the last bytes; the polling threads use poll()).
    @Test(arguments: [[], ["--http-threads", "0"]])
    func aPartialRequestFollowedByItsFINIsClosedAtOnce(_ model: [String]) throws {
        let server = ServerProcess()
        try server.start(extra: model)
        let partials: [[UInt8]] = [
            [0xC3],
            Array("GET /healthz HTTP/1.1\r\nHost: a\r\n".utf8),
            Array("POST /v1/orgs/x/responses HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":".utf8),
        ]
        let outcomes = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 30) { i in
            guard let fd = try? server.client.connect() else { return }
            defer { close(fd) }
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            RawHTTPClient.sendAll(fd, partials[i % partials.count])
            shutdown(fd, Int32(SHUT_WR))
            // Whatever the server says (a 400, or nothing), the connection must end well before 5 s.
            var buf = [UInt8](repeating: 0, count: 4096)
            var outcome = "closed"
            while true {
                let n = recv(fd, &buf, buf.count, 0)
                if n == 0 { break }
                if n < 0 { outcome = errno == EAGAIN || errno == EWOULDBLOCK ? "held open" : "closed"; break }
            }
            outcomes.withLock { $0.append(outcome) }
        }
        #expect(outcomes.withLock { $0 } == [String](repeating: "closed", count: 30))
        #expect(try server.client.get("/healthz").status == 200)
    }

    /// The connection limit is 2,048: connections whose descriptors are past 1,023 are served too
    /// (libmicrohttpd's thread-per-connection mode used select(), which cannot watch them: such
    /// connections were reset — found while measuring).
    @Test(arguments: [[], ["--http-threads", "0"]])
    func connectionsPastDescriptor1023AreServed(_ model: [String]) throws {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_cur < 4096 { limit.rlim_cur = min(4096, limit.rlim_max); setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) }
        try #require(limit.rlim_cur >= 2048, "this test needs 2,048 descriptors; the hard limit is \(limit.rlim_max)")
        let server = ServerProcess()
        try server.start(extra: model)
        let seed = try server.seed()
        // 1,100 idle connections from three addresses (512 per address is the per-client limit).
        var idle: [Int32] = []
        defer { idle.forEach { close($0) } }
        for i in 0..<1_100 { idle.append(try server.client.connect(from: "127.0.0.\(2 + i / 400)")) }
        // Until the server has accepted them all: it then holds descriptors past 1,023.
        let fds = "/proc/\(server.process!.pid)/fd"
        let deadline = Date().addingTimeInterval(10)
        while ((try? FileManager.default.contentsOfDirectory(atPath: fds).count) ?? 0) < 1_100 && Date() < deadline { usleep(20_000) }
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: fds).count) ?? 0) >= 1_100)
        let health = try server.client.get("/healthz")
        #expect(health.status == 200)
        let submitted = try server.client.post("/v1/orgs/\(seed.orgId)/responses", token: seed.collectorToken,
                                               ["clientSubmissionId": "past-fd-1023", "surveyVersionId": .string(seed.versionId),
                                                "contentHash": .string(seed.contentHash), "answers": ["n": 1]])
        #expect(submitted.status == 201, "\(submitted.text)")
    }

    @Test(.enabled(if: !TestEngine.isPostgres, "on PostgreSQL MultiProcessTests sends a gibibyte through one process and reads it back through another"))
    func oneGibibyteUploadKeepsServerMemoryFlat() throws {
        let server = ServerProcess()
        try server.start(extra: ["--max-file-bytes", String(2 << 30)])
        let seed = try server.seed()
        let before = server.memoryKB("VmRSS")
        let total = 1 << 30
        let fd = try Self.streamUpload(server.client, path: "/v1/orgs/\(seed.orgId)/uploads/gib-0001", token: seed.collectorToken,
                                       versionId: seed.versionId, total: total)
        // The answer comes after the commit: on PostgreSQL that writes the gibibyte into the
        // database (tens of seconds in a debug build), longer than the client's usual 30 s.
        var patience = timeval(tv_sec: 300, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))
        let reply: Reply
        do { reply = try RawHTTPClient.readReply(fd) } catch {
            close(fd)
            let state = server.process.map { $0.termination?.description ?? "running" } ?? "gone"
            throw TestFailure("no answer to the upload (\(error)); server \(state); stderr: \(server.stderrText.suffix(3000))")
        }
        close(fd)
        let peak = server.memoryKB("VmHWM")
        let growthMB = Double(peak - before) / 1024
        print("1 GiB upload: server RSS before \(before) kB, peak \(peak) kB, growth \(String(format: "%.1f", growthMB)) MB")
        #expect(reply.status == 201, "\(reply.text)")
        #expect(reply.json?["size"]?.intValue == total)
        #expect(growthMB < 64)
    }

    @Test func environmentVariablesMirrorTheFlags() throws {
        let dir = NSTemporaryDirectory() + "surveyd-env-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var environment = ["SURVEYD_DATA_DIR": dir, "SURVEYD_PORT": "0", "SURVEYD_NO_LOG": "1", "SURVEYD_MAX_BODY_BYTES": "100"]
        // A coverage run's profile path (scripts/coverage.sh) goes along; without it the server's
        // counts would be lost and a default.profraw left in the working directory.
        environment["LLVM_PROFILE_FILE"] = ProcessInfo.processInfo.environment["LLVM_PROFILE_FILE"]
        let p = try SpawnedProcess(ServerProcess.binary, ["serve"], environment: environment, output: .null, error: .pipe)
        defer { p.killNow() }
        let client = RawHTTPClient(port: try ServerProcess.servingPort(stderrPipe: p.standardError!, of: p))
        #expect(client.becomesHealthy())
        #expect(FileManager.default.fileExists(atPath: dir + "/surveyd.sqlite"))
        // SURVEYD_MAX_BODY_BYTES=100 applies: a 200-byte body is refused before it is read.
        let big = try client.request("POST", "/v1/orgs", token: "x", body: [UInt8](repeating: 32, count: 200))
        #expect(big.status == 413)
        p.send(SIGTERM)
        #expect(p.waitUntilExit().status == 0)
    }

    /// One server per data dir. A second `serve` on a directory in use is refused before it reads
    /// or sweeps anything: its start-up sweep would otherwise delete the first server's upload
    /// temp files (they look like a crash's leftovers). Once the first stops, the next one starts.
    @Test func aSecondServerOnTheSameDataDirIsRefusedAndSweepsNothing() throws {
        let first = ServerProcess()
        try first.start()
        // A file of an upload in flight on the first server.
        let inFlight = first.dataDir + "/tmp/upload-in-flight.part"
        #expect(FileManager.default.createFile(atPath: inFlight, contents: Data(repeating: 7, count: 4096)))
        let second = try SpawnedProcess(ServerProcess.binary, ["serve", "--data-dir", first.dataDir, "--port", "0", "--no-log"],
                                        output: .null, error: .pipe)
        for _ in 0..<500 where second.isRunning { usleep(20_000) }
        let ended = second.killNow()  // if it still runs, it serves: the refusal is missing
        let message = String(decoding: second.standardError!.readDataToEndOfFile(), as: UTF8.self)
        #expect(ended == .exited(1))
        #expect(message.contains("another surveyd is serving this data dir"), "\(message)")
        #expect(FileManager.default.fileExists(atPath: inFlight))
        #expect(try first.client.get("/healthz").status == 200)
        #expect(first.terminate() == 0)
        // The lock went with the first server: the next one starts (and sweeps the leftover).
        let next = ServerProcess(dataDir: first.dataDir)
        try next.start()
        #expect(!FileManager.default.fileExists(atPath: inFlight))
        #expect(next.terminate() == 0)
    }

    /// Whoever reads the server's output going away (stdout and stderr pipes whose read ends are
    /// closed) must not take the server down: without SIGPIPE ignored the first log write killed
    /// it, and a failed write of the stop message on stderr trapped before the graceful stop.
    @Test func closedOutputPipesDoNotStopTheServer() throws {
        let dir = NSTemporaryDirectory() + "surveyd-logpipe-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let p = try SpawnedProcess(ServerProcess.binary, ["serve", "--data-dir", dir, "--port", "0"] + (try TestEngine.urlArguments(dataDir: dir)),
                                   output: .pipe, error: .pipe)
        defer { p.killNow() }
        let client = RawHTTPClient(port: try ServerProcess.servingPort(stderrPipe: p.standardError!, of: p))
        #expect(client.becomesHealthy())
        // Only the server holds the write ends (this process never kept them), and nobody the read ends.
        for pipe in [p.standardOutput!, p.standardError!] { try pipe.close() }
        for _ in 0..<5 {
            _ = try? client.get("/healthz")
            usleep(50_000)  // past the log's 20 ms batching, so each batch meets the closed pipe
        }
        #expect(p.isRunning)
        #expect(try client.get("/healthz").status == 200)
        p.send(SIGTERM)  // its "stopping" line goes to the closed stderr
        #expect(p.waitUntilExit() == .exited(0))
    }

    @Test func oneJSONLogLinePerRequestWithoutTokensOrAnswers() throws {
        let dir = NSTemporaryDirectory() + "surveyd-log-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let seeder = ServerProcess(dataDir: dir)
        try seeder.start()
        let seed = try seeder.seed()
        #expect(seeder.terminate() == 0)
        // The same data dir served again, this time with the request log on stdout.
        let p = try SpawnedProcess(ServerProcess.binary, ["serve", "--data-dir", dir, "--port", "0"] + (try TestEngine.urlArguments(dataDir: dir)),
                                   output: .pipe, error: .pipe)
        let client = RawHTTPClient(port: try ServerProcess.servingPort(stderrPipe: p.standardError!, of: p))
        #expect(client.becomesHealthy())
        let secret = "answer-that-must-not-be-logged-42"
        let body: JSONValue = ["clientSubmissionId": "log-test-0001", "surveyVersionId": .string(seed.versionId),
                               "contentHash": .string(seed.contentHash), "answers": ["n": 7, "video": nil], "note": .string(secret)]
        #expect(try client.post("/v1/orgs/\(seed.orgId)/responses", token: seed.collectorToken, body).status == 201)
        #expect(try client.get("/v1/orgs/\(seed.orgId)/subscription", token: "sdt_not-a-real-token").status == 401)
        p.send(SIGTERM)
        p.waitUntilExit()
        let text = String(decoding: p.standardOutput!.readDataToEndOfFile(), as: UTF8.self)
        let lines = text.split(separator: "\n").map(String.init)
        let entries = lines.compactMap { try? JSONParser.parse(Array($0.utf8)) }
        #expect(entries.count == lines.count, "every line is one JSON object")
        let posts = entries.filter { $0["method"]?.stringValue == "POST" }
        #expect(posts.count == 1)
        #expect(posts.first?["route"]?.stringValue == "/v1/orgs/{orgId}/responses")
        #expect(posts.first?["status"]?.intValue == 201)
        #expect(posts.first?["responseId"]?.stringValue != nil)
        #expect(posts.first?["durationMs"]?.doubleValue != nil)
        #expect(entries.contains { $0["status"]?.intValue == 401 && $0["errorCode"]?.intValue == 1007 })
        #expect(!text.contains(seed.collectorToken))
        #expect(!text.contains("sdt_not-a-real-token"))
        #expect(!text.contains(secret))
        #expect(!text.contains("\"answers\""))
    }
}
