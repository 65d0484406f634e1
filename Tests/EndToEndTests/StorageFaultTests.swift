import Foundation
import Testing
import SurveyDomain
import TestProcesses
@testable import SurveyStorage

/// The disk fails under a real `surveyd serve` on SQLite (`Faults/faultinject.c`, preloaded):
/// a write or an fsync of the database's WAL, the fsync of an uploaded file or of its directory,
/// the link of a file into `blobs/`, a full disk in the middle of a tus chunk. Each time the
/// request gets 503 / 1040 with `Retry-After` and nothing of it is stored — no row, no audit
/// entry, no file, no consumed id — the server goes on serving, the same request sent again is
/// accepted exactly once, `surveyd check` passes, and a stop and a start (or a `kill -9` at the
/// worst moment) change none of it.
@Suite(.serialized, .enabled(if: !TestEngine.isPostgres, "the SQLite engine's own files"))
struct StorageFaultTests {
    typealias P = FoundationTests

    /// A server with the fault injector preloaded, seeded with an organization, a collector and
    /// a survey whose `video` question takes JPEG files.
    final class Rig {
        let server = ServerProcess()
        let faults: FaultInjector
        let seed: (orgId: String, operatorToken: String, adminToken: String, collectorToken: String, versionId: String, contentHash: String)
        var client: RawHTTPClient { server.client }
        var database: String { server.dataDir + "/surveyd.sqlite" }

        init() throws {
            faults = FaultInjector(besides: server.dataDir)
            try server.start(environment: try faults.environment())
            seed = try server.seed()
        }

        func start() throws { try server.start(environment: try faults.environment()) }

        func submit(_ id: String) throws -> Reply {
            try client.post("/v1/orgs/\(seed.orgId)/responses", token: seed.collectorToken, [
                "clientSubmissionId": .string(id), "surveyVersionId": .string(seed.versionId),
                "contentHash": .string(seed.contentHash), "answers": ["n": 3],
            ])
        }

        func upload(_ id: String, _ bytes: [UInt8]) throws -> Reply {
            try client.request("PUT", "/v1/orgs/\(seed.orgId)/uploads/\(id)", token: seed.collectorToken, body: bytes,
                               headers: ["Content-Type": "image/jpeg", "Survey-Version-Id": seed.versionId, "Question-Id": "video"])
        }

        func count(_ sql: String, _ args: [SQLValue] = []) throws -> Int64 {
            try TestEngine.Reader(dataDir: server.dataDir).query(sql, args).first?.int("n") ?? -1
        }

        func files(_ sub: String) -> [String] { ServerProcess.regularFiles(under: server.dataDir + "/" + sub) }

        /// The refusal the contract promises for a storage failure.
        func expectStorageRefusal(_ r: Reply, sourceLocation: SourceLocation = #_sourceLocation) {
            P.expectProblem(r, .storageUnavailable, sourceLocation: sourceLocation)
            #expect(r.header("retry-after") != nil, sourceLocation: sourceLocation)
        }

        /// A path in the data dir, as the injector sees it.
        func path(_ relative: String) -> String { server.dataDir + "/" + relative }

        /// Exactly one injected failure, of `function` on a path that starts with `prefix`.
        func expectFired(_ function: String, under prefix: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let fired = faults.fired
            #expect(fired.count == 1 && fired[0].function == function && fired[0].path.hasPrefix(prefix), "\(fired)",
                    sourceLocation: sourceLocation)
        }

