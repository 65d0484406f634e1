import Foundation
import Testing
import SurveyDomain
@testable import SurveyStorage

/// Exports at their edges, on a real server: a cell longer than a spreadsheet holds, characters
/// XML forbids, refused and failed exports, cursors seen by one organization among several, and
/// zip entry names every file system accepts.
@Suite struct ExportEdgeCaseTests {
    typealias World = ExportTests.World

    /// The workbook's cells of one row by column letter, each decoded as a spreadsheet reads it
    /// (`_xHHHH_` is a character), read by expat: a sheet it refuses fails the script.
    static func sheetRow(_ path: String, row: Int) throws -> [String: String] {
        let cells = try ExportTests.python("""
            import sys, json, re, zipfile
            import xml.etree.ElementTree as ET
            ns = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
            root = ET.fromstring(zipfile.ZipFile(sys.argv[1]).read("xl/worksheets/sheet1.xml"))
            unescape = lambda s: re.sub(r"_x([0-9A-Fa-f]{4})_", lambda m: chr(int(m.group(1), 16)), s)
            out = {}
            for c in root.iter("{%s}c" % ns["m"]):
                ref = re.match(r"([A-Z]+)(\\d+)", c.get("r"))
                if int(ref.group(2)) != \(row): continue
                t = c.find("m:is/m:t", ns)
                v = c.find("m:v", ns)
                out[ref.group(1)] = unescape(t.text or "") if t is not None else (v.text if v is not None else "")
            print(json.dumps(out))
            """, path)
        var out: [String: String] = [:]
        for (k, v) in cells.objectValue ?? [:] { out[k] = v.stringValue }
        return out
    }

    static func saved(_ reply: Reply, _ w: World, _ name: String) -> String {
        let path = w.f.server.dataDir + "/" + name
        FileManager.default.createFile(atPath: path, contents: Data(reply.body))
        return path
    }

    /// The column letter of `name` in the export's header.
    static func letter(_ w: World, _ name: String) throws -> String {
        let header = try w.csv().rows.first ?? []
        let i = try #require(header.firstIndex(of: name))
        return String(UnicodeScalar(UInt8(ascii: "A") + UInt8(i)))
    }

    @Test func anAnswerLongerThanACellIsCutByCodePointsAndSaysSo() throws {
        let w = try World()
        let combining = String(repeating: "e\u{301}", count: 20_000)  // 40,000 code points, 20,000 characters
        let emoji = String(repeating: "😀", count: 20_000)  // 20,000 code points, 40,000 UTF-16 units
        let a = try w.submit("exp-long-0001", w.second, ["size": 1, "note": .string(combining)])
        let b = try w.submit("exp-long-0002", w.second, ["size": 2, "note": .string(emoji)])
        let c = try w.submit("exp-long-0003", w.second, ["size": 3, "note": "short"])
        let r = try w.export("xlsx")
        #expect(r.status == 200, "\(r.status) \(r.text.prefix(300))")
        try #require(r.status == 200)
        let path = Self.saved(r, w, "long.xlsx")
        let note = try Self.letter(w, "note")
        let first = try Self.sheetRow(path, row: 2), second = try Self.sheetRow(path, row: 3), third = try Self.sheetRow(path, row: 4)
        #expect(first["A"] == a && second["A"] == b && third["A"] == c)
        let marker = "… [cut: 40000 characters in all; the CSV has the whole text]"
        let cut = first[note] ?? "", cutEmoji = second[note] ?? ""
        // The library's measure (code points) and Excel's (UTF-16 units) both within 32,767.
        #expect(cut.unicodeScalars.count <= 32_767 && cut.utf16.count <= 32_767)
        #expect(cutEmoji.unicodeScalars.count <= 32_767 && cutEmoji.utf16.count <= 32_767)
        #expect(cut.hasSuffix(marker) && cut.unicodeScalars.count > 32_000)
        // Cut between characters: the text before the marker is whole "é"s.
        let kept = String(cut.dropLast(marker.count))
        #expect(!kept.isEmpty && kept.unicodeScalars.count % 2 == 0 && combining.hasPrefix(kept))
        #expect(cutEmoji.hasSuffix("… [cut: 20000 characters in all; the CSV has the whole text]"))
        #expect(emoji.hasPrefix(String(cutEmoji.prefix { $0 == "😀" })))
        #expect(third[note] == "short")
        // The CSV cuts nothing.
        let rows = try w.csv().rows
        #expect(ExportTests.column(rows, "note", of: a) == combining && ExportTests.column(rows, "note", of: b) == emoji)
    }

