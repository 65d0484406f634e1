import Foundation
import SurveyDomain
import Testing
@testable import SurveyExports

/// `StoredCells` reads what `ExportColumns.cells(of:_:)` gives for a parsed answer, cell by
/// cell, with what a JSON writer needs besides (a text that is `""` is not an empty cell; a text
/// not marked `escaped` is its own JSON string's inside; a geopoint's altitude); `StoredAnswers`
/// finds a repeat's instances and counts files as the parsed tree would.
@Suite struct StoredCellsTests {
    static let answers = CSVRowWriterTests.answers + [
        ["t": "", "many": [], "where": ["lat": 1.5, "lon": -2, "accuracy": 3, "altitude": 1650.25]],
        ["t": "q\"uote \\ back \u{1F} ctl", "one": "\u{1F600}", "many": ["\t", "x\"y"], "photo": ["clientUploadId": ""]],
    ]

    @Test func cellsAreTheParsedAnswersCells() throws {
        let columns = ExportColumns(definitions: [try SurveyDefinition.parse(CSVRowWriterTests.definition)], splitSelectMultiples: false)
        var cells = StoredCells(questions: columns.questions, choices: nil)
        for value in Self.answers + Self.answers {  // twice: the second round meets the key guesses of the first
            var text = String(decoding: CanonicalJSON.encode(value), as: UTF8.self)
            #expect(text.withUTF8 { cells.read($0) }, "\(text)")
            for (i, q) in columns.questions.enumerated() {
                let expected = columns.cells(of: q, value[q.id])
                for (k, cell) in expected.enumerated() {
                    let span = cells.spans[cells.firstCell[i] + k]
                    let bytes = Array(cells.bytes(of: span))
                    switch cell {
                    case .empty: #expect(span.kind == .empty, "\(q.id) of \(text)")
                    case .text(let s):
                        #expect(span.kind == .text && bytes == Array(s.utf8), "\(q.id) of \(text)")
                        if !span.escaped { #expect(CanonicalJSON.encode(.string(s)) == [34] + bytes + [34], "\(q.id) of \(text)") }
                    case .number(let d):
                        #expect(span.kind == .number && Double(String(decoding: bytes, as: UTF8.self)) == d, "\(q.id) of \(text)")
                    case .timestamp: Issue.record("an answer is never a timestamp")
                    }
                }
                if q.type == .geopoint {
                    let altitude = value[q.id]?["altitude"]?.doubleValue
                    let span = cells.altitudes[i]
                    #expect((span.kind == .number ? Double(String(decoding: cells.bytes(of: span), as: UTF8.self)) : nil) == altitude)
                }
            }
        }
    }

    @Test func instancesAndFilesAreTheParsedTreesOnes() throws {
        let documents: [JSONValue] = [
            [:],
            ["members": [["name": "a"], "not an object", ["name": "b", "photo": ["clientUploadId": "u1"]]], "other": [1, 2]],
            ["members": "not an array", "photo": ["clientUploadId": "u2", "nested": ["clientUploadId": "u3"]]],
            ["x": ["y": [["clientUploadId": "u4"], ["clientUploadId": 5], ["clientUpload": "u5"]]], "members": []],
            ["t": "a \"clientUploadId\" in a text, and U without it", "members": [[:]]],
        ]
        func files(_ v: JSONValue) -> Int {
            switch v {
            case .object(let o): return o["clientUploadId"]?.stringValue != nil ? 1 : o.values.reduce(0) { $0 + files($1) }
            case .array(let a): return a.reduce(0) { $0 + files($1) }
            default: return 0
            }
        }
        for value in documents {
            let bytes = CanonicalJSON.encode(value)
            let found = bytes.withUnsafeBufferPointer { StoredAnswers.instances(of: Array("members".utf8), in: $0) }
            let expected = (value["members"]?.arrayValue ?? []).map { CanonicalJSON.encode($0) }
            #expect(found.map { $0.map { Array(bytes[$0]) } } == expected, "\(value)")
            #expect(bytes.withUnsafeBufferPointer { StoredAnswers.fileCount($0) } == files(value), "\(value)")
        }
        for broken in [#"{"members":[1,"#, #"{"members":[1]"#, "", #"{"clientUploadId":"x""#] {
            let bytes = Array(broken.utf8)
            #expect(bytes.withUnsafeBufferPointer { StoredAnswers.instances(of: Array("members".utf8), in: $0) } == nil, "\(broken)")
        }
        #expect(Array(#"{"clientUploadId":"x""#.utf8).withUnsafeBufferPointer { StoredAnswers.fileCount($0) } == nil)
    }
}
