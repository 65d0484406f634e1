// The OData feed's query options as a request brings them (`$filter`, `$orderby`, `$select`,
// `$expand`, `$top`, `$skip`, `$skiptoken`, `$count`, `$wkt`, `$format`), read for a table of a
// fixed survey: a group, a repeat inside which another repeat, an integer, a decimal, a date, a
// select_one and a select_multiple, a geopoint; and the same survey after an older version typed
// some questions otherwise (widened types, a question only the old version had).
//
// Input: an optional first byte 0x01–0x08 choosing the model and table, then the options' values
// separated by NUL bytes, in the order above (an empty value is an absent option). A `$skiptoken`
// that does not start with `o1.` is also tried as `o1.` + its base64url, so JSON reaches the
// token's reader. Properties: no trap; every refusal is a 400 or a 501 with a message; an accepted
// query respects its limits ($top and $skip whole numbers, at most 8 orderings, selected paths
// and expanded repeats that exist); a filter that parses (for every table, on its own) evaluates
// against fixed rows without a trap, stays within `maxTerms` comparisons, and `not (…)` of it
// either is its negation on every row or is refused for a limit (501); a token read back from
// what the service writes is the same token.
// fuzz-module: SurveyExports Sources/SurveyExports/ExportColumns.swift Sources/SurveyExports/RepeatTable.swift Sources/SurveyExports/Cell.swift Sources/SurveyExports/ExportRow.swift Sources/SurveyExports/CSVEncoder.swift
// fuzz-sources: Sources/SurveyOData/ODataError.swift Sources/SurveyOData/ODataFilter.swift Sources/SurveyOData/ODataModel.swift Sources/SurveyOData/ODataQuery.swift
import Foundation
import SurveyDomain

private let newest: JSONValue = ["title": "Wells", "questions": [
    ["id": "size", "type": "integer", "label": "People"],
    ["id": "when", "type": "date", "label": "Visited"],
    ["id": "loc", "type": "geopoint", "label": "Where"],
    ["id": "tags", "type": "select_multiple", "label": "Uses", "choices": ["drink", "wash", "farm"]],
    ["id": "water", "type": "select_one", "label": "Source", "choices": ["well", "river"]],
    ["id": "note", "type": "text", "label": "Note"],
    ["id": "site", "type": "group", "label": "Site", "children": [
        ["id": "district", "type": "text", "label": "District"],
        ["id": "depth", "type": "decimal", "label": "Depth"],
    ]],
    ["id": "members", "type": "repeat", "label": "Member", "children": [
        ["id": "name", "type": "text", "label": "Name"],
        ["id": "age", "type": "integer", "label": "Age"],
        ["id": "visits", "type": "repeat", "label": "Visit", "children": [
            ["id": "day", "type": "date", "label": "Day"],
        ]],
    ]],
]]

/// An older version: `size` a decimal, `when` a text, `age` a decimal, and a question since removed.
private let older: JSONValue = ["title": "Wells", "questions": [
    ["id": "size", "type": "decimal", "label": "People"],
    ["id": "when", "type": "text", "label": "Visited"],
    ["id": "gone", "type": "integer", "label": "Removed"],
    ["id": "members", "type": "repeat", "label": "Member", "children": [
        ["id": "age", "type": "decimal", "label": "Age"],
    ]],
]]

private func definition(_ json: JSONValue) -> SurveyDefinition {
    do { return try SurveyDefinition.parse(json) } catch { fatalError("the harness's definition is refused: \(error.errors)") }
}

private func models() -> [ODataModel] {
    let m = [ODataModel(definitions: [definition(newest)]), ODataModel(definitions: [definition(older), definition(newest)])]
    guard m.allSatisfy({ $0.tables.count == 3 }) else { fatalError("the harness's models should have three tables each") }
    return m
}

/// Built once, and released at exit before LeakSanitizer's check: a group's node (an indirect
/// enum case, its pointer carrying the case in spare bits) held only by a global looks leaked.
nonisolated(unsafe) private var built: [ODataModel]? = nil

private func fixedModel(_ m: Int) -> ODataModel {
    if built == nil {
        built = models()
        atexit { built = nil }
    }
    return built![m]
}

/// (model, table) pairs the first byte chooses from: three tables in each model.
private let targets: [(Int, Int)] = [0, 1].flatMap { m in [0, 1, 2].map { (m, $0) } }

private let system: JSONValue = [
    "submissionDate": "2026-12-01T18:24:26.018Z", "submitterId": "usr_01a232d9-cb49-7c2a-93bd-a6b856a85b82",
    "submitterName": "Cole Collector", "reviewState": "approved", "formVersion": "1", "edits": 0,
    "attachmentsPresent": 0, "attachmentsExpected": 0,
]

