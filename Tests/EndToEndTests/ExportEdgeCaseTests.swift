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
    static func audited(_ w: World) throws -> Int64 { try w.f.server.count("SELECT COUNT(*) FROM audit") }

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
}
