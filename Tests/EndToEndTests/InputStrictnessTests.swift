import Foundation
import Testing
import SurveyDomain
@testable import SurveyServer
@testable import SurveyStorage

/// Strict input: text comes back whole, dates are real dates, text files are text all the
/// way through, one credential per request, and readiness that cannot be used to burn the disk.
@Suite struct InputStrictnessTests {
    typealias P = FoundationTests

    @Test func textWithANulIsReadBackWhole() throws {
        let f = try Fixture()
        let text = "Visible\u{0}hidden"
        // A title is every app's name for the form, in XML, which cannot carry a NUL: refused whole,
        // never cut at the NUL.
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": .string(text), "reviewRequired": false])
        P.expectProblem(s, .validationFailed)
        #expect(s.json?["errors"]?.arrayValue?.first?["path"] == "title", "\(s.text)")
        // An answer keeps it, and comes back whole.
        let v = try f.publishSurvey()
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("nul-text-0001", v, answers: ["size": 1, "notes": .string(text)]))
        #expect(r.status == 201, "\(r.text)")
        let id = try #require(r.json?["responseId"]?.stringValue)
        let read = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(id)", token: f.adminToken)
        #expect(read.json?["answers"]?["notes"]?.stringValue == text)
    }

    @Test func impossibleDatesAreRefusedNotShifted() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        for (i, bad) in ["2024-02-31T10:00:00Z", "2023-02-29T10:00:00Z", "2024-04-31T00:00:00Z", "2024-01-01T10:00:00+24:00",
                         "2024-01-01T10:00:00+05:60", "2024-01-01T23:59:60Z", "0000-01-01T00:30:00+01:00", "0001-01-01T00:30:00+01:00"].enumerated() {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                      ResponseTests.submission("bad-date-000\(i)", v, extra: ["capturedAt": .string(bad)]))
            P.expectProblem(r, .validationFailed)
            #expect(r.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "capturedAt", "\(bad): \(r.text)")
        }
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses") == 0)
        // A real leap day, an offset at its limit, and the first instant of year 0001 are fine.
        for (i, good) in ["2024-02-29T10:00:00Z", "2024-01-01T10:00:00+23:59", "0001-01-01T00:00:00Z"].enumerated() {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                      ResponseTests.submission("good-date-000\(i)", v, extra: ["capturedAt": .string(good)]))
            #expect(r.status == 201, "\(good): \(r.text)")
        }
        P.expectProblem(try f.client.post("/v1/orgs", token: f.server.operatorToken, ["name": "x", "expiresAt": "2027-02-30T00:00:00Z"]),
                        .validationFailed)
    }

    static let textDefinition: JSONValue = [
        "title": "Notes",
        "questions": [["id": "notes", "type": "file", "label": "Notes file", "accept": ["text/plain", "text/csv"], "maxBytes": 2_000_000]],
    ]

    @Test func aTextFileIsCheckedToTheEnd() throws {
        let f = try Fixture()
        let v = try f.publishSurvey(definition: Self.textDefinition)
        let s = UploadTests.Setup(f: f, v: v)
        let clean = Array(String(repeating: "a,b,c\n", count: 20).utf8)
        for (i, (bytes, type)) in [(clean + [0] + clean, "text/plain"), (clean + [0xFF] + clean, "text/csv"),
                                   (clean + [0xE2, 0x82], "text/plain"), (clean + [0xC3, 0x28], "text/plain")].enumerated() {
            P.expectProblem(try s.put("text-bad-000\(i)", bytes, type: type, question: "notes"), .corruptFile)
        }
        try s.expectNothingStored()
        // Multi-byte characters across every chunk boundary of a long file are text.
        let long = Array(String(repeating: "é€😀,", count: 60_000).utf8)
        #expect(try s.put("text-good-0001", long, type: "text/csv", question: "notes").status == 201)
        // The resumable path checks the whole file at its last chunk.
        let t = ResumableUploadTests.Tus(s: s)
        let bad = clean + [0] + clean
        let location = try #require(try t.create("text-tus-0001", length: bad.count, type: "text/plain", question: "notes").header("location"))
        P.expectProblem(try t.patch(location, offset: 0, bad), .corruptFile)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM uploads") == 1)
    }

    @Test func twoAuthorizationHeadersAreRefused() throws {
        let f = try Fixture()
        let fd = try f.client.connect()
        defer { close(fd) }
        let head = "GET /v1/orgs/\(f.orgId)/subscription HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(f.collectorToken)\r\n" +
            "Authorization: Bearer \(f.adminToken)\r\n\r\n"
        RawHTTPClient.sendAll(fd, Array(head.utf8))
        P.expectProblem(try RawHTTPClient.readReply(fd), .malformedRequest)
    }

    /// Anyone may ask /readyz; it commits at most once a second of server time and answers
    /// from that probe (the injected clock stands still, then moves).
    @Test func readinessCommitsAtMostOnceASecond() throws {
        let clock = ManualClock()
        let s = try TestServer { $0.clock = clock }
        #expect(try s.client.get("/readyz").status == 200)
        let before = s.app.readiness.probesMade
        for _ in 0..<20 {
            let r = try s.client.get("/readyz")
            #expect(r.status == 200)
            #expect(r.json?["status"]?.stringValue == "ready")
        }
        clock.advance(byMillis: 999)
        #expect(try s.client.get("/readyz").status == 200)
        #expect(s.app.readiness.probesMade == before, "21 checks within a second probed again")
        // A second after the probe the next check probes again: a real commit, so that "ready"
        // still means "the database takes writes".
        clock.advance(byMillis: 1)
        let commits = s.app.database.writerStats.commits
        #expect(try s.client.get("/readyz").status == 200)
        #expect(s.app.readiness.probesMade == before + 1)
        #expect(s.app.database.writerStats.commits > commits)
    }
}
