import Foundation
import Testing
import SurveyDomain
import TestProcesses
@testable import SurveyStorage

/// Exports on a real server: columns over all versions, every filter, the incremental cursor,
/// CSV injection, export while expired, roles and tenancy, GeoJSON, and the audit entry.
@Suite struct ExportTests {
    static let v1: JSONValue = ["title": "Wells", "questions": [
        ["id": "size", "type": "integer", "label": "People"],
        ["id": "tags", "type": "select_multiple", "label": "Uses", "choices": ["drink", "wash", "farm"]],
        ["id": "loc", "type": "geopoint", "label": "Where"],
        ["id": "note", "type": "text", "label": "Note"],
        ["id": "old", "type": "text", "label": "Only in version 1"],
    ]]
    static let v2: JSONValue = ["title": "Wells", "questions": [
        ["id": "size", "type": "decimal", "label": "People"],
        ["id": "tags", "type": "select_multiple", "label": "Uses", "choices": ["drink", "wash", "farm", "cattle"]],
        ["id": "loc", "type": "geopoint", "label": "Where"],
        ["id": "note", "type": "text", "label": "Note"],
        ["id": "photo", "type": "file", "label": "Photo", "accept": ["image/png"]],
        ["id": "new", "type": "text", "label": "Only in version 2"],
    ]]

    /// A survey with two versions and two responses, one per version.
    struct World {
        let f: Fixture
        let surveyId: String
        let first: (surveyId: String, versionId: String, contentHash: String)
        let second: (surveyId: String, versionId: String, contentHash: String)
        var base: String { "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/responses" }

        /// `clock`: the server's time, for a test that moves it.
        init(reviewRequired: Bool = true, clock: ManualClock? = nil) throws {
            f = try Fixture(server: try TestServer { config in if let clock { config.clock = clock } })
            first = try f.publishSurvey(reviewRequired: reviewRequired, definition: ExportTests.v1)
            surveyId = first.surveyId
            let v = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, ["definition": ExportTests.v2])
            guard v.status == 201 else { throw TestFailure("publish v2: \(v.status) \(v.text)") }
            second = (surveyId, v.json!["surveyVersionId"]!.stringValue!, v.json!["contentHash"]!.stringValue!)
        }