/// Rows as the feed writes them (the keys of every table at once), and rows it never writes.
private let rows: [JSONValue] = [
    ["__id": "household-0001", "__Submissions-id": "household-0001", "__members-id": "r/members[1]", "__system": system,
     "size": 4, "when": "2026-02-01", "loc": ["type": "Point", "coordinates": [36.8219, -1.2921], "properties": ["accuracy": 6.5]],
     "tags": "drink wash", "water": "well", "note": "it's", "site": ["district": "North", "depth": 12.5],
     "name": "Ann", "age": 34, "day": "2026-10-20", "gone": 3],
    ["__id": .null, "__system": .null, "size": .null, "when": .null, "loc": .null, "tags": .null, "note": .null,
     "site": .null, "name": .null, "age": .null, "day": .null, "gone": .null],
    [:],
    ["__id": 7, "__system": ["submissionDate": "not a time", "edits": "x", "reviewState": 1], "size": "four",
     "when": 20260201, "note": 5, "site": "North", "name": ["a"], "age": .number(.infinity), "day": "not a date",
     "gone": .number(-.infinity), "tags": true],
    ["__id": "", "__system": ["submissionDate": "9999-12-31T23:59:59.999Z"], "size": .number(.nan), "when": "0000-01-01",
     "site": ["district": "", "depth": -0.0], "age": -1e308, "day": "2026-13-45", "note": "\u{0}'\u{10FFFF}"],
    .array([]), .string("Submissions"), .null,
]

private let keys = ["$filter", "$orderby", "$select", "$expand", "$top", "$skip", "$skiptoken", "$count", "$wkt", "$format"]

private func refused(_ error: ODataError, _ what: String) {
    guard error.status == 400 || error.status == 501, !error.message.isEmpty else {
        fatalError("\(what): refused with \(error.status) \(error.message.debugDescription)")
    }
}

/// The comparisons (and constants) of a filter's tree.
private func terms(_ e: ODataFilter.Expr) -> Int {
    switch e {
    case .and(let a, let b), .or(let a, let b): terms(a) + terms(b)
    case .not(let a): terms(a)
    case .compare, .constant: 1
    }
}

private func checkFilter(_ text: String, _ model: ODataModel, _ table: Int) {
    let filter: ODataFilter
    do {
        filter = try ODataFilter(text, model: model, table: table)
    } catch {
        refused(error, "$filter=\(text.debugDescription)")
        return
    }
    guard text.utf8.count <= ODataFilter.maxLength, terms(filter.root) <= ODataFilter.maxTerms else {
        fatalError("$filter=\(text.debugDescription) accepted beyond the limits")
    }
    let matches = rows.map(filter.matches)
    do {
        let negated = try ODataFilter("not (" + text + ")", model: model, table: table)
        guard rows.map(negated.matches) == matches.map(!) else { fatalError("not (\(text.debugDescription)) is not its negation") }
    } catch {
        guard error.status == 501 else { fatalError("not (\(text.debugDescription)) refused with \(error)") }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var bytes = UnsafeBufferPointer(start: data, count: size)[...]
    var target = targets[0]
    if let first = bytes.first, first >= 1, first <= 8 {
        target = targets[Int(first - 1) % targets.count]
        bytes = bytes.dropFirst()
    }
    let (m, table) = target
    let model = fixedModel(m)
    let values = bytes.split(separator: 0, maxSplits: keys.count - 1, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }

    // Each value on its own, through its parser (an empty one too).
    for (key, value) in zip(keys, values) {
        switch key {
        case "$filter":
            for t in model.tables.indices { checkFilter(value, model, t) }
        case "$skiptoken":
            var texts = [value]
            if !value.hasPrefix("o1.") { texts.append("o1." + Base64.encode(Array(value.utf8), url: true)) }
            for text in texts {
                guard let token = SkipToken(text) else { continue }
                guard SkipToken(token.encoded) == token else { fatalError("\(text.debugDescription) does not survive being written again") }
            }
        default:
            break
        }
    }

    // The options together, as a request's query (an empty value is an absent option).
    var query: [String: String] = [:]
    for (key, value) in zip(keys, values) where !value.isEmpty { query[key] = value }
    if let t = query["$skiptoken"], !t.hasPrefix("o1.") { query["$skiptoken"] = "o1." + Base64.encode(Array(t.utf8), url: true) }
    let q: ODataQuery
    do {
        q = try ODataQuery(query, model: model, table: table)
    } catch {
        refused(error, "\(query)")
        return 0
    }
    if let top = q.top, top < 0 { fatalError("$top \(top)") }
    guard q.skip >= 0, q.orderBy.count <= ODataQuery.maxOrderBy else { fatalError("\(query): skip \(q.skip), \(q.orderBy.count) orderings") }
    for o in q.orderBy {
        guard case .primitive(let type)? = model.resolve(o.path, in: table), type == o.type, type != .point else {
            fatalError("\(query): ordering by \(o.path)")
        }
    }
    for p in q.select ?? [] {
        switch model.resolve(p, in: table) {
        case .primitive?, .complex?: break
        case .navigation?, nil: fatalError("\(query): selecting \(p)")
        }
    }
    if case .tables(let tables) = q.expand, let t = tables.first(where: { !model.tables[table].children.contains($0) }) {
        fatalError("\(query): expanding table \(t), not a child of \(table)")
    }
    if let token = q.skipToken, token.keys.count != q.orderBy.count { fatalError("\(query): a token of \(token.keys.count) keys") }
    if let f = q.filter { _ = rows.map(f.matches) }
    return 0
}
