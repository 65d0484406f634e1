// Stored answers read in place (`StoredCells`, `StoredAnswers`): what the CSV export and the
// OData feed write their rows from without parsing them. The bytes are a stored answers
// object's, for a fixed survey with a question of every kind (and a repeat `members`).
// Properties: no trap on any bytes; and for a JSON object the parser accepts, its canonical form
// (the stored form) is read, every cell is the parsed answer's cell (`ExportColumns.cells(of:)`:
// empty, the same text, the same number), a text not marked `escaped` is its own JSON string's
// inside, a geopoint's altitude is the parsed one, the repeat's instances are the parsed array's
// elements in canonical form, and the files counted are the parsed tree's.
// fuzz-module: SurveyExports Sources/SurveyExports/ExportColumns.swift Sources/SurveyExports/RepeatTable.swift Sources/SurveyExports/Cell.swift Sources/SurveyExports/ExportRow.swift Sources/SurveyExports/CSVEncoder.swift Sources/SurveyExports/JSONBytes.swift Sources/SurveyExports/StoredCells.swift Sources/SurveyExports/StoredAnswers.swift
import SurveyDomain
import SurveyExports

private let survey: JSONValue = ["title": "Stored", "questions": [
    ["id": "n", "type": "integer", "label": "n"],
    ["id": "d", "type": "decimal", "label": "d"],
    ["id": "t", "type": "text", "label": "t"],
    ["id": "one", "type": "select_one", "label": "one", "choices": ["a", "b"]],
    ["id": "many", "type": "select_multiple", "label": "many", "choices": ["a", "b", "c"]],
    ["id": "where", "type": "geopoint", "label": "where"],
    ["id": "day", "type": "date", "label": "day"],
    ["id": "photo", "type": "file", "label": "photo", "accept": ["image/png"]],
    ["id": "members", "type": "repeat", "label": "m", "children": [["id": "name", "type": "text", "label": "name"]]],
]]

private let columns: ExportColumns = {
    guard let definition = try? SurveyDefinition.parse(survey) else { fatalError("the harness's definition is refused") }
    return ExportColumns(definitions: [definition], splitSelectMultiples: false)
}()
private let members = Array("members".utf8)
nonisolated(unsafe) private var cells = StoredCells(questions: columns.questions, choices: nil)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = UnsafeBufferPointer(start: data, count: size)
    _ = cells.read(raw)
    _ = StoredAnswers.instances(of: members, in: raw)
    _ = StoredAnswers.fileCount(raw)
    guard let value = try? JSONParser.parse(Array(raw)), case .object = value else { return 0 }
    let stored = CanonicalJSON.encode(value)
    let text = String(decoding: stored, as: UTF8.self)
    guard stored.withUnsafeBufferPointer({ cells.read($0) }) else { fatalError("stored answers not read: \(text)") }
    for (i, q) in columns.questions.enumerated() {
        for (k, cell) in columns.cells(of: q, value[q.id]).enumerated() {
            let span = cells.spans[cells.firstCell[i] + k]
            let bytes = Array(cells.bytes(of: span))
            switch cell {
            case .empty:
                guard span.kind == .empty else { fatalError("\(q.id) cell \(k) not empty: \(text)") }
            case .text(let s):
                guard span.kind == .text, bytes == Array(s.utf8) else { fatalError("\(q.id) cell \(k) text differs: \(text)") }
                if !span.escaped, CanonicalJSON.encode(.string(s)) != [34] + bytes + [34] {
                    fatalError("\(q.id) cell \(k) not marked escaped: \(text)")
                }
            case .number(let d):
                guard span.kind == .number, Double(String(decoding: bytes, as: UTF8.self)) == d else {
                    fatalError("\(q.id) cell \(k) number differs: \(text)")
                }
                if cells.printsAsWritten(span) {
                    guard CanonicalJSON.number(d) == String(decoding: bytes, as: UTF8.self) else {
                        fatalError("\(q.id) cell \(k): \(String(decoding: bytes, as: UTF8.self)) is not canonical: \(text)")
                    }
                }
            case .timestamp:
                fatalError("an answer read as a timestamp")
            }
        }
        if q.type == .geopoint {
            let span = cells.altitudes[i]
            let altitude = span.kind == .number ? Double(String(decoding: cells.bytes(of: span), as: UTF8.self)) : nil
            guard altitude == value[q.id]?["altitude"]?.doubleValue else { fatalError("altitude differs: \(text)") }
        }
    }
    let found = stored.withUnsafeBufferPointer { StoredAnswers.instances(of: members, in: $0) }
    guard let found, found.map({ Array(stored[$0]) }) == (value["members"]?.arrayValue ?? []).map({ CanonicalJSON.encode($0) }) else {
        fatalError("instances differ: \(text)")
    }
    guard stored.withUnsafeBufferPointer({ StoredAnswers.fileCount($0) }) == files(value) else { fatalError("files differ: \(text)") }
    return 0
}

private func files(_ v: JSONValue) -> Int {
    switch v {
    case .object(let o): return o["clientUploadId"]?.stringValue != nil ? 1 : o.values.reduce(0) { $0 + files($1) }
    case .array(let a): return a.reduce(0) { $0 + files($1) }
    default: return 0
    }
}
