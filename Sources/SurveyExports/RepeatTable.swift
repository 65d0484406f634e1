import SurveyDomain

/// One repeat's table in an export: a row per instance, `PARENT_KEY` and `KEY` first (ODK
/// Central's convention: `KEY` is `<responseId>/<repeatId>[<n>]`, 1-based, a nested repeat
/// appending `/<repeatId>[<n>]`; `PARENT_KEY` is the response id or the enclosing instance's
/// `KEY`), then its questions by the response table's column rules, then each nested repeat's
/// number of instances.
public struct RepeatTable: Sendable {
    public let id: String
    /// The enclosing repeat, nil for a repeat outside any.
    public let parent: String?
    /// Its own questions (groups flattened, nested repeats' questions not included).
    public let questions: [Question]
    /// Its nested repeats, by id.
    public let children: [String]

    /// An instance's `KEY`: `<parent key>/<repeatId>[<n>]`, `n` from 1 (every door that names an
    /// instance — the exports' tables, the OData feed's rows — names it so).
    public static func key(parent: String, repeatId: String, number: Int) -> String { "\(parent)/\(repeatId)[\(number)]" }

    /// The repeats of every version, outermost first; a repeat in several versions takes the
    /// newest one's questions first, then questions only older versions had.
    static func tables(_ definitions: [SurveyDefinition]) -> [RepeatTable] {
        var order: [String] = []
        var parents: [String: String?] = [:], questions: [String: [Question]] = [:], children: [String: [String]] = [:]
        for definition in definitions.reversed() {
            // Breadth-first: an enclosing repeat is listed before the repeats inside it.
            var level: [(FormNode, String?)] = definition.nodes.map { ($0, nil) }
            while !level.isEmpty {
                var next: [(FormNode, String?)] = []
                for (node, enclosing) in level {
                    switch node.kind {
                    case .repeat:
                        if parents[node.id] == nil {
                            order.append(node.id)
                            parents[node.id] = .some(enclosing)
                            if let enclosing, !(children[enclosing] ?? []).contains(node.id) { children[enclosing, default: []].append(node.id) }
                        }
                        next += node.children.map { ($0, node.id) }
                    case .group:
                        next += node.children.map { ($0, enclosing) }
                    case .question(let q):
                        if let enclosing, !(questions[enclosing] ?? []).contains(where: { $0.id == q.id }) { questions[enclosing, default: []].append(q) }
                    case .note:
                        break
                    }
                }
                level = next
            }
        }
        return order.map { RepeatTable(id: $0, parent: parents[$0] ?? nil, questions: questions[$0] ?? [], children: children[$0] ?? []) }
    }
}

extension ExportColumns {
    /// The rows `r` adds to each repeat table, by the table's index in `repeats`.
    public func repeatRows(_ r: ExportRow, file: (_ questionId: String, _ clientUploadId: String) -> String = { $1 }) -> [(table: Int, cells: [Cell])] {
        guard !repeats.isEmpty else { return [] }
        var out: [(Int, [Cell])] = []
        // Depth-first in document order: (table, instances, parent key).
        var stack: [(Int, [JSONValue], String)] = []
        for (i, t) in repeats.enumerated().reversed() where t.parent == nil {
            stack.append((i, r.answers[t.id]?.arrayValue ?? [], r.responseId))
        }
        let index = Dictionary(repeats.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { a, _ in a })
        while let (t, instances, parentKey) = stack.popLast() {
            let table = repeats[t]
            var nested: [(Int, [JSONValue], String)] = []
            for (n, instance) in instances.enumerated() {
                let key = RepeatTable.key(parent: parentKey, repeatId: table.id, number: n + 1)
                let answers = instance.objectValue ?? [:]
                var cells: [Cell] = [.text(parentKey), .text(key)]
                for q in table.questions { appendCells(q, answers[q.id], file: file, into: &cells) }
                for child in table.children { cells.append(.number(Double(answers[child]?.arrayValue?.count ?? 0))) }
                out.append((t, cells))
                for child in table.children {
                    if let c = index[child] { nested.append((c, answers[child]?.arrayValue ?? [], key)) }
                }
            }
            stack += nested.reversed()
        }
        return out
    }
}
