import SurveyDomain
import SurveyExports

/// The OData shape of a survey over all its versions: an entity set `Submissions` (a row per
/// response) and one per repeat, `Submissions.<repeat>` (nested: `Submissions.<outer>.<inner>`,
/// ODK Central's names), each row keyed by `__id` and naming its parent row
/// (`__Submissions-id`, `__<outer>-id`). Which questions a table has, and in which order, is
/// the export's (`ExportColumns`, `RepeatTable`): the feed never decides a column of its own.
/// Groups become complex types of their children; a repeat a navigation property of its parent.
public struct ODataModel: Sendable {
    public enum EdmType: String, Sendable {
        case string = "Edm.String"
        case int64 = "Edm.Int64"
        case decimal = "Edm.Decimal"
        case date = "Edm.Date"
        case dateTimeOffset = "Edm.DateTimeOffset"
        case point = "Edm.GeographyPoint"
    }

    /// A structural property of an entity or complex type.
    public indirect enum Node: Sendable {
        case value(name: String, type: EdmType, question: Question)
        case group(name: String, typeName: String, children: [Node])

        public var name: String {
            switch self {
            case .value(let name, _, _), .group(let name, _, _): name
            }
        }
    }

    public struct Table: Sendable {
        /// `Submissions`, `Submissions.<repeat>`.
        public let setName: String
        /// The entity type's name (a CSDL identifier).
        public let typeName: String
        /// nil for `Submissions`.
        public let repeatId: String?
        /// The index (in `columns.repeats`) of this table's repeat.
        public let repeatIndex: Int?
        /// The enclosing table, nil for `Submissions`.
        public let parent: Int?
        /// `__Submissions-id`, `__<outer>-id`; nil for `Submissions`.
        public let parentKey: String?
        public let nodes: [Node]
        /// The questions, in the export's column order.
        public let questions: [Question]
        /// The tables of the repeats directly inside this one (navigation properties named by their ids).
        public var children: [Int]
    }

    public static let namespace = "surveyd.survey"
    public static let containerName = "Survey"
    /// The complex type of `__system`.
    public static let systemType = "SubmissionSystem"
    /// `__system`'s properties and their types, in order.
    public static let systemProperties: [(String, EdmType)] = [
        ("submissionDate", .dateTimeOffset), ("submitterId", .string), ("submitterName", .string), ("reviewState", .string),
        ("formVersion", .string), ("edits", .int64), ("attachmentsPresent", .int64), ("attachmentsExpected", .int64),
    ]

    public let columns: ExportColumns
    /// `tables[0]` is `Submissions`; then the repeats, outermost first.
    public let tables: [Table]
    /// Every group's complex type, in order of first appearance.
    public let complexTypes: [(name: String, children: [Node])]

    /// `definitions`: oldest first, as versions are numbered.
    public init(definitions: [SurveyDefinition]) {
        let columns = ExportColumns(definitions: definitions, splitSelectMultiples: false)
        self.columns = columns
        // Where each question sits (its groups, outermost first) and every type it had, per
        // table ("" is Submissions): the newest version's place wins.
        var placement: [String: [String: [String]]] = [:]
        var kinds: [String: [String: Set<String>]] = [:]
        func walk(_ nodes: [FormNode], table: String, groups: [String]) {
            for n in nodes {
                switch n.kind {
                case .question(let q):
                    if placement[table]?[q.id] == nil { placement[table, default: [:]][q.id] = groups }
                    kinds[table, default: [:]][q.id, default: []].insert(q.type.rawValue)
                case .group: walk(n.children, table: table, groups: groups + [n.id])
                case .repeat: walk(n.children, table: n.id, groups: [])
                case .note: break
                }
            }
        }
        for d in definitions.reversed() { walk(d.nodes, table: "", groups: []) }

        var names = TypeNames(reserved: ["Submissions", Self.systemType])
        var complex: [(String, [Node])] = []
        func tree(_ questions: [Question], table: String) -> [Node] {
            let root = GroupBuilder(name: "")
            for q in questions {
                var at = root
                for g in placement[table]?[q.id] ?? [] {
                    if let existing = at.groups[g] { at = existing; continue }
                    // A group named like a question beside it cannot be a property of its own.
                    if at.entries.contains(where: { if case .question(let other, _) = $0 { other.id == g } else { false } }) { break }
                    let child = GroupBuilder(name: g)
                    at.groups[g] = child
                    at.entries.append(.group(child))
                    at = child
                }
                at.entries.append(.question(q, Self.edmType(q, seen: kinds[table]?[q.id] ?? [])))
            }
            func nodes(_ b: GroupBuilder) -> [Node] {
                b.entries.compactMap { e in
                    switch e {
                    case .question(let q, let t): return .value(name: q.id, type: t, question: q)
                    case .group(let g):
                        let children = nodes(g)
                        guard !children.isEmpty else { return nil }
                        let typeName = names.take(g.name)
                        complex.append((typeName, children))
                        return .group(name: g.name, typeName: typeName, children: children)
                    }
                }
            }
            return nodes(root)
        }

        var tables = [Table(setName: "Submissions", typeName: "Submissions", repeatId: nil, repeatIndex: nil, parent: nil, parentKey: nil,
                            nodes: tree(columns.questions, table: ""), questions: columns.questions, children: [])]
        var byRepeat: [String: Int] = [:]
        for (i, r) in columns.repeats.enumerated() {
            let parent = r.parent.flatMap { byRepeat[$0] } ?? 0
            let parentTable = tables[parent]
            let index = tables.count
            tables.append(Table(setName: parentTable.setName + "." + r.id, typeName: names.take(r.id), repeatId: r.id, repeatIndex: i,
                                parent: parent, parentKey: "__\(parentTable.repeatId ?? "Submissions")-id",
                                nodes: tree(r.questions, table: r.id), questions: r.questions, children: []))
            tables[parent].children.append(index)
            byRepeat[r.id] = index
        }
        self.tables = tables
        complexTypes = complex
    }

