import Foundation
import Testing
import SurveyDomain
@testable import SurveyStorage

/// Repeats whose ids cannot all be sheet or file names as they are, exported on a real server:
/// an id longer than a sheet name holds (31 characters), two ids that differ only in case, a
/// repeat named like the responses' sheet. The workbook has one distinct sheet per repeat and the
/// zip one distinct table per repeat, told apart where case does not count (Excel, Windows,
/// macOS), and both say which repeat each name stands for.
@Suite struct ExportSheetNameTests {
    /// A survey with one question and these repeats, side by side; one response in which the
    /// repeat at index `i` has `i + 1` instances. Returns the fixture, the survey and the response.
    static func world(_ repeats: [String]) throws -> (f: Fixture, surveyId: String, responseId: String) {
        let f = try Fixture()
        var questions: [JSONValue] = [["id": "site", "type": "text", "label": "Site"]]
        var answers: [String: JSONValue] = ["site": "north"]
        for (i, id) in repeats.enumerated() {
            // Ids are unique across the whole definition: each repeat asks its own question.
            questions.append(["id": .string(id), "type": "repeat", "label": .string("Repeat \(i)"),
                              "children": [["id": .string("q\(i)"), "type": "text", "label": "Name"]]])
            answers[id] = .array((1...(i + 1)).map { n in ["q\(i)": .string("\(id) \(n)")] })
        }
        let v = try f.publishSurvey(definition: ["title": "Names", "questions": .array(questions)])
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("sheet-names-0001", v, answers: .object(answers)))
        guard r.status == 201, let rid = r.json?["responseId"]?.stringValue else { throw TestFailure("submit: \(r.status) \(r.text)") }
        return (f, v.surveyId, rid)
    }

    /// The workbook's sheet names in order, each sheet's `KEY` column (B) below its header, and
    /// its custom document properties, read by Python's zipfile and expat.
    static func workbook(_ f: Fixture, _ surveyId: String) throws -> (names: [String], keys: [[String]], properties: [String: String]) {
        let r = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(surveyId)/responses.xlsx", token: f.reviewerToken)
        try #require(r.status == 200, "responses.xlsx: \(r.status) \(r.text)")
        let path = f.server.dataDir + "/sheet-names.xlsx"
        FileManager.default.createFile(atPath: path, contents: Data(r.body))
        let seen = try ExportTests.python("""
            import sys, json, zipfile, re
            import xml.etree.ElementTree as ET
            m = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
            z = zipfile.ZipFile(sys.argv[1])
            assert z.testzip() is None
            names = [s.get("name") for s in ET.fromstring(z.read("xl/workbook.xml")).iter(m + "sheet")]
            keys = []
            for i in range(len(names)):
                sheet = ET.fromstring(z.read("xl/worksheets/sheet%d.xml" % (i + 1)))
                column = []
                for c in sheet.iter(m + "c"):
                    ref = re.match(r"([A-Z]+)(\\d+)", c.get("r"))
                    if ref.group(1) == "B" and int(ref.group(2)) > 1:
                        t = c.find(m + "is/" + m + "t")
                        column.append(t.text if t is not None else "")
                keys.append(column)
            properties = {}
            if "docProps/custom.xml" in z.namelist():
                for p in ET.fromstring(z.read("docProps/custom.xml")):
                    properties[p.get("name")] = "".join(p.itertext())
            print(json.dumps({"names": names, "keys": keys, "properties": properties}))
            """, path)
        return (seen["names"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                seen["keys"]?.arrayValue?.map { $0.arrayValue?.compactMap(\.stringValue) ?? [] } ?? [],
                (seen["properties"]?.objectValue ?? [:]).compactMapValues(\.stringValue))
    }

    /// The zip's entry names in order, the manifest's `tables`, and each table's `KEY` column.
    static func archive(_ f: Fixture, _ surveyId: String) throws -> (names: [String], tables: [JSONValue], keys: [String: [String]]) {
        let r = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(surveyId)/responses.zip", token: f.reviewerToken)
        try #require(r.status == 200, "responses.zip: \(r.status) \(r.text)")
        let path = f.server.dataDir + "/sheet-names.zip"
        FileManager.default.createFile(atPath: path, contents: Data(r.body))
        let seen = try ExportTests.python("""
            import sys, json, zipfile, csv, io
            z = zipfile.ZipFile(sys.argv[1])
            assert z.testzip() is None
            keys = {}
            for name in z.namelist():
                if name.startswith("responses-") and name.endswith(".csv"):
                    keys[name] = [row[1] for row in list(csv.reader(io.StringIO(z.read(name).decode("utf-8-sig"))))[1:]]
            print(json.dumps({"names": z.namelist(), "tables": json.loads(z.read("manifest.json")).get("tables"), "keys": keys}))
            """, path)
        return (seen["names"]?.arrayValue?.compactMap(\.stringValue) ?? [], seen["tables"]?.arrayValue ?? [],
                (seen["keys"]?.objectValue ?? [:]).mapValues { $0.arrayValue?.compactMap(\.stringValue) ?? [] })
    }

    /// Exports `repeats` as zip and XLSX and checks both against the names expected: one
    /// distinct table per repeat, and one distinct, valid sheet per repeat holding that repeat's
    /// rows. The zip comes first, so a workbook that is refused does not hide what the zip did.
    static func check(_ repeats: [String], sheets expectedSheets: [String], entries expectedEntries: [String]) throws {
        let (f, surveyId, rid) = try Self.world(repeats)
        // The rows repeat `i` adds, by KEY.
        let keys = repeats.enumerated().map { i, id in (1...(i + 1)).map { "\(rid)/\(id)[\($0)]" } }

        let archive = try Self.archive(f, surveyId)
        let tables = archive.names.filter { $0.hasPrefix("responses-") }
        #expect(tables == expectedEntries)
        #expect(Set(archive.names.map { $0.lowercased() }).count == archive.names.count, "entry names must differ in more than case: \(archive.names)")
        #expect(archive.tables == zip(repeats, expectedEntries).map { ["repeatId": .string($0), "path": .string($1)] })
        #expect(expectedEntries.map { archive.keys[$0] ?? [] } == keys)

        let book = try Self.workbook(f, surveyId)
        #expect(book.names == ["responses"] + expectedSheets)
        #expect(Set(book.names.map { $0.lowercased() }).count == book.names.count, "sheet names must differ in more than case: \(book.names)")
        for name in book.names {
            #expect(!name.isEmpty && name.unicodeScalars.count <= 31 && name.utf16.count <= 31, "\(name)")
            #expect(!name.contains(where: { "[]:*?/\\".contains($0) }) && name.first != "'" && name.last != "'", "\(name)")
        }
        // Each repeat's sheet holds that repeat's rows, and the workbook says which repeat it is.
        #expect(Array(book.keys.dropFirst()) == keys)
        #expect(book.properties == Dictionary(uniqueKeysWithValues: zip(expectedSheets, repeats)))
    }

    /// Excel keeps 31 characters of a sheet name; ids may have 64, so two may share their first 31.
    @Test func idsLongerThanASheetNameGetDistinctSheets() throws {
        try Self.check(["household_members_roster_section_a", "household_members_roster_section_b"],
                       sheets: ["household_members_roster_sectio", "household_members_roster_sect~2"],
                       entries: ["responses-household_members_roster_section_a.csv", "responses-household_members_roster_section_b.csv"])
    }

    /// Excel, Windows and macOS compare names without case.
    @Test func idsThatDifferOnlyInCaseGetDistinctSheetsAndFiles() throws {
        try Self.check(["members", "Members"], sheets: ["members", "Members~2"],
                       entries: ["responses-members.csv", "responses-Members~2.csv"])
    }

    /// A repeat named `responses` never takes the responses' sheet, nor the name of another repeat.
    @Test func aRepeatNamedResponsesBesideOneNamedRepeatResponses() throws {
        try Self.check(["responses", "repeat_responses"], sheets: ["responses~2", "repeat_responses"],
                       entries: ["responses-responses.csv", "responses-repeat_responses.csv"])
    }

    /// `Responses` is `responses` to Excel.
    @Test func aRepeatNamedResponsesInAnotherCase() throws {
        try Self.check(["Responses"], sheets: ["Responses~2"], entries: ["responses-Responses.csv"])
    }

    /// Ids that are sheet names as they are keep them: the common case is unchanged.
    @Test func idsThatFitKeepTheirNames() throws {
        try Self.check(["people", "visits"], sheets: ["people", "visits"], entries: ["responses-people.csv", "responses-visits.csv"])
    }

    /// A repeat's count column stands where the repeat stands in the form, in the responses'
    /// table and in a repeat's own table alike, as ODK Central places it.
    @Test func aRepeatsCountColumnKeepsTheFormsOrder() throws {
        let f = try Fixture()
        let v = try f.publishSurvey(definition: ["title": "Order", "questions": [
            ["id": "before", "type": "text", "label": "Before"],
            ["id": "members", "type": "repeat", "label": "Member", "children": [
                ["id": "name", "type": "text", "label": "Name"],
                ["id": "phones", "type": "repeat", "label": "Phone", "children": [["id": "number", "type": "text", "label": "Number"]]],
                ["id": "age", "type": "integer", "label": "Age"],
            ]],
            ["id": "g", "type": "group", "label": "G", "children": [["id": "after", "type": "text", "label": "After"]]],
        ]])
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, ResponseTests.submission("order-0001", v, answers: [
            "before": "b", "after": "a", "members": [["name": "Ama", "age": 30, "phones": [["number": "1"], ["number": "2"]]]],
        ]))
        #expect(r.status == 201, "\(r.text)")
        let csv = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(v.surveyId)/responses.csv", token: f.reviewerToken)
        let header = csv.text.split(separator: "\r\n").first.map { $0.split(separator: ",").map(String.init) } ?? []
        #expect(Array(header.suffix(3)) == ["before", "members", "after"], "\(header)")
        let row = csv.text.split(separator: "\r\n").dropFirst().first.map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) } ?? []
        #expect(Array(row.suffix(3)) == ["b", "1", "a"], "\(row)")
        let zip = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(v.surveyId)/responses.zip", token: f.reviewerToken)
        let path = f.server.dataDir + "/order.zip"
        FileManager.default.createFile(atPath: path, contents: Data(zip.body))
        let members = try ExportTests.python("""
            import sys, json, zipfile
            z = zipfile.ZipFile(sys.argv[1])
            print(json.dumps(z.read("responses-members.csv").decode().split("\\r\\n")[0].split(",")))
            """, path)
        #expect(members == ["PARENT_KEY", "KEY", "name", "phones", "age"], "\(members)")
    }
}