    @Test func charactersXMLForbidsReachTheSheetEscapedAndReadBackExactly() throws {
        let w = try World()
        let text = "a\u{FFFE}b\u{FFFF}c\u{1}d\u{1F}e\u{0}f\rg\th\ni_x0041_j_x00"
        let a = try w.submit("exp-xmlc-0001", w.second, ["size": 1, "note": .string(text)])
        let r = try w.export("xlsx")
        #expect(r.status == 200)
        let path = Self.saved(r, w, "chars.xlsx")
        let cells = try Self.sheetRow(path, row: 2)
        #expect(cells["A"] == a)
        #expect(cells[try Self.letter(w, "note")] == text)
    }

    /// Counts every audit entry: a refusal must leave none of any kind.
    static func audited(_ w: World) throws -> Int64 { try w.f.server.count("SELECT COUNT(*) AS n FROM audit") }

    @Test func aRefusedExportLeavesNoAuditEntry() throws {
        let w = try World()
        _ = try w.submit("exp-refu-0001", w.second, ["size": 1, "loc": ["lat": 1, "lon": 2]])
        let plain = try w.f.publishSurvey()  // a survey without a geopoint question
        let before = try Self.audited(w)
        let notGeo = try w.export("geojson", "geoField=note")
        #expect(notGeo.status == 422 && notGeo.errorCode == 1002)
        let none = try w.f.client.get("/v1/orgs/\(w.f.orgId)/surveys/\(plain.surveyId)/responses.geojson", token: w.f.reviewerToken)
        #expect(none.status == 422 && none.errorCode == 1002)
        #expect(try Self.audited(w) == before)
        // The same export sent is audited once.
        #expect(try w.export("geojson", "geoField=loc").status == 200)
        #expect(try Self.audited(w) == before + 1)
    }

    @Test func anExportThatFailsBeforeItsFirstByteLeavesNoAuditEntry() throws {
        let w = try World()
        _ = try w.submit("exp-fail-0001", w.second, ["size": 1])
        // The temp directory replaced by a file: neither a workbook nor the zip's temp files can be made.
        let temp = w.f.server.dataDir + "/tmp"
        try FileManager.default.removeItem(atPath: temp)
        FileManager.default.createFile(atPath: temp, contents: Data())
        defer {
            try? FileManager.default.removeItem(atPath: temp)
            try? FileManager.default.createDirectory(atPath: temp, withIntermediateDirectories: true)
        }
        let before = try Self.audited(w)
        let zip = try w.export("zip")
        #expect(zip.status == 503 && zip.errorCode == 1040)
        try #require(try Self.audited(w) == before, "a zip that was never sent is audited")
        let xlsx = try w.export("xlsx")
        #expect(xlsx.status == 503 && xlsx.errorCode == 1040)
        #expect(try Self.audited(w) == before)
    }

