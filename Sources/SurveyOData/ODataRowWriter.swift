import SurveyDomain
import SurveyExports
import SurveyStorage

/// One table's rows written as the feed's JSON straight from the stored answers: the export's
/// cells read in place (`StoredCells`), the keys in canonical order worked out once. It writes
/// the bytes `CanonicalJSON.encode` writes for the row `ODataFeed` builds as a tree (a test holds
/// the two together) without a dictionary per row, per group and per value, which cost most of
/// a page. Whatever it cannot read it leaves to that general path (`write` answers false).
struct ODataRowWriter {
    private indirect enum Property {
        case id
        case system
        case parentId
        /// A question's value: its index in `cells.questions`, typed as `$metadata` says.
        case value(Int, ODataModel.EdmType)
        case group([Member])
    }

    /// A property with its key already written (`"name":`), in canonical order among its siblings.
    private struct Member {
        let key: [UInt8]
        let property: Property
    }

    /// What writing a row does, in order: the members worked out once into constant bytes
    /// (braces, commas, keys: ranges of `literals`) and values (trivial: a row costs no
    /// reference counting).
    private enum Step {
        case literal(Int, Int)
        case id
        case parentId
        case system
        case value(Int, ODataModel.EdmType)
    }

    private let steps: [Step]
    private let literals: [UInt8]
    /// A response's row: its `__system` counts the files its answers name.
    private let countsFiles: Bool
    private let wkt: Bool
    private let naming: ODataNaming
    private var cells: StoredCells

    /// nil when a name of the table's rows is taken twice (a question called `__id`): the general
    /// path decides which one wins.
    init?(model: ODataModel, table: Int, wkt: Bool, naming: ODataNaming = .surveyd) {
        let t = model.tables[table]
        var questions: [Question] = []
        // A level's properties by name, each group's own members ordered already.
        func named(_ nodes: [ODataModel.Node]) -> [(String, Property)]? {
            var out: [(String, Property)] = []
            for n in nodes {
                switch n {
                case .value(let name, let type, let q):
                    out.append((name, .value(questions.count, type)))
                    questions.append(q)
                case .group(let name, _, let children):
                    guard let inner = named(children), let members = Self.ordered(inner) else { return nil }
                    out.append((name, .group(members)))
                }
            }
            return out
        }
        guard var all = named(t.nodes) else { return nil }
        all.append(("__id", .id))
        if let parentKey = t.parentKey { all.append((parentKey, .parentId)) } else { all.append(("__system", .system)) }
        guard let ordered = Self.ordered(all) else { return nil }
        var steps: [Step] = [], literals: [UInt8] = []
        func literal(_ bytes: [UInt8]) {
            if case .literal(let a, _)? = steps.last {
                steps.removeLast()
                literals += bytes
                steps.append(.literal(a, literals.count))
            } else {
                let a = literals.count
                literals += bytes
                steps.append(.literal(a, literals.count))
            }
        }
        func compile(_ members: [Member]) {
            literal([UInt8(ascii: "{")])
            for (i, m) in members.enumerated() {
                literal((i > 0 ? [UInt8(ascii: ",")] : []) + m.key)
                switch m.property {
                case .id: steps.append(.id)
                case .parentId: steps.append(.parentId)
                case .system: steps.append(.system)
                case .value(let q, let type): steps.append(.value(q, type))
                case .group(let inner): compile(inner)
                }
            }
            literal([UInt8(ascii: "}")])
        }
        compile(ordered)
        self.steps = steps
        self.literals = literals
        countsFiles = t.parentKey == nil
        self.wkt = wkt
        self.naming = naming
        cells = StoredCells(questions: questions, choices: nil)
    }

    /// Members in JSON canonical order (UTF-16 code units); nil when two share a name.
    private static func ordered(_ named: [(String, Property)]) -> [Member]? {
        let sorted = named.sorted { $0.0.utf16.lexicographicallyPrecedes($1.0.utf16) }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.0 == b.0 { return nil }
        return sorted.map { name, property in
            var key: [UInt8] = []
            CanonicalJSON.encode(.string(name), into: &key)
            key.append(UInt8(ascii: ":"))
            return Member(key: key, property: property)
        }
    }

    /// A row's own values besides its answers.
    struct RowKeys {
        /// `__id`: the response's client submission id, or the instance's key.
        var id: String
        /// A repeat's row: the parent row's `__id`.
        var parentId: String
        /// A response's row: its `__system`.
        var versionNumber: Int64?
        var submitterName: String?
    }

    /// Appends the row whose answers are `range` of `stored.answers` (a repeat instance, or the
    /// whole document); false, with `out` as it was, when they cannot be read here.
    mutating func write(_ stored: ExportedResponse, answers range: Range<Int>, _ keys: RowKeys, into out: inout [UInt8]) -> Bool {
        var text = stored.answers
        var files = 0
        let read = text.withUTF8 { whole -> Bool in
            guard range.lowerBound >= 0, range.upperBound <= whole.count else { return false }
            let json = UnsafeBufferPointer(rebasing: whole[range])
            // An instance that is not an object has no answers (`objectValue ?? [:]`).
            guard json.first == UInt8(ascii: "{") else { return Self.emptyObject.withUnsafeBufferPointer { cells.read($0) } }
            guard cells.read(json) else { return false }
            if countsFiles {
                guard let n = StoredAnswers.fileCount(json) else { return false }
                files = n
            }
            return true
        }
        guard read else { return false }
        let mark = out.count
        guard object(stored, keys, files: files, into: &out) else {
            out.removeSubrange(mark...)
            return false
        }
        return true
    }

