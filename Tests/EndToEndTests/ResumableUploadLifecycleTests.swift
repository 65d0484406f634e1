import Foundation
import Testing
import SurveyDomain
@testable import SurveyServer
@testable import SurveyStorage

/// The life of a tus upload: roles on every request, expiry that frees what it held, races
/// between PATCH, DELETE, creates and plain uploads — each proven on the wire or by an ordered
/// interleaving.
@Suite struct ResumableUploadLifecycleTests {
    typealias P = FoundationTests
    typealias Tus = ResumableUploadTests.Tus

    static func uploadId(_ location: String) -> String { String(location.split(separator: "/").last!) }

    static func partialSize(_ t: Tus, _ uploadId: String) -> Int? {
        (try? t.s.f.server.receivedBytes(uploadId: uploadId))??.count ?? nil
    }

    static func offsetInDatabase(_ t: Tus, _ uploadId: String) throws -> Int64? {
        try t.s.f.server.rows("SELECT received_bytes FROM resumable_uploads WHERE upload_id = ?", [.text(uploadId)]).first?.int("received_bytes")
    }

    /// Starts a PATCH whose body is only partly sent, and returns once the server holds the
    /// upload's claim (its headers were accepted and the sink is open). The caller sends the rest.
    static func patchInFlight(_ t: Tus, location: String, offset: Int, total: Int, firstPart: [UInt8]) throws -> Int32 {
        let fd = try t.s.f.client.connect()
        let head = "PATCH \(location) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(t.s.f.collectorToken)\r\nTus-Resumable: 1.0.0\r\n" +
            "Upload-Offset: \(offset)\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: \(total)\r\n\r\n"
        RawHTTPClient.sendAll(fd, Array(head.utf8) + firstPart)
        let locks = t.s.f.server.app.uploadLocks
        let id = uploadId(location)
        for _ in 0..<500 {
            if !locks.claim(id) { return fd }
            locks.release(id)
            usleep(10_000)
        }
        close(fd)
        throw TestFailure("the PATCH never claimed the upload")
    }

    func setRoles(_ t: Tus, _ roles: [JSONValue]) throws {
        let r = try t.s.f.client.put("/v1/orgs/\(t.s.f.orgId)/users/\(t.s.f.collectorId)/roles", token: t.s.f.adminToken, ["roles": .array(roles)])
        #expect(r.status == 200, "\(r.text)")
    }

    // MARK: - Item 1: roles