    @Test func cursorsRevealNothingOfOtherOrganizations() throws {
        let w = try World()
        let f = w.f
        let g = try Fixture(server: f.server)
        let other = try g.publishSurvey()
        _ = try w.submit("exp-curs-0001", w.second, ["size": 1])
        let first = try w.csv().cursor
        // Organization B writes between A's exports.
        for i in 0..<5 {
            let r = try g.client.post("/v1/orgs/\(g.orgId)/responses", token: g.collectorToken,
                                      ResponseTests.submission("exp-curs-b-000\(i)", other))
            #expect(r.status == 201)
        }
        let b = try g.client.get("/v1/orgs/\(g.orgId)/surveys/\(other.surveyId)/responses.csv", token: g.reviewerToken)
        let foreign = try #require(b.header("surveyd-export-cursor"))
        let a2 = try w.submit("exp-curs-0002", w.second, ["size": 2])
        let second = try w.csv("afterCursor=\(first)")
        // Exactly A's own change since, as before.
        #expect(second.rows.dropFirst().map { $0[0] } == [a2])
        // Opaque: no number in them to subtract, and the same shape whatever happened meanwhile.
        let latest = try f.server.count("SELECT MAX(seq) AS n FROM audit")
        for c in [first, second.cursor, foreign] {
            #expect(c.hasPrefix("ec2.") && c.count == first.count, "\(c)")
            #expect(Int64(c.dropFirst(4)) == nil && c.split(separator: ".").allSatisfy { Int64($0) == nil }, "\(c)")
            let bytes = Base64.decode(String(c.dropFirst(4))) ?? []
            for seq in 1...latest {
                let be = (0..<8).reversed().map { UInt8(truncatingIfNeeded: seq >> ($0 * 8)) }
                let windows = bytes.count < 8 ? [] : (0...(bytes.count - 8)).map { Array(bytes[$0..<($0 + 8)]) }
                #expect(!windows.contains(be) && !windows.contains(be.reversed()))
            }
        }
        // Refused as never issued (1031): B's cursor in A, a tampered one, the older integer form.
        var tampered = Array(second.cursor.utf8)
        let at = max(tampered.count - 2, 0)
        tampered[at] = tampered[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        for cursor in [foreign, String(decoding: tampered, as: UTF8.self), "ec1.\(latest - 1)", "ec1.0", "ec2.", "ec2.!!"] {
            let r = try w.export("csv", "afterCursor=\(cursor)")
            #expect(r.status == 400 && r.errorCode == 1031, "\(cursor)")
            #expect(r.text.contains("afterCursor is not a cursor this server issued"))
        }
        // B's own cursor still works for B.
        #expect(try g.client.get("/v1/orgs/\(g.orgId)/surveys/\(other.surveyId)/responses.csv?afterCursor=\(foreign)",
                                 token: g.reviewerToken).status == 200)
    }

    @Test func zipEntryNamesExtractOnEveryFileSystemAndStayUnique() throws {
        let f = try Fixture()
        let definition: JSONValue = ["title": "Sites", "questions": [
            ["id": "photo", "type": "file", "label": "Photo", "accept": ["image/png"]],
            ["id": "Photo", "type": "file", "label": "Another photo", "accept": ["image/png"]],
        ]]
        let s = try f.publishSurvey(definition: definition)
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]
        // ':' is allowed in a clientUploadId; on Windows it names an alternate data stream.
        for (id, question) in [("cam:0001:a", "photo"), ("cam_0001_a", "Photo")] {
            let r = try f.client.request("PUT", "/v1/orgs/\(f.orgId)/uploads/\(id)", token: f.collectorToken, body: png,
                                         headers: ["Survey-Version-Id": s.versionId, "Question-Id": question, "Content-Type": "image/png"])
            #expect(r.status == 201, "\(r.text)")
        }
        let sub = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                    ResponseTests.submission("exp-name-0001", s, answers: ["photo": ["clientUploadId": "cam:0001:a"],
                                                                                          "Photo": ["clientUploadId": "cam_0001_a"]]))
        #expect(sub.status == 201, "\(sub.text)")
        let r = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(s.surveyId)/responses.zip", token: f.reviewerToken)
        #expect(r.status == 200)
        let path = f.server.dataDir + "/names.zip"
        FileManager.default.createFile(atPath: path, contents: Data(r.body))
        let seen = try ExportTests.python("""
            import sys, json, zipfile
            z = zipfile.ZipFile(sys.argv[1])
            m = json.loads(z.read("manifest.json"))
            print(json.dumps({"names": z.namelist(), "paths": [f["path"] for f in m["files"]], "ids": [f["clientUploadId"] for f in m["files"]],
                              "sizes": [len(z.read(f["path"])) for f in m["files"]], "csv": z.read("responses.csv").decode()}))
            """, path)
        let names = seen["names"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(names.count == 4, "\(names)")
        let reserved = Set(["CON", "PRN", "AUX", "NUL"] + (1...9).flatMap { ["COM\($0)", "LPT\($0)"] })
        for name in names {
            for part in name.split(separator: "/", omittingEmptySubsequences: false) {
                #expect(!part.isEmpty && !part.unicodeScalars.contains { ":*?\"<>|\\".unicodeScalars.contains($0) || $0.value < 0x20 }, "\(name)")
                #expect(part.last != "." && part.last != " ", "\(name)")
                let stem = part.split(separator: ".", maxSplits: 1).first.map { String($0).uppercased() } ?? ""
                #expect(!reserved.contains(stem.trimmingCharacters(in: .whitespaces)), "\(name)")
            }
        }
        // Unique even where case does not count (Windows, macOS).
        #expect(Set(names.map { $0.lowercased() }).count == names.count, "\(names)")
        let paths = seen["paths"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(paths.count == 2 && Set(paths).isSubset(of: Set(names)))
        #expect(Set(seen["ids"]?.arrayValue?.compactMap(\.stringValue) ?? []) == ["cam:0001:a", "cam_0001_a"])
        #expect(seen["sizes"]?.arrayValue?.compactMap(\.intValue) == [png.count, png.count])
        // The CSV's file cells name the entries as they are in the zip.
        let rows = ExportTests.parseCSV(seen["csv"]?.stringValue ?? "")
        let rid = rows.dropFirst().first?.first ?? ""
        #expect(Set([ExportTests.column(rows, "photo", of: rid), ExportTests.column(rows, "Photo", of: rid)].compactMap { $0 }) == Set(paths))
    }
}