        @discardableResult
        func submit(_ id: String, _ version: (surveyId: String, versionId: String, contentHash: String), _ answers: JSONValue,
                    token: String? = nil, extra: [String: JSONValue] = [:]) throws -> String {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: token ?? f.collectorToken,
                                      ResponseTests.submission(id, version, answers: answers, extra: extra))
            guard r.status == 201, let rid = r.json?["responseId"]?.stringValue else { throw TestFailure("submit: \(r.status) \(r.text)") }
            return rid
        }

        func export(_ ext: String = "csv", _ query: String = "", token: String? = nil) throws -> Reply {
            try f.client.get(base + ".\(ext)" + (query.isEmpty ? "" : "?" + query), token: token ?? f.reviewerToken)
        }

        /// The export's rows (header first), parsed as RFC 4180.
        func csv(_ query: String = "") throws -> (rows: [[String]], cursor: String) {
            let r = try export("csv", query)
            guard r.status == 200, let cursor = r.header("surveyd-export-cursor") else { throw TestFailure("export: \(r.status) \(r.text)") }
            return (ExportTests.parseCSV(r.text), cursor)
        }
    }

    /// RFC 4180: quoted fields may hold commas, quotes (doubled) and line breaks; lines end in CRLF.
    static func parseCSV(_ text: String) -> [[String]] {
        var rows: [[String]] = [], row: [String] = [], field = "", quoted = false
        var chars = Array(text.unicodeScalars)[...]
        while let c = chars.popFirst() {
            if quoted {
                if c == "\"" {
                    if chars.first == "\"" { field.unicodeScalars.append("\""); chars.removeFirst() } else { quoted = false }
                } else { field.unicodeScalars.append(c) }
            } else if c == "\"" { quoted = true
            } else if c == "," { row.append(field); field = ""
            } else if c == "\r" && chars.first == "\n" {
                chars.removeFirst(); row.append(field); rows.append(row); row = []; field = ""
            } else { field.unicodeScalars.append(c) }
        }
        if !field.isEmpty || !row.isEmpty { row.append(field); rows.append(row) }
        return rows
    }

    static func column(_ rows: [[String]], _ name: String, of responseId: String) -> String? {
        guard let i = rows.first?.firstIndex(of: name), let row = rows.first(where: { $0.first == responseId }) else { return nil }
        return row[i]
    }

    @Test func columnsSpanEveryVersionAndCellsAreTyped() throws {
        let w = try World()
        let r1 = try w.submit("exp-col-0001", w.first, ["size": 3, "tags": ["drink", "farm"], "loc": ["lat": -1.5, "lon": 36.75, "accuracy": 8],
                                                         "note": "=HYPERLINK(\"http://x\")", "old": "a, \"quoted\"\nline"],
                              extra: ["capturedAt": "2026-11-30T08:00:00Z"])
        let r2 = try w.submit("exp-col-0002", w.second, ["size": 2.5, "tags": ["cattle"], "note": "-1+1", "new": "@here"])
        let (rows, cursor) = try w.csv()
        #expect(cursor.hasPrefix("ec2."))
        let meta = ["responseId", "clientSubmissionId", "surveyVersionId", "versionNumber", "submittedBy", "submitterName", "receivedAt",
                    "capturedAt", "reviewState", "revision", "fieldTaskId"]
        // The newest version's order, then what only older versions had.
        #expect(rows.first == meta + ["size", "tags", "loc.lat", "loc.lon", "loc.accuracy", "note", "photo", "new", "old"])
        #expect(rows.count == 3 && rows[1].first == r1 && rows[2].first == r2)
        let c = { (name: String, id: String) in Self.column(rows, name, of: id) }
        #expect(c("versionNumber", r1) == "1" && c("versionNumber", r2) == "2")
        #expect(c("submitterName", r1) == "Cole" && c("reviewState", r1) == "submitted" && c("revision", r1) == "1")
        #expect(c("capturedAt", r1) == "2026-11-30T08:00:00.000Z" && c("capturedAt", r2) == "")
        #expect(c("size", r1) == "3" && c("size", r2) == "2.5")
        #expect(c("tags", r1) == "drink farm" && c("tags", r2) == "cattle")
        #expect(c("loc.lat", r1) == "-1.5" && c("loc.lon", r1) == "36.75" && c("loc.accuracy", r1) == "8" && c("loc.lat", r2) == "")
        // Formula injection: a text cell a spreadsheet would run starts with '.
        #expect(c("note", r1) == "'=HYPERLINK(\"http://x\")" && c("note", r2) == "'-1+1" && c("new", r2) == "'@here")
        // A question the response's version lacks is empty; quotes, commas, line breaks survive.
        #expect(c("old", r1) == "a, \"quoted\"\nline" && c("old", r2) == "" && c("new", r1) == "")

        let split = try w.csv("splitSelectMultiples=true").rows
        #expect(Array(split[0].suffix(from: 13).prefix(4)) == ["tags/drink", "tags/wash", "tags/farm", "tags/cattle"])
        #expect(Self.column(split, "tags/farm", of: r1) == "1" && Self.column(split, "tags/wash", of: r1) == "0"
                && Self.column(split, "tags/cattle", of: r2) == "1")

        let bom = try w.export("csv", "bom=true")
        #expect(Array(bom.body.prefix(3)) == [0xEF, 0xBB, 0xBF])
        #expect(bom.header("content-type") == "text/csv; charset=utf-8")
        #expect(bom.header("content-disposition") == "attachment; filename=\"Household-\(Timestamp.format(Timestamp.nowMillis()).prefix(10)).csv\"")
        // Each export is audited: who, which survey, format, rows, filters.
        let audit = try w.f.server.rows("SELECT actor, detail FROM audit WHERE action = 'export.csv' AND target_id = ? ORDER BY seq",
                                        [.text(w.surveyId)])
        #expect(audit.count == 3)
        let detail = try JSONParser.parse(Array(try audit[1].string("detail").utf8))
        #expect(detail["rows"]?.intValue == 2 && detail["filters"]?["splitSelectMultiples"]?.stringValue == "true")
    }

    @Test func everyFilterNarrowsTheRows() throws {
        let clock = ManualClock()
        let w = try World(clock: clock)
        let f = w.f
        let a = try w.submit("exp-fil-0001", w.first, ["size": 1])
        // Server time moves on between `a` and the rest: `receivedTo` is exclusive.
        clock.advance(byMillis: 10)
        let between = clock.nowMillis()
        clock.advance(byMillis: 10)
        let b = try w.submit("exp-fil-0002", w.second, ["size": 2])
        clock.advance(byMillis: 1)  // responses of one millisecond have no order among them
        // A second collector, and a task for the first.
        let other = try f.client.post("/v1/orgs/\(f.orgId)/users", token: f.adminToken, ["name": "Otto", "roles": ["collector"]])
        let otherId = other.json!["userId"]!.stringValue!
        let c = try w.submit("exp-fil-0003", w.second, ["size": 3], token: other.json!["token"]!.stringValue!)
        clock.advance(byMillis: 1)
        let task = try f.client.post("/v1/orgs/\(f.orgId)/tasks", token: f.adminToken,
                                     ["title": "Visit", "surveyId": .string(w.surveyId), "assigneeUserId": .string(f.collectorId)])
        let taskId = task.json!["taskId"]!.stringValue!
        let d = try w.submit("exp-fil-0004", w.second, ["size": 4], extra: ["fieldTaskId": .string(taskId)])
        #expect(try f.client.post("/v1/orgs/\(f.orgId)/responses/\(a)/review", token: f.reviewerToken,
                                  ["action": "startReview", "expectedRevision": 1]).status == 200)
        let ids = { (q: String) throws -> [String] in try w.csv(q).rows.dropFirst().map { $0[0] } }
        #expect(try ids("") == [a, b, c, d])
        #expect(try ids("reviewState=in_review") == [a])
        #expect(try ids("reviewState=submitted,in_review") == [a, b, c, d])
        #expect(try ids("surveyVersionId=\(w.first.versionId)") == [a])
        #expect(try ids("submittedBy=\(otherId)") == [c])
        #expect(try ids("fieldTaskId=\(taskId)") == [d])
        let t = Timestamp.format(between)
        #expect(try ids("receivedTo=\(t)") == [a])
        #expect(try ids("receivedFrom=\(t)&submittedBy=\(f.collectorId)") == [b, d])
        // Values that cannot be read are 1031; nothing is exported, nothing audited.
        let audited = try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action LIKE 'export.%'")
        for q in ["reviewState=bogus", "reviewState=", "receivedFrom=yesterday", "afterCursor=ec1.999999999", "afterCursor=abc",
                  "bom=maybe", "splitSelectMultiples=1"] {
            let r = try w.export("csv", q)
            #expect(r.status == 400 && r.errorCode == 1031, "\(q)")
        }
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action LIKE 'export.%'") == audited)
    }

    @Test func afterTheCursorComesExactlyWhatChanged() throws {
        let w = try World()
        let f = w.f
        let a = try w.submit("exp-inc-0001", w.second, ["size": 1])
        let b = try w.submit("exp-inc-0002", w.second, ["size": 2])
        let first = try w.csv()
        #expect(first.rows.count == 3)
        // Since: a new response, a review step on an old one; another survey's response is not this export's.
        let c = try w.submit("exp-inc-0003", w.second, ["size": 3])
        #expect(try f.client.post("/v1/orgs/\(f.orgId)/responses/\(b)/review", token: f.reviewerToken,
                                  ["action": "startReview", "expectedRevision": 1]).status == 200)
        let elsewhere = try f.publishSurvey()
        _ = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, ResponseTests.submission("exp-inc-0004", elsewhere))
        let second = try w.csv("afterCursor=\(first.cursor)")
        #expect(second.rows.dropFirst().map { $0[0] } == [b, c])
        #expect(Self.column(second.rows, "reviewState", of: b) == "in_review" && Self.column(second.rows, "revision", of: b) == "2")
        #expect(second.cursor != first.cursor)
        // Nothing since: the header alone. The old cursor still gives the same two.
        let third = try w.csv("afterCursor=\(second.cursor)")
        #expect(third.rows.count == 1 && third.rows[0].first == "responseId")
        #expect(try w.csv("afterCursor=\(first.cursor)").rows.dropFirst().map { $0[0] } == [b, c])
        _ = a
    }

    @Test func expiredRolesAndTenancy() throws {
        let w = try World()
        let f = w.f
        let a = try w.submit("exp-rol-0001", w.second, ["size": 1])
        try f.expire()
        // An expired organization can always take its data out.
        let expired = try w.csv()
        #expect(expired.rows.dropFirst().map { $0[0] } == [a])
        #expect(try w.export("csv", token: f.adminToken).status == 200)
        let collector = try w.export("csv", token: f.collectorToken)
        #expect(collector.status == 403 && collector.errorCode == 1006)
        // Another organization's survey answers exactly like one that does not exist.
        let g = try Fixture(server: f.server)
        let foreign = try g.client.get("/v1/orgs/\(g.orgId)/surveys/\(w.surveyId)/responses.csv", token: g.reviewerToken)
        let missing = try g.client.get("/v1/orgs/\(g.orgId)/surveys/srv_nothing/responses.csv", token: g.reviewerToken)
        #expect(foreign.status == 404 && foreign.errorCode == 1005 && foreign.body == missing.body)
        let crossed = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(w.surveyId)/responses.csv", token: g.reviewerToken)
        #expect(crossed.status == 404 && crossed.errorCode == 1005)
        #expect(try f.client.get(w.base + ".csv").status == 401)
    }

    @Test func geoJSONHasAPointPerLocatedResponse() throws {
        let w = try World()
        let a = try w.submit("exp-geo-0001", w.second, ["size": 1, "loc": ["lat": -1.25, "lon": 36.5], "note": "by the road"])
        _ = try w.submit("exp-geo-0002", w.second, ["size": 2])
        let r = try w.export("geojson")
        #expect(r.status == 200 && r.header("content-type") == "application/geo+json" && r.header("surveyd-export-cursor") != nil)
        let doc = try JSONParser.parse(r.body)
        #expect(doc["type"]?.stringValue == "FeatureCollection")
        let features = doc["features"]?.arrayValue ?? []
        #expect(features.count == 1)
        #expect(features.first?["geometry"] == ["type": "Point", "coordinates": [36.5, -1.25]])
        #expect(features.first?["properties"]?["responseId"]?.stringValue == a && features.first?["properties"]?["note"]?.stringValue == "by the road")
        let bad = try w.export("geojson", "geoField=note")
        #expect(bad.status == 422 && bad.errorCode == 1002)
    }

    /// Runs a Python snippet over a file (the standard library's zipfile reads what a user's tools read).
    static func python(_ script: String, _ path: String) throws -> JSONValue {
        let (ended, data) = try SpawnedProcess.run("/usr/bin/env", ["python3", "-c", script, path])
        guard ended == .exited(0) else { throw TestFailure("python \(ended)") }
        return try JSONParser.parse(Array(data))
    }

    func upload(_ w: World, _ id: String, _ bytes: [UInt8]) throws {
        let r = try w.f.client.request("PUT", "/v1/orgs/\(w.f.orgId)/uploads/\(id)", token: w.f.collectorToken, body: bytes,
                                       headers: ["Survey-Version-Id": w.second.versionId, "Question-Id": "photo", "Content-Type": "image/png"])
        guard r.status == 201 else { throw TestFailure("upload: \(r.status) \(r.text)") }
    }

    @Test func theZipHoldsEveryFileByteForByteAndAManifest() throws {
        let w = try World()
        let png = { (fill: UInt8, n: Int) in [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: fill, count: n) }
        let small = png(1, 100), large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let big = png(0, 0) + large  // several chunks: sent a piece at a time
        try upload(w, "exp-zip-file-1", small)
        try upload(w, "exp-zip-file-2", big)
        let a = try w.submit("exp-zip-0001", w.second, ["size": 1, "photo": ["clientUploadId": "exp-zip-file-1"]])
        let b = try w.submit("exp-zip-0002", w.second, ["size": 2, "photo": ["clientUploadId": "exp-zip-file-2"]])
        let c = try w.submit("exp-zip-0003", w.second, ["size": 3])
        let r = try w.export("zip")
        #expect(r.status == 200 && r.header("content-type") == "application/zip")
        let path = w.f.server.dataDir + "/export-test.zip"
        FileManager.default.createFile(atPath: path, contents: Data(r.body))
        let seen = try Self.python("""
            import sys, json, zipfile, hashlib
            z = zipfile.ZipFile(sys.argv[1])
            assert z.testzip() is None
            m = json.loads(z.read("manifest.json"))
            files = {f["path"]: hashlib.sha256(z.read(f["path"])).hexdigest() for f in m["files"]}
            print(json.dumps({"names": z.namelist(), "manifest": m, "actual": files, "csv": z.read("responses.csv").decode()}))
            """, path)
        let files = seen["manifest"]?["files"]?.arrayValue ?? []
        #expect(files.count == 2)
        for (f, bytes) in zip(files, [small, big]) {
            let p = f["path"]!.stringValue!
            #expect(f["sha256"]?.stringValue == Digest.sha256Hex(bytes) && seen["actual"]?[p]?.stringValue == Digest.sha256Hex(bytes))
            #expect(f["size"]?.intValue == bytes.count && f["contentType"]?.stringValue == "image/png")
        }
        #expect(files.first?["path"]?.stringValue == "files/\(a)/photo-exp-zip-file-1.png")
        #expect(seen["names"]?.arrayValue?.compactMap(\.stringValue).suffix(2) == ["responses.csv", "manifest.json"])
        #expect(seen["manifest"]?["rows"]?.intValue == 3 && seen["manifest"]?["exportCursor"]?.stringValue == r.header("surveyd-export-cursor"))
        #expect(seen["manifest"]?["surveyId"]?.stringValue == w.surveyId)
        let rows = Self.parseCSV(seen["csv"]?.stringValue ?? "")
        #expect(Self.column(rows, "photo", of: b) == "files/\(b)/photo-exp-zip-file-2.png" && Self.column(rows, "photo", of: c) == "")
        // Nothing is left behind in the data dir's temp directory.
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.f.server.dataDir + "/tmp").isEmpty)
    }

    /// A zip without any file (no row has one; no row at all): a whole archive all the same, its
    /// manifest's list empty. (The empty list once ended the archive part-way.)
    @Test func aZipWithoutFilesIsWholeToo() throws {
        let w = try World()
        _ = try w.submit("exp-zip-none-1", w.second, ["size": 1])
        let all = try w.csv().rows.count - 1  // without the header
        #expect(all >= 1)
        for (query, rows) in [("", all), ("receivedFrom=2100-01-01T00:00:00Z", 0)] {
            let r = try w.export("zip", query)
            #expect(r.status == 200)
            let path = w.f.server.dataDir + "/export-empty.zip"
            FileManager.default.createFile(atPath: path, contents: Data(r.body))
            let seen = try Self.python("""
                import sys, json, zipfile
                z = zipfile.ZipFile(sys.argv[1])
                assert z.testzip() is None
                print(json.dumps({"names": z.namelist(), "manifest": json.loads(z.read("manifest.json"))}))
                """, path)
            #expect(seen["names"]?.arrayValue?.compactMap(\.stringValue) == ["responses.csv", "manifest.json"])
            #expect(seen["manifest"]?["files"]?.arrayValue?.isEmpty == true && seen["manifest"]?["rows"]?.intValue == rows)
        }
    }

    @Test func theXLSXSheetHasTypedCells() throws {
        let w = try World()
        let a = try w.submit("exp-xls-0001", w.second, ["size": 2.5, "note": "=1+1"])
        let r = try w.export("xlsx")
        #expect(r.status == 200 && r.header("content-type") == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
        #expect(r.header("surveyd-export-cursor") != nil)
        let path = w.f.server.dataDir + "/export-test.xlsx"
        FileManager.default.createFile(atPath: path, contents: Data(r.body))
        let sheet = try Self.python("""
            import sys, json, zipfile, re
            x = zipfile.ZipFile(sys.argv[1]).read("xl/worksheets/sheet1.xml").decode()
            cells = re.findall(r'<c r="([A-Z]+)(\\d+)"([^>]*)>(.*?)</c>', x)
            print(json.dumps([[c[0] + c[1], 'inlineStr' in c[2], re.sub('<[^>]+>', '', c[3])] for c in cells]))
            """, path).arrayValue ?? []
        let byRef = Dictionary(sheet.map { c in let v = c.arrayValue!; return (v[0].stringValue!, (v[1].boolValue!, v[2].stringValue!)) },
                               uniquingKeysWith: { a, _ in a })
        #expect(byRef["A1"]?.1 == "responseId" && byRef["A2"]?.1 == a)
        // size (column L): a number cell; receivedAt (G): a number with a date format; note: text, as written.
        #expect(byRef["L1"]?.1 == "size" && byRef["L2"]?.0 == false && byRef["L2"]?.1 == "2.5")
        #expect(byRef["G2"]?.0 == false && (Double(byRef["G2"]?.1 ?? "") ?? 0) > 46_000)
        #expect(byRef["Q1"]?.1 == "note" && byRef["Q2"]?.0 == true && byRef["Q2"]?.1 == "=1+1")
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.f.server.dataDir + "/tmp").isEmpty)
    }

    @Test(.enabled(if: !TestEngine.isPostgres, "copies rows in SQLite SQL and watches the WAL checkpoint")) func aClientThatGoesAwayEndsTheExportAndItsSnapshot() throws {
        let w = try World()
        _ = try w.submit("exp-gone-template", w.second, ["size": 1, "note": .string(String(repeating: "n", count: 2000))])
        // 20,000 more rows, copied in SQL: ~40 MB of CSV, far more than the socket buffers hold.
        let db = try Connection(path: w.f.server.dataDir + "/surveyd.sqlite", readOnly: false)
        _ = try db.query("PRAGMA busy_timeout = 0")  // a blocked checkpoint answers at once
        try db.execute("""
            WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 20000)
            INSERT INTO responses SELECT printf('rsp_bulk_%06d', n), org_id, printf('bulk-%06d', n), submitter, survey_id,
              survey_version_id, request_digest, request_body, answers, field_task_id, captured_at, received_at, review_state,
              revision, request_sha256, accepted_survey_version_id, first_review_state, edits
            FROM responses, c WHERE client_submission_id = 'exp-gone-template'
            """)
        let fd = try w.f.client.connect()
        let head = "GET \(w.base).csv HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(w.f.reviewerToken)\r\n\r\n"
        #expect(RawHTTPClient.sendAll(fd, Array(head.utf8)))
        var buffer = [UInt8](repeating: 0, count: 65536)
        #expect(recv(fd, &buffer, buffer.count, 0) > 0)  // the export has begun
        // A write after the export's snapshot began: while the snapshot is open, the WAL cannot
        // be reset past it.
        _ = try w.submit("exp-gone-after", w.second, ["size": 2])
        let busy = { () throws -> Int64 in try db.query("PRAGMA wal_checkpoint(TRUNCATE)").first?.int("busy") ?? -1 }
        #expect(try busy() == 1)
        close(fd)
        var freed = false
        for _ in 0..<100 where !freed {
            Thread.sleep(forTimeInterval: 0.05)
            freed = try busy() == 0
        }
        #expect(freed, "the export's snapshot stayed open after its client left")
        #expect(try w.f.client.get("/healthz").status == 200)
    }
}
