import SurveyDomain

/// One repeat's table in an export: a row per instance, `PARENT_KEY` and `KEY` first (ODK
/// Central's convention: `KEY` is `<responseId>/<repeatId>[<n>]`, 1-based, a nested repeat
/// appending `/<repeatId>[<n>]`; `PARENT_KEY` is the response id or the enclosing instance's
/// `KEY`), then its questions by the response table's column rules and each nested repeat's
/// number of instances, in the form's order.
public struct RepeatTable: Sendable {
    public let id: String
    /// The enclosing repeat, nil for a repeat outside any.
    public let parent: String?
    /// Its columns after `PARENT_KEY` and `KEY`, in the form's order: its own questions (groups
    /// flattened) and its nested repeats' counts.
    let slots: [ExportColumns.Slot]
    /// Its own questions (groups flattened, nested repeats' questions not included).
    public var questions: [Question] { slots.compactMap { if case .question(let q) = $0 { q } else { nil } } }
    /// Its nested repeats, by id.
    public var children: [String] { slots.compactMap { if case .repeatCount(let id) = $0 { id } else { nil } } }

    /// An instance's `KEY`: `<parent key>/<repeatId>[<n>]`, `n` from 1 (every door that names an
    /// instance — the exports' tables, the OData feed's rows — names it so).
    public static func key(parent: String, repeatId: String, number: Int) -> String { "\(parent)/\(repeatId)[\(number)]" }

    /// The repeats of every version, outermost first; a repeat in several versions takes the
    /// newest one's columns first, then columns only older versions had.
    static func tables(_ definitions: [SurveyDefinition]) -> [RepeatTable] {
        var order: [String] = []
        var parents: [String: String?] = [:], slots: [String: ExportColumns.SlotList] = [:]
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
                        }
                        slots[node.id, default: ExportColumns.SlotList()].add(node.children)
                        next += node.children.map { ($0, node.id) }
                    case .group:
                        next += node.children.map { ($0, enclosing) }
                    case .question, .note:
                        break
                    }
                }
                level = next
            }
        }
        return order.map { RepeatTable(id: $0, parent: parents[$0] ?? nil, slots: slots[$0]?.slots ?? []) }
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
                appendSlots(table.slots, answers, file: file, into: &cells)
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
