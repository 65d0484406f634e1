import Foundation
import SurveyDomain
import SurveyStorage
import Testing
@testable import SurveyExports

/// The CSV writer reads stored answers without parsing them into values; it must write exactly
/// what the general path (`CSVEncoder.line(columns.cells(row))`) writes, for every kind of answer.
@Suite struct CSVRowWriterTests {
    static let definition: JSONValue = ["title": "t", "questions": [
        ["id": "n", "type": "integer", "label": "n"],
        ["id": "d", "type": "decimal", "label": "d"],
        ["id": "t", "type": "text", "label": "t"],
        ["id": "one", "type": "select_one", "label": "one", "choices": ["a", "b", "=c"]],
        ["id": "many", "type": "select_multiple", "label": "many", "choices": ["a", "b", "-c", "d,e"]],
        ["id": "where", "type": "geopoint", "label": "where"],
        ["id": "day", "type": "date", "label": "day"],
        ["id": "photo", "type": "file", "label": "photo", "accept": ["image/png"]],
    ]]

    static func record(_ answers: String) -> ExportedResponse {
        ExportedResponse(responseId: "rsp_1", clientSubmissionId: "-starts-with-minus", surveyVersionId: "sv_1", submitter: "usr_1",
                         receivedAt: 1_700_000_001_000, capturedAt: 1_700_000_000_123, reviewState: .submitted, revision: 3,
                         fieldTaskId: "=task", answers: answers)
    }

    /// Answers as they are stored: canonical JSON, including shapes validation would refuse
    /// (a writer must not depend on it) and text that needs quoting or a formula guard.
    static let answers: [JSONValue] = [
        [:],
        ["n": 13, "d": 12.75, "t": "plain", "one": "a", "many": ["a", "b"], "where": ["lat": -1.2821, "lon": 36.8319, "accuracy": 4.5],
         "day": "2025-01-11", "photo": ["clientUploadId": "up-1"]],
        ["t": "=HYPERLINK(\"x\")", "one": "=c", "many": ["-c", "d,e"], "photo": ["clientUploadId": "+danger,id"]],
        ["t": "line one\nline \"two\", three\r\n", "many": [], "where": ["lat": 1, "lon": 2]],
        ["t": "\t@tab", "n": -0.0, "d": 1e21, "where": ["lat": 0.000001, "lon": -123.456789012345678, "accuracy": .null]],
        ["d": 0.001, "n": 1e15, "t": "\u{1F600} émoji \\ back\u{0007}slash \u{0000}nul"],
        ["d": 0.1, "n": 999_999_999_999_999, "t": 42, "one": ["not": "a string"], "many": "not an array", "where": "nowhere", "photo": "bare"],
        ["many": ["a", 3, .null, "b"], "n": "13", "d": true, "t": .null, "photo": ["other": 1], "unknown": ["deep": [1, [2, ["x": "y"]]]]],
        ["d": 123456789.125, "n": -42, "where": ["lat": -0.0, "lon": 1e-7, "accuracy": 100]],
        // Past the first eight bytes (read a word at a time): a comma, a quote, a control byte.
        ["t": "a fairly long sentence, with commas, and \"quotes\" well past the eighth byte\u{0001}, then a tab\t",
         "one": "0123456789abcdef,", "day": "0123456789abcdefghij\\"],
    ]

    @Test(arguments: [false, true])
    func writesWhatTheGeneralPathWrites(split: Bool) throws {
        let definition = try SurveyDefinition.parse(Self.definition)
        let columns = ExportColumns(definitions: [definition], splitSelectMultiples: split)
        var writer = CSVRowWriter(columns)
        for value in Self.answers + Self.answers {  // twice: the second round meets the key guesses of the first
            let record = Self.record(String(decoding: CanonicalJSON.encode(value), as: UTF8.self))
            var fast: [UInt8] = []
            writer.line(record, versionNumber: 2, submitterName: "Ann, \"the\" collector", file: nil, into: &fast)
            var general: [UInt8] = []
            CSVEncoder.line(columns.cells(ExportRow(record, versionNumber: 2, submitterName: "Ann, \"the\" collector")), into: &general)
            #expect(String(decoding: fast, as: UTF8.self) == String(decoding: general, as: UTF8.self), "answers \(record.answers)")
        }
    }