    @Test func aRemovedCollectorRoleStopsHeadPatchAndDeleteAtOnce() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(3_000)
        let location = try #require(try t.create("role-gone-0001", length: file.count).header("location"))
        #expect(try t.patch(location, offset: 0, Array(file[0..<1_000])).status == 204)
        try setRoles(t, ["reviewer"])
        #expect(try t.head(location).status == 403)
        let finish = try t.patch(location, offset: 1_000, Array(file[1_000...]))
        P.expectProblem(finish, .forbidden)
        #expect(finish.header("tus-resumable") == "1.0.0")
        P.expectProblem(try t.s.f.client.request("DELETE", location, token: t.s.f.collectorToken, headers: ["Tus-Resumable": "1.0.0"]), .forbidden)
        #expect(try t.s.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 0)
        #expect(try Self.offsetInDatabase(t, Self.uploadId(location)) == 1_000)
        // The role back: the same PATCH succeeds exactly once.
        try setRoles(t, ["collector"])
        #expect(try t.patch(location, offset: 1_000, Array(file[1_000...])).status == 204)
        #expect(try t.s.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 1)
    }

    // MARK: - Item 3: expiry frees what it held

    @Test func anExpiredUploadCanBeDeletedAndACreateStartsAfresh() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(5_000)
        let first = try #require(try t.create("expire-me-0001", length: file.count).header("location"))
        #expect(try t.patch(first, offset: 0, Array(file[0..<1_000])).status == 204)
        try t.s.f.server.app.database.testOnlyExpireResumable(Self.uploadId(first))
        #expect(try t.head(first).status == 410)

        // A create after expiry is a new upload, not a replay pointing at the dead one.
        let again = try t.create("expire-me-0001", length: file.count)
        #expect(again.status == 201, "\(again.text)")
        #expect(again.header("idempotent-replayed") == nil)
        let second = try #require(again.header("location"))
        #expect(second != first)
        #expect(t.s.f.server.files(in: "partial") == [Self.uploadId(second)])
        #expect(try Self.offsetInDatabase(t, Self.uploadId(first)) == nil)
        #expect(try t.offset(second) == 0)
        #expect(try t.patch(second, offset: 0, file).status == 204)
        #expect(try t.s.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 1)

        // DELETE abandons an expired upload (it answered 410 before).
        let third = try #require(try t.create("expire-me-0002", length: file.count).header("location"))
        #expect(try t.patch(third, offset: 0, Array(file[0..<1_000])).status == 204)
        try t.s.f.server.app.database.testOnlyExpireResumable(Self.uploadId(third))
        let del = try t.s.f.client.request("DELETE", third, token: t.s.f.collectorToken, headers: ["Tus-Resumable": "1.0.0"])
        #expect(del.status == 204, "\(del.text)")
        #expect(try Self.offsetInDatabase(t, Self.uploadId(third)) == nil)
        #expect(Self.partialSize(t, Self.uploadId(third)) == nil)
    }

    @Test func expiredUploadsAreSweptByHousekeepingAndAtStart() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(5_000)
        var ids: [String] = []
        for i in 0..<3 {
            let location = try #require(try t.create("sweep-me-000\(i)", length: file.count).header("location"))
            #expect(try t.patch(location, offset: 0, Array(file[0..<1_000])).status == 204)
            ids.append(Self.uploadId(location))
        }
        let app = t.s.f.server.app
        // Housekeeping: the expired one goes (row, file, one audit entry); the others stay.
        try app.database.testOnlyExpireResumable(ids[0])
        #expect(try ResumableUploadService.sweepExpired(database: app.database, blobs: app.blobs, busy: app.uploadLocks) == 1)
        #expect(try Self.offsetInDatabase(t, ids[0]) == nil)
        #expect(Self.partialSize(t, ids[0]) == nil)
        #expect(try t.s.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'upload.resumable.expire' AND target_id = ?", [.text(ids[0])]) == 1)
        #expect(Self.partialSize(t, ids[1]) == 1_000)
        // An upload with a request in progress is left for the next sweep.
        try app.database.testOnlyExpireResumable(ids[1])
        #expect(app.uploadLocks.claim(ids[1]))
        #expect(try ResumableUploadService.sweepExpired(database: app.database, blobs: app.blobs, busy: app.uploadLocks) == 0)
        app.uploadLocks.release(ids[1])
        // At start: a new server on the same data dir sweeps before it serves.
        try app.database.testOnlyExpireResumable(ids[2])
        app.stop()
        let restarted = try App(try TestEngine.configuration(dataDir: t.s.f.server.dataDir))
        defer { restarted.stop() }
        #expect(try Self.offsetInDatabase(t, ids[1]) == nil)
        #expect(try Self.offsetInDatabase(t, ids[2]) == nil)
        #expect(t.s.f.server.files(in: "partial").isEmpty)
    }

    @Test func theUnfinishedBytesACollectorMayHoldAreBounded() throws {
        let server = try TestServer { $0.maxUnfinishedUploadBytes = 1_500_000 }
        let f = try Fixture(server: server)
        let t = Tus(s: UploadTests.Setup(f: f, v: try f.publishSurvey()))
        let first = try #require(try t.create("quota-0001", length: 1_000_000).header("location"))
        let refused = try t.create("quota-0002", length: 1_000_000)
        P.expectProblem(refused, .tooManyPendingRequests)
        #expect(refused.header("retry-after") != nil)
        #expect(try server.count("SELECT COUNT(*) AS n FROM resumable_uploads") == 1)
        #expect(server.files(in: "partial") == [Self.uploadId(first)])
        // Freeing the first makes room: the same create succeeds.
        #expect(try f.client.request("DELETE", first, token: f.collectorToken, headers: ["Tus-Resumable": "1.0.0"]).status == 204)
        #expect(try t.create("quota-0002", length: 1_000_000).status == 201)
    }

    // MARK: - Item 4: a PATCH and a DELETE at once

    @Test func aDeleteDuringAPatchIsRefusedAndThePatchCompletes() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(4_000)
        let location = try #require(try t.create("patch-delete-0001", length: file.count).header("location"))
        let fd = try Self.patchInFlight(t, location: location, offset: 0, total: 2_000, firstPart: Array(file[0..<1_000]))
        defer { close(fd) }
        let del = try t.s.f.client.request("DELETE", location, token: t.s.f.collectorToken, headers: ["Tus-Resumable": "1.0.0"])
        #expect(del.status == 409, "\(del.text)")
        #expect(del.header("tus-resumable") == "1.0.0")
        RawHTTPClient.sendAll(fd, Array(file[1_000..<2_000]))
        let patched = try RawHTTPClient.readReply(fd)
        #expect(patched.status == 204, "\(patched.text)")
        #expect(try t.offset(location) == 2_000)
    }

    /// The row removed under a PATCH in flight (as an expiry sweep or another process would):
    /// the PATCH answers 409 and rolls back — it used to answer 500/1099.
    @Test func aPatchWhoseUploadVanishedAnswers409Not500() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(4_000)
        let location = try #require(try t.create("vanished-0001", length: file.count).header("location"))
        let fd = try Self.patchInFlight(t, location: location, offset: 0, total: 2_000, firstPart: Array(file[0..<1_000]))
        defer { close(fd) }
        try t.s.f.server.app.database.testOnlyDeleteResumable(Self.uploadId(location))
        RawHTTPClient.sendAll(fd, Array(file[1_000..<2_000]))
        let patched = try RawHTTPClient.readReply(fd)
        #expect(patched.status == 409, "\(patched.text)")
        #expect(patched.json?["errorCode"]?.intValue == ErrorCode.idempotencyConflict.rawValue)
        #expect(patched.header("tus-resumable") == "1.0.0")
        #expect(try t.s.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'upload.resumable.append'") == 0)
    }

    // MARK: - Item 5: a finished upload stays finished

    /// A tus upload sent whole in one PATCH: its Location.
    static func finishedUpload(_ t: Tus, _ clientUploadId: String, _ file: [UInt8]) throws -> String {
        let location = try #require(try t.create(clientUploadId, length: file.count).header("location"))
        #expect(try t.patch(location, offset: 0, file).status == 204)
        #expect(t.s.f.server.files(in: "partial").isEmpty)
        return location
    }

    @Test func anEmptyPatchAtTheEndOfAFinishedUploadChangesNothing() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(3_000)
        let location = try Self.finishedUpload(t, "finished-0001", file)
        let empty = try t.patch(location, offset: file.count, [])
        #expect(empty.status == 204, "\(empty.text)")
        #expect(empty.header("upload-offset") == String(file.count))
        #expect(t.s.f.server.files(in: "partial").isEmpty)
        #expect(try t.s.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 1)
    }

    @Test func checkReportsAStrayPartialFile() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(3_000)
        let location = try Self.finishedUpload(t, "stray-0001", file)
        #expect(try TestEngine.check(dataDir: t.s.f.server.dataDir).ok)
        // The partial name of a finished upload, back as zeros (what the old empty PATCH did).
        let stray = t.s.f.server.dataDir + "/partial/" + Self.uploadId(location)
        #expect(FileManager.default.createFile(atPath: stray, contents: Data(count: file.count)))
        let report = try TestEngine.check(dataDir: t.s.f.server.dataDir)
        #expect(!report.ok)
        #expect(report.violations.contains { $0.contains("partial/\(Self.uploadId(location))") }, "\(report.text)")
    }

    // MARK: - Item 6: validation before the gate

    @Test func aMalformedChecksumIs400EvenWhileExpired() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(3_000)
        let location = try #require(try t.create("checksum-0001", length: file.count).header("location"))
        try t.s.f.expire()
        P.expectProblem(try t.patch(location, offset: 0, file, checksum: "md5 AAAA"), .malformedRequest)
        P.expectProblem(try t.patch(location, offset: 0, file, checksum: "sha256"), .malformedRequest)
        // A well-formed chunk while expired: the gate's 1001, with the expiry it names.
        let refused = try t.patch(location, offset: 0, file)
        P.expectProblem(refused, .subscriptionExpired)
        #expect(refused.json?["expiresAt"]?.stringValue != nil, "\(refused.text)")
        #expect(try t.offset(location) == 0)
    }

    // MARK: - Item 7: the suspected races, each ordered deterministically

    /// Runs `action` once, the first time a request claims upload `id`: in the old order (row
    /// read, then claim) exactly the gap another request's commit could fall into. The returned
    /// closure removes the hook.
    static func inTheClaimGap(_ app: App, _ id: String, _ action: @escaping @Sendable () -> Void) -> () -> Void {
        let once = Once()
        app.uploadLocks.beforeClaim.withLock { $0 = { claimed in
            if claimed == id && once.first() { action() }
        } }
        return { app.uploadLocks.beforeClaim.withLock { $0 = nil } }
    }

    /// A new 3,000-byte JPEG upload on a new server: its Location, upload id and partial file.
    static func newUpload(_ clientUploadId: String) throws -> (Tus, [UInt8], String, String, String) {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(3_000)
        let location = try #require(try t.create(clientUploadId, length: file.count).header("location"))
        let id = uploadId(location)
        return (t, file, location, id, t.s.f.server.dataDir + "/partial/" + id)
    }

    /// A PATCH that read the row before another PATCH committed used to truncate the committed
    /// bytes back to its stale offset. The other PATCH's commit is made to land exactly in the gap
    /// between a request's row read and its claim (the claim hook runs first thing in `claim`).
    @Test(.enabled(if: !TestEngine.isPostgres, "writes the partial file on disk; on PostgreSQL received bytes are rows appended with their offset"))
    func aStaleReadCannotTruncateCommittedBytes() throws {
        let (t, file, location, id, path) = try Self.newUpload("stale-read-0001")
        let app = t.s.f.server.app
        let committed = Array(file[0..<1_000])
        let done = Self.inTheClaimGap(app, id) {
            // What another PATCH's commit leaves: its bytes fsynced on disk, then the offset.
            let fd = open(path, O_WRONLY)
            _ = committed.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            fsync(fd)
            close(fd)
            try? app.database.testOnlySetOffset(id, 1_000)
        }
        defer { done() }
        // The stale retry of the first chunk, offset 0.
        let stale = try t.patch(location, offset: 0, committed)
        #expect(stale.status == 409, "\(stale.text)")
        #expect(stale.header("upload-offset") == "1000")
        #expect(Self.partialSize(t, id) == 1_000)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == committed)
        // And the upload goes on from there.
        #expect(try t.patch(location, offset: 1_000, Array(file[1_000...])).status == 204)
        let content = try t.s.f.client.get("/v1/orgs/\(t.s.f.orgId)/uploads/stale-read-0001/content", token: t.s.f.collectorToken)
        #expect(content.body == file)
    }

    /// A PATCH that read the row before a DELETE committed used to re-create the partial file.
    @Test func aPatchCannotReviveTheFileOfADeletedUpload() throws {
        let (t, file, location, id, path) = try Self.newUpload("revive-0001")
        let app = t.s.f.server.app
        let done = Self.inTheClaimGap(app, id) {
            // What a DELETE's commit leaves: no row, then no file.
            try? app.database.testOnlyDeleteResumable(id)
            unlink(path)
        }
        defer { done() }
        let r = try t.patch(location, offset: 0, Array(file[0..<1_000]))
        P.expectProblem(r, .notFound)
        #expect(t.s.f.server.files(in: "partial").isEmpty)
        #expect(try TestEngine.check(dataDir: t.s.f.server.dataDir).ok)
    }

    /// Two collectors creating with one clientUploadId at once: both find nothing in their
    /// snapshot, then meet in the writer's queue. The second used to be handed the first's Location.
    @Test func twoCollectorsCreatingOneClientUploadIdAtOnce() throws {
        // One writer, so that holding it holds every write (PostgreSQL has a pool of them).
        let one = try Fixture(server: try TestServer { $0.databaseWriters = 1 })
        let t = Tus(s: UploadTests.Setup(f: one, v: try one.publishSurvey()))
        let f = t.s.f
        let other = try f.client.post("/v1/orgs/\(f.orgId)/users", token: f.adminToken, ["name": "Col", "roles": ["collector"]])
        let otherToken = try #require(other.json?["token"]?.stringValue)
        let database = f.server.app.database
        let release = try database.testOnlyHoldWriter()
        var released = false
        defer { if !released { release() } }
        func send(_ token: String) throws -> Int32 {
            let fd = try f.client.connect()
            let meta = Tus.meta(["clientUploadId": "same-id-0001", "surveyVersionId": t.s.v.versionId, "questionId": "photo", "contentType": "image/jpeg"])
            let head = "POST \(t.base) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nTus-Resumable: 1.0.0\r\n" +
                "Upload-Length: 3000\r\nUpload-Metadata: \(meta)\r\nContent-Length: 0\r\n\r\n"
            RawHTTPClient.sendAll(fd, Array(head.utf8))
            return fd
        }
        func waitForQueue(_ n: Int) throws {
            for _ in 0..<500 where database.writer.queuedJobs < n { usleep(10_000) }
            guard database.writer.queuedJobs >= n else { throw TestFailure("the writer's queue never reached \(n)") }
        }
        let first = try send(f.collectorToken)
        defer { close(first) }
        try waitForQueue(1)
        let second = try send(otherToken)
        defer { close(second) }
        try waitForQueue(2)
        release()
        released = true
        let a = try RawHTTPClient.readReply(first)
        let b = try RawHTTPClient.readReply(second)
        #expect(a.status == 201, "\(a.text)")
        P.expectProblem(b, .idempotencyConflict)
        #expect(b.header("location") == nil)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM resumable_uploads") == 1)
        #expect(f.server.files(in: "partial").count == 1)
    }

    /// The last chunk of a tus upload whose clientUploadId a plain PUT stored meanwhile (same
    /// bytes): the upload is finished, not left with its file gone and its offset short.
    @Test func aLastChunkAfterAPlainUploadOfTheSameIdFinishesTheUpload() throws {
        let t = Tus(s: try UploadTests.Setup())
        let file = Files.jpeg(3_000)
        let location = try #require(try t.create("both-ways-0001", length: file.count).header("location"))
        #expect(try t.patch(location, offset: 0, Array(file[0..<1_000])).status == 204)
        #expect(try t.s.put("both-ways-0001", file).status == 201)
        let last = try t.patch(location, offset: 1_000, Array(file[1_000...]))
        #expect(last.status == 204, "\(last.text)")
        #expect(try t.offset(location) == file.count)
        #expect(try t.s.f.server.count("SELECT COUNT(*) AS n FROM uploads") == 1)
        #expect(t.s.f.server.files(in: "partial").isEmpty)
        #expect(try TestEngine.check(dataDir: t.s.f.server.dataDir).ok)
        // Different bytes under the id: 1004, and the chunk is kept for the offset it had.
        let other = Files.jpeg(3_000, seed: 9)
        let location2 = try #require(try t.create("both-ways-0002", length: other.count).header("location"))
        #expect(try t.patch(location2, offset: 0, Array(other[0..<1_000])).status == 204)
        #expect(try t.s.put("both-ways-0002", file).status == 201)
        P.expectProblem(try t.patch(location2, offset: 1_000, Array(other[1_000...])), .idempotencyConflict)
        #expect(try t.offset(location2) == 1_000)
        #expect(Self.partialSize(t, Self.uploadId(location2)) == 1_000)
    }
}

/// True the first time only (a hook that must act once).
final class Once: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var done = false
    func first() -> Bool { lock.withLock { defer { done = true }; return !done } }
}

extension Database {
    func testOnlyDeleteResumable(_ uploadId: String) throws {
        try writer.submit { conn in try conn.run("DELETE FROM resumable_uploads WHERE upload_id = ?", [.text(uploadId)]) }
    }

    func testOnlySetOffset(_ uploadId: String, _ offset: Int64) throws {
        try writer.submit { conn in
            try conn.run("UPDATE resumable_uploads SET received_bytes = ? WHERE upload_id = ?", [.int(offset), .text(uploadId)])
        }
    }

    /// Occupies the writer until the returned closure is called (once it has started the job,
    /// later jobs queue behind it in order).
    func testOnlyHoldWriter() throws -> @Sendable () -> Void {
        let started = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        writer.submitAsync({ _, _ in started.signal(); gate.wait() }, then: { (_: Result<Void, any Error>) in })
        guard started.wait(timeout: .now() + 10) == .success else { throw TestFailure("the writer never started the holding job") }
        return { gate.signal() }
    }
}