    private static let emptyObject = Array("{}".utf8)

    private func object(_ stored: ExportedResponse, _ keys: RowKeys, files: Int, into out: inout [UInt8]) -> Bool {
        literals.withUnsafeBufferPointer { literals in
            for step in steps {
                switch step {
                case .literal(let a, let b): out.append(contentsOf: UnsafeBufferPointer(rebasing: literals[a..<b]))
                case .id: CanonicalJSON.encode(.string(keys.id), into: &out)
                case .parentId: CanonicalJSON.encode(.string(keys.parentId), into: &out)
                case .system: system(stored, keys, files: files, into: &out)
                case .value(let q, let type): guard value(q, type, into: &out) else { return false }
                }
            }
            return true
        }
    }

    /// `__system`, its members in canonical order.
    private func system(_ s: ExportedResponse, _ keys: RowKeys, files: Int, into out: inout [UInt8]) {
        out += #"{"attachmentsExpected":"#.utf8
        CanonicalJSON.encode(.number(Double(files)), into: &out)
        out += #","attachmentsPresent":"#.utf8
        CanonicalJSON.encode(.number(Double(files)), into: &out)
        out += #","edits":"#.utf8
        CanonicalJSON.encode(.number(Double(s.edits)), into: &out)
        out += #","formVersion":"#.utf8
        CanonicalJSON.encode(.string(naming.formVersion(s.surveyVersionId, number: keys.versionNumber)), into: &out)
        out += #","reviewState":"#.utf8
        CanonicalJSON.encode(naming.reviewState(s.reviewState), into: &out)
        out += #","submissionDate":"#.utf8
        CanonicalJSON.encode(.string(Timestamp.format(s.receivedAt)), into: &out)
        out += #","submitterId":"#.utf8
        CanonicalJSON.encode(.string(naming.user(s.submitter)), into: &out)
        out += #","submitterName":"#.utf8
        CanonicalJSON.encode(keys.submitterName.map(JSONValue.string) ?? .null, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// A question's value from its cells, as `ODataFeed.value` types it.
    private func value(_ q: Int, _ type: ODataModel.EdmType, into out: inout [UInt8]) -> Bool {
        let first = cells.firstCell[q]
        guard first < cells.spans.count else { out += Self.null; return true }
        if type == .point {
            guard first + 2 < cells.spans.count, cells.spans[first].kind == .number, cells.spans[first + 1].kind == .number else {
                out += Self.null
                return true
            }
            let lat = cells.spans[first], lon = cells.spans[first + 1], accuracy = cells.spans[first + 2]
            if wkt {
                out += #""POINT ("#.utf8
                guard number(lon, into: &out) else { return false }
                out.append(UInt8(ascii: " "))
                guard number(lat, into: &out) else { return false }
                out += #")""#.utf8
                return true
            }
            out += #"{"coordinates":["#.utf8
            guard number(lon, into: &out) else { return false }
            out.append(UInt8(ascii: ","))
            guard number(lat, into: &out) else { return false }
            let altitude = cells.altitudes[q]
            if altitude.kind == .number {
                out.append(UInt8(ascii: ","))
                guard number(altitude, into: &out) else { return false }
            }
            out.append(UInt8(ascii: "]"))
            if accuracy.kind == .number {
                out += #","properties":{"accuracy":"#.utf8
                guard number(accuracy, into: &out) else { return false }
                out.append(UInt8(ascii: "}"))
            }
            out += #","type":"Point"}"#.utf8
            return true
        }
        let cell = cells.spans[first]
        switch cell.kind {
        case .empty:
            out += Self.null
        case .text:
            if cell.escaped {
                CanonicalJSON.encode(.string(String(decoding: cells.bytes(of: cell), as: UTF8.self)), into: &out)
            } else {
                out.append(UInt8(ascii: "\""))
                out += cells.bytes(of: cell)
                out.append(UInt8(ascii: "\""))
            }
        case .number:
            // A number typed as a string (a question once text) is its canonical text, quoted.
            if type == .string { out.append(UInt8(ascii: "\"")) }
            guard number(cell, into: &out) else { return false }
            if type == .string { out.append(UInt8(ascii: "\"")) }
        }
        return true
    }

    /// A number cell in canonical form: the stored literal when it prints as written, else the
    /// value printed again.
    private func number(_ span: StoredCells.Span, into out: inout [UInt8]) -> Bool {
        if cells.printsAsWritten(span) {
            out += cells.bytes(of: span)
            return true
        }
        guard let d = cells.double(span), d.isFinite else { return false }
        CanonicalJSON.encode(.number(d), into: &out)
        return true
    }

    private static let null = Array("null".utf8)
}