    /// The table whose entity set is `setName`.
    public func table(named setName: String) -> Int? { tables.firstIndex { $0.setName == setName } }

    /// A question's EDM type: as the newest version types it, widened where older versions typed
    /// it otherwise so that every value fits (an integer that was a decimal is a decimal; a date
    /// that was text is text).
    static func edmType(_ q: Question, seen: Set<String>) -> EdmType {
        switch q.type {
        case .integer: seen.contains(QuestionType.decimal.rawValue) ? .decimal : .int64
        case .decimal: .decimal
        case .date: seen.count == 1 ? .date : .string
        case .datetime: seen.count == 1 ? .dateTimeOffset : .string
        case .geopoint: .point
        case .text, .selectOne, .selectMultiple, .file, .time, .geotrace, .geoshape, .barcode, .calculate: .string
        }
    }

    /// A property path (`a/b`) of a table, resolved: its EDM type, or the complex type it names.
    public enum Resolved: Sendable, Equatable {
        case primitive(EdmType)
        case complex
        case navigation(Int)
    }

    public func resolve(_ path: [String], in table: Int) -> Resolved? {
        guard let first = path.first else { return nil }
        let t = tables[table]
        if first == "__id" { return path.count == 1 ? .primitive(.string) : nil }
        if let key = t.parentKey, first == key { return path.count == 1 ? .primitive(.string) : nil }
        if t.parent == nil, first == "__system" {
            if path.count == 1 { return .complex }
            guard path.count == 2, let p = Self.systemProperties.first(where: { $0.0 == path[1] }) else { return nil }
            return .primitive(p.1)
        }
        if path.count == 1, let child = t.children.first(where: { tables[$0].repeatId == first }) { return .navigation(child) }
        var nodes = t.nodes
        for (i, name) in path.enumerated() {
            guard let n = nodes.first(where: { $0.name == name }) else { return nil }
            switch n {
            case .value(_, let type, _): return i == path.count - 1 ? .primitive(type) : nil
            case .group(_, _, let children):
                if i == path.count - 1 { return .complex }
                nodes = children
            }
        }
        return nil
    }
}

/// Distinct CSDL type names: a name that is taken gets `_2`, `_3`…
struct TypeNames {
    private var taken: Set<String>
    init(reserved: Set<String>) { taken = reserved }
    mutating func take(_ name: String) -> String {
        var candidate = name, n = 1
        while !taken.insert(candidate).inserted {
            n += 1
            candidate = "\(name)_\(n)"
        }
        return candidate
    }
}

private final class GroupBuilder {
    enum Entry {
        case question(Question, ODataModel.EdmType)
        case group(GroupBuilder)
    }
    let name: String
    var entries: [Entry] = []
    var groups: [String: GroupBuilder] = [:]
    init(name: String) { self.name = name }
}