    /// The bytes themselves, written out by hand: RFC 4180 quoting (comma, quote, CR, LF; quotes
    /// doubled), the `'` before a text cell that starts like a formula (never before a number),
    /// UTF-8 as is, CRLF line ends — from the fast writer and the general path alike.
    @Test func writesTheExpectedBytes() throws {
        let columns = ExportColumns(definitions: [try SurveyDefinition.parse(Self.definition)], splitSelectMultiples: true)
        let metadata = #"rsp_1,'-starts-with-minus,sv_1,2,usr_1,"Ann, ""the"" collector",2023-11-14T22:13:21.000Z,2023-11-14T22:13:20.123Z,submitted,3,'=task,"#
        let cases: [(JSONValue, String)] = [
            (["n": 13, "d": 12.75, "t": "plain", "one": "a", "many": ["a", "b"], "where": ["lat": -1.2821, "lon": 36.8319, "accuracy": 4.5],
              "day": "2025-01-11", "photo": ["clientUploadId": "up-1"]],
             "13,12.75,plain,a,a b,1,1,0,0,-1.2821,36.8319,4.5,2025-01-11,up-1\r\n"),
            (["t": "=HYPERLINK(\"x\")", "one": "=c", "many": ["-c", "d,e"], "photo": ["clientUploadId": "+danger,id"]],
             #",,"'=HYPERLINK(""x"")",'=c,"'-c d,e",0,0,1,1,,,,,"'+danger,id""# + "\r\n"),
            (["t": "line one\nline \"two\", three\r\n", "many": [], "where": ["lat": 1, "lon": 2]],
             ",,\"line one\nline \"\"two\"\", three\r\n\",,,0,0,0,0,1,2,,,\r\n"),
            (["t": "\t@tab", "one": "@SUM(1)", "n": -7, "day": "\r2025"],
             "-7,,'\t@tab,'@SUM(1),,,,,,,,,\"'\r2025\",\r\n"),
            (["t": "\u{1F600} émoji — Ünïcödé", "one": "ñandú", "many": ["d,e"]],
             ",,\u{1F600} émoji — Ünïcödé,ñandú,\"d,e\",0,0,0,1,,,,,\r\n"),
        ]
        var writer = CSVRowWriter(columns)
        for (answers, expected) in cases {
            let record = Self.record(String(decoding: CanonicalJSON.encode(answers), as: UTF8.self))
            var fast: [UInt8] = []
            writer.line(record, versionNumber: 2, submitterName: "Ann, \"the\" collector", file: nil, into: &fast)
            var general: [UInt8] = []
            CSVEncoder.line(columns.cells(ExportRow(record, versionNumber: 2, submitterName: "Ann, \"the\" collector")), into: &general)
            // Bytes, not Strings: Swift's String equality would take "é" and "e\u{301}" as equal.
            #expect(fast == Array((metadata + expected).utf8), "wrote \(String(decoding: fast, as: UTF8.self).debugDescription)")
            #expect(general == fast)
        }
        // The header, after the byte order mark a spreadsheet needs to read the file as UTF-8.
        var head = CSVEncoder.byteOrderMark
        CSVEncoder.line(columns.header, into: &head)
        #expect(head == [0xEF, 0xBB, 0xBF] + Array(("responseId,clientSubmissionId,surveyVersionId,versionNumber,submittedBy,submitterName,receivedAt," +
            "capturedAt,reviewState,revision,fieldTaskId,n,d,t,one,many,many/a,many/b,many/-c,\"many/d,e\",where.lat,where.lon,where.accuracy,day,photo\r\n").utf8))
    }

    @Test func fileCellsGoThroughTheZipsPaths() throws {
        let columns = ExportColumns(definitions: [try SurveyDefinition.parse(Self.definition)], splitSelectMultiples: false)
        var writer = CSVRowWriter(columns)
        let record = Self.record(#"{"photo":{"clientUploadId":"up-1"}}"#)
        var fast: [UInt8] = []
        writer.line(record, versionNumber: nil, submitterName: nil, file: { "files/\($0)-\($1).png" }, into: &fast)
        var general: [UInt8] = []
        CSVEncoder.line(columns.cells(ExportRow(record, versionNumber: nil, submitterName: nil), file: { "files/\($0)-\($1).png" }), into: &general)
        #expect(fast == general)
        #expect(String(decoding: fast, as: UTF8.self).hasSuffix(",files/photo-up-1.png\r\n"))
    }

    @Test func answersThatAreNotJSONTakeTheGeneralPath() throws {
        let columns = ExportColumns(definitions: [try SurveyDefinition.parse(Self.definition)], splitSelectMultiples: false)
        var writer = CSVRowWriter(columns)
        for broken in [#"{"n":13"#, #"{"t":"unterminated}"#, "", "[]", #"{"n":1}x"#, #"{"t":"\ud800"}"#] {
            let record = Self.record(broken)
            var fast: [UInt8] = []
            writer.line(record, versionNumber: nil, submitterName: nil, file: nil, into: &fast)
            var general: [UInt8] = []
            CSVEncoder.line(columns.cells(ExportRow(record, versionNumber: nil, submitterName: nil)), into: &general)
            #expect(fast == general, "answers \(broken)")
        }
    }
}