        /// No submission under `id`: not through the API, not in the database.
        func expectNoSubmission(_ id: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let r = try client.get("/v1/orgs/\(seed.orgId)/responses?clientSubmissionId=\(id)", token: seed.collectorToken)
            #expect(r.status == 404, "\(r.status) \(r.text)", sourceLocation: sourceLocation)
            #expect(try count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id = ?", [.text(id)]) == 0, sourceLocation: sourceLocation)
            // Every audit entry of an accepted response has its response, and no other exists.
            #expect(try count("SELECT COUNT(*) AS n FROM audit WHERE action = 'response.accept'") == count("SELECT COUNT(*) AS n FROM responses"),
                    sourceLocation: sourceLocation)
        }

        /// No upload under `id`: not through the API, not in the database, no file in `blobs/` that
        /// no upload names, and nothing in `tmp/`.
        func expectNoUpload(_ id: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let r = try client.get("/v1/orgs/\(seed.orgId)/uploads/\(id)", token: seed.collectorToken)
            #expect(r.status == 404, "\(r.status) \(r.text)", sourceLocation: sourceLocation)
            #expect(try count("SELECT COUNT(*) AS n FROM uploads WHERE client_upload_id = ?", [.text(id)]) == 0, sourceLocation: sourceLocation)
            #expect(try count("SELECT COUNT(*) AS n FROM audit WHERE action = 'upload.commit'") == count("SELECT COUNT(*) AS n FROM uploads"),
                    sourceLocation: sourceLocation)
            let named = Set(try TestEngine.Reader(dataDir: server.dataDir).query("SELECT sha256 FROM uploads", []).map { try $0.string("sha256") })
            let unnamed = files("blobs").filter { !named.contains(($0 as NSString).lastPathComponent) }
            #expect(unnamed.isEmpty, "\(unnamed)", sourceLocation: sourceLocation)
            #expect(files("tmp").isEmpty, "\(files("tmp"))", sourceLocation: sourceLocation)
        }

        /// Sent again, the submission is accepted (201), and once more it is the replay (200)
        /// of the same response; the API knows exactly one.
        func expectSubmittedOnce(_ id: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let first = try submit(id), again = try submit(id)
            #expect(first.status == 201, "\(first.status) \(first.text)", sourceLocation: sourceLocation)
            #expect(again.status == 200, "\(again.status) \(again.text)", sourceLocation: sourceLocation)
            #expect(again.json?["responseId"] == first.json?["responseId"], sourceLocation: sourceLocation)
            let listed = try client.get("/v1/orgs/\(seed.orgId)/responses", token: seed.adminToken)
            let ids = listed.json?["items"]?.arrayValue?.compactMap { $0["clientSubmissionId"]?.stringValue } ?? []
            #expect(ids.filter { $0 == id }.count == 1, "\(listed.text.prefix(400))", sourceLocation: sourceLocation)
        }

        /// Sent again, the upload is stored (201), then replayed (200); its content reads back as sent.
        func expectUploadedOnce(_ id: String, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws {
            let first = try upload(id, bytes), again = try upload(id, bytes)
            #expect(first.status == 201, "\(first.status) \(first.text)", sourceLocation: sourceLocation)
            #expect(again.status == 200, "\(again.status) \(again.text)", sourceLocation: sourceLocation)
            expectContent(id, bytes, sourceLocation: sourceLocation)
        }

        func expectContent(_ id: String, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
            let content = try? client.get("/v1/orgs/\(seed.orgId)/uploads/\(id)/content", token: seed.collectorToken)
            #expect(content?.status == 200 && content?.body == bytes, "\(content?.status ?? 0)", sourceLocation: sourceLocation)
            let name = Digest.sha256Hex(bytes)
            #expect(files("blobs").filter { ($0 as NSString).lastPathComponent == name }.count == 1, "\(files("blobs"))", sourceLocation: sourceLocation)
        }

        /// `surveyd check` (the command, beside the running server) finds nothing wrong.
        func expectCheckPasses(sourceLocation: SourceLocation = #_sourceLocation) throws {
            let check = try ServerProcess.command(["check", "--data-dir", server.dataDir])
            #expect(check.status == 0 && check.stdout.contains("surveyd check: OK"), "\(check.stdout)\(check.stderr)",
                    sourceLocation: sourceLocation)
        }

        /// SIGTERM ends the server with status 0, it starts again on the same data dir, and
        /// `surveyd check` still passes.
        func expectCleanRestart(sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(server.terminate() == 0, "\(server.stderrText.suffix(2000))", sourceLocation: sourceLocation)
            try start()
            try expectCheckPasses(sourceLocation: sourceLocation)
        }
    }

    @Test func aFailedWALWriteIs1040AndTheSameSubmissionThenLandsOnce() throws {
        let rig = try Rig()
        try rig.faults.arm(.write, path: rig.path("surveyd.sqlite-wal"))
        rig.expectStorageRefusal(try rig.submit("wal-write-0001"))
        rig.expectFired("pwrite64", under: rig.path("surveyd.sqlite-wal"))
        rig.faults.disarm()
        try rig.expectNoSubmission("wal-write-0001")
        // It goes on serving: ready, and the same request is accepted once.
        #expect(try rig.client.get("/readyz").status == 200)
        try rig.expectSubmittedOnce("wal-write-0001")
        try rig.expectCheckPasses()
        try rig.expectCleanRestart()
        try rig.expectSubmittedOnceMore("wal-write-0001")
    }

    /// A commit whose WAL fsync fails has written its frames already. To make the failing fsync
    /// that commit's own (after its frames, not the one after a restarted WAL's header), a read
    /// snapshot older than the last commit is held open: the WAL cannot start afresh under it.
    /// The next fsync of the WAL fails, whichever thread makes it: when it is the checkpointer's
    /// (which fsyncs the WAL before copying it) rather than the writer's commit, the attempt
    /// proves nothing and is made again under a new id, up to three times. Once the writer's
    /// fsync fails, the answer must be the refusal. Returns the WAL's size before the commit and
    /// after its failure, and the attempt that met the fault.
    static func failCommitFsync(_ rig: Rig, _ request: (Int) throws -> Reply) throws -> (before: Int, after: Int, attempt: Int)? {
        func walSize() -> Int { ((try? FileManager.default.attributesOfItem(atPath: rig.database + "-wal"))?[.size] as? Int) ?? -1 }
        var missed: [[FaultInjector.Fired]] = []
        for attempt in 1...3 {
            let snapshot = try Connection(path: rig.database, readOnly: true)
            try snapshot.execute("BEGIN")
            _ = try snapshot.query("SELECT COUNT(*) AS n FROM responses")
            #expect(try rig.submit("wal-fsync-warmup-\(attempt)").status == 201)
            let before = walSize()
            try rig.faults.arm(.fsync, path: rig.path("surveyd.sqlite-wal"))
            let answer = try request(attempt)
            let fired = rig.faults.fired
            rig.faults.disarm()
            let after = walSize()
            try snapshot.execute("COMMIT")
            if fired.count == 1 && fired[0].thread == "surveyd-writer" {
                rig.expectStorageRefusal(answer)
                #expect(fired[0].function == "fdatasync" && fired[0].path == rig.path("surveyd.sqlite-wal"), "\(fired)")
                return (before, after, attempt)
            }
            missed.append(fired)
        }
        // Seen only on a heavily loaded machine: nothing is proven either way, and nothing is judged.
        withKnownIssue("the armed fault never met the commit's fsync in three attempts: \(missed)", isIntermittent: true) {
            Issue.record("the armed fault never met the commit's fsync")
        }
        return nil
    }

    @Test func aFailedWALFsyncIs1040AndTheServerGoesOnServing() throws {
        let rig = try Rig()
        guard let wal = try Self.failCommitFsync(rig, { try rig.submit("wal-fsync-000\($0)") }) else { return }
        let id = "wal-fsync-000\(wal.attempt)"
        #expect(wal.after > wal.before, "the commit's frames were written before its fsync failed: \(wal)")
        try rig.expectNoSubmission(id)
        #expect(try rig.client.get("/readyz").status == 200)
        try rig.expectSubmittedOnce(id)
        try rig.expectCheckPasses()
        try rig.expectCleanRestart()
        try rig.expectSubmittedOnceMore(id)
    }

    /// The worst moment for a crash: right after the refusal, before any other write. WAL
    /// recovery at the next start must not bring the refused upload back (a row whose file its
    /// undo removed).
    @Test func aFailedWALFsyncOfAnUploadStaysRefusedAcrossKill9() throws {
        let rig = try Rig()
        // Other bytes for each attempt: an attempt the fault missed stores its file.
        func bytes(_ attempt: Int) -> [UInt8] { Files.jpeg(20_000, seed: UInt8(2 + attempt)) }
        guard let wal = try Self.failCommitFsync(rig, { try rig.upload("wal-fsync-upload-\($0)", bytes($0)) }) else { return }
        let id = "wal-fsync-upload-\(wal.attempt)"
        #expect(wal.after > wal.before, "the commit's frames were written before its fsync failed: \(wal)")
        rig.server.kill9()
        try rig.start()
        try rig.expectNoUpload(id)
        try rig.expectCheckPasses()
        try rig.expectUploadedOnce(id, bytes(wal.attempt))
        try rig.expectCheckPasses()
    }

    /// `/readyz` commits a write that reaches the disk: while every fsync of the WAL fails it
    /// answers 503 / 1040, and ready again as soon as they pass.
    @Test func readinessFollowsAFailingWALFsync() throws {
        let rig = try Rig()
        #expect(try rig.client.get("/readyz").status == 200)
        try rig.faults.arm(.fsync, path: rig.path("surveyd.sqlite-wal"), count: 0)
        usleep(1_100_000)  // a successful probe is reused for one second
        let failing = try rig.client.get("/readyz")
        rig.expectStorageRefusal(failing)
        #expect(!rig.faults.fired.isEmpty)
        rig.faults.disarm()
        #expect(try rig.client.get("/readyz").status == 200)
        try rig.expectSubmittedOnce("after-ready-0001")
        try rig.expectCheckPasses()
    }

    @Test func aFailedFsyncOfAnUploadedFileIs1040AndLeavesNoFile() throws {
        try Rig().uploadMeetsAFault(.fsync, under: "tmp/", id: "file-fsync-0001", seed: 4)
    }

    /// The file is linked into `blobs/`, then the directory's fsync fails: the link must go
    /// with the refusal (else a file no row names stays, and the retry skips the fsync).
    @Test func aFailedFsyncOfTheBlobDirectoryIs1040AndLeavesNoFile() throws {
        try Rig().uploadMeetsAFault(.fsync, under: "blobs/", id: "dir-fsync-0001", seed: 5)
    }

    /// Placing a file is a hard link (`link`), not a rename: the temp name stays until the commit.
    @Test func aFailedLinkIntoBlobsIs1040AndLeavesNoFile() throws {
        try Rig().uploadMeetsAFault(.link, under: "blobs/", id: "blob-link-0001", seed: 6)
    }

    /// The disk fills in the middle of the second chunk: its bytes are cut back to the committed
    /// offset, HEAD says that offset, and the chunk sent again from there finishes the upload.
    @Test func aFullDiskMidChunkKeepsTheOffsetAndTheChunkIsSentAgain() throws {
        let rig = try Rig()
        let bytes = Files.jpeg(600_000, seed: 7)
        let split = 250_000
        let base = "/v1/orgs/\(rig.seed.orgId)/uploads/resumable"
        func meta(_ m: [String: String]) -> String {
            m.sorted { $0.key < $1.key }.map { "\($0.key) \(Base64.encode(Array($0.value.utf8)))" }.joined(separator: ",")
        }
        let created = try rig.client.request("POST", base, token: rig.seed.collectorToken, body: [], headers: [
            "Tus-Resumable": "1.0.0", "Upload-Length": String(bytes.count),
            "Upload-Metadata": meta(["clientUploadId": "tus-full-0001", "surveyVersionId": rig.seed.versionId,
                                     "questionId": "video", "contentType": "image/jpeg"]),
        ])
        let location = try #require(created.header("location"), "\(created.status) \(created.text)")
        let uploadId = String(location.split(separator: "/").last ?? "")
        func patch(_ offset: Int, _ chunk: ArraySlice<UInt8>) throws -> Reply {
            try rig.client.request("PATCH", location, token: rig.seed.collectorToken, body: Array(chunk), headers: [
                "Tus-Resumable": "1.0.0", "Upload-Offset": String(offset), "Content-Type": "application/offset+octet-stream",
            ])
        }
        func offset() throws -> String? {
            try rig.client.request("HEAD", location, token: rig.seed.collectorToken, headers: ["Tus-Resumable": "1.0.0"]).header("upload-offset")
        }
        func partialSize() -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: rig.server.dataDir + "/partial/" + uploadId))?[.size] as? Int) ?? -1
        }
        #expect(try patch(0, bytes[..<split]).status == 204)

        // The chunk's second write finds the disk full.
        try rig.faults.arm(.write, path: rig.path("partial/*"), nth: 2, failure: .enospc)
        let refused = try patch(split, bytes[split...])
        rig.expectStorageRefusal(refused)
        #expect(refused.header("tus-resumable") == "1.0.0")
        rig.expectFired("pwrite", under: rig.path("partial/" + uploadId))
        rig.faults.disarm()
        #expect(try offset() == String(split))
        #expect(partialSize() == split)
        #expect(try rig.count("SELECT received_bytes AS n FROM resumable_uploads WHERE upload_id = ?", [.text(uploadId)]) == Int64(split))
        #expect(try rig.count("SELECT COUNT(*) AS n FROM uploads") == 0)
        #expect(rig.files("blobs").isEmpty)
        try rig.expectCheckPasses()

        // The same chunk again, from the same offset: the upload is complete and stored once.
        let done = try patch(split, bytes[split...])
        #expect(done.status == 204 && done.header("upload-offset") == String(bytes.count), "\(done.status) \(done.text)")
        #expect(try offset() == String(bytes.count))
        #expect(rig.files("partial").isEmpty)
        #expect(try rig.count("SELECT COUNT(*) AS n FROM uploads WHERE client_upload_id = 'tus-full-0001'") == 1)
        rig.expectContent("tus-full-0001", bytes)
        try rig.expectCheckPasses()
        try rig.expectCleanRestart()
        rig.expectContent("tus-full-0001", bytes)
    }

    /// The phone's side: SurveySync's outbox (`surveysync`, a real process) whose commit meets a
    /// failing fsync says the capture was not saved, keeps nothing of it, and takes it once when
    /// it is saved again.
    @Test func aPhonesOutboxWhoseCommitFailsSaysSoAndKeepsNothing() throws {
        let dir = NSTemporaryDirectory() + "outbox-faults-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = dir + "/outbox.sqlite"
        let faults = FaultInjector(besides: dir + "/phone")
        let owner = ["--store", store, "--server", "http://127.0.0.1:9", "--org", "org_field", "--user", "amina"]
        let capture = ["capture"] + owner + ["--version", "svr_1", "--hash", "sha256:0", "--answers", #"{"n":3}"#, "--id", "household-0001"]
        func surveysync(_ args: [String]) throws -> (status: Int32, out: String, err: String) {
            let binary = ProcessInfo.processInfo.environment["SURVEYSYNC_BIN"].flatMap { $0.isEmpty ? nil : $0 }
                ?? ServerProcess.packageRoot.appendingPathComponent(".build/debug/surveysync").path
            let p = try SpawnedProcess(binary, args, environment: ProcessInfo.processInfo.environment.merging(try faults.environment()) { $1 },
                                       output: .pipe, error: .pipe)
            let o = p.standardOutput!.readDataToEndOfFile(), e = p.standardError!.readDataToEndOfFile()
            return (p.waitUntilExit().status, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
        }
        // The store exists (its layout committed) before the disk starts failing.
        #expect(try surveysync(["status"] + owner).status == 0)

        try faults.arm(.fsync, path: store + "-wal")
        let refused = try surveysync(capture)
        #expect(refused.status != 0 && refused.err.contains("It was not saved: save it again."), "\(refused)")
        #expect(faults.fired.map(\.path) == [store + "-wal"], "\(faults.fired)")
        faults.disarm()
        let after = try surveysync(["status"] + owner)
        #expect(after.status == 0 && !after.out.contains("household-0001"), "\(after)")

        let saved = try surveysync(capture)
        #expect(saved.status == 0 && saved.out.contains("household-0001"), "\(saved)")
        let listed = try surveysync(["status"] + owner)
        #expect(listed.out.components(separatedBy: "household-0001").count - 1 == 1, "\(listed.out)")
    }
}

extension StorageFaultTests.Rig {
    /// An upload whose `call` fails on a path under `directory` (of the data dir): 503 / 1040,
    /// nothing of it stored and `check` clean; sent again, stored once, and still there, byte for
    /// byte, after a stop and a start.
    func uploadMeetsAFault(_ call: FaultInjector.Call, under directory: String, id: String, seed: UInt8,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        let bytes = Files.jpeg(50_000, seed: seed)
        try faults.arm(call, path: path(directory + "*"))
        expectStorageRefusal(try upload(id, bytes), sourceLocation: sourceLocation)
        expectFired(call == .link ? "link" : "fsync", under: path(directory))
        faults.disarm()
        try expectNoUpload(id)
        try expectCheckPasses()
        try expectUploadedOnce(id, bytes)
        try expectCheckPasses()
        try expectCleanRestart()
        expectContent(id, bytes)
    }

    /// After a restart: still exactly one response under `id`, and sending it again is its replay.
    func expectSubmittedOnceMore(_ id: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let again = try submit(id)
        #expect(again.status == 200, "\(again.status) \(again.text)", sourceLocation: sourceLocation)
        #expect(try count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id = ?", [.text(id)]) == 1, sourceLocation: sourceLocation)
    }
}
