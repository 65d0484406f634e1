import SurveyExpressions

/// What checking answers against a version-2 definition needs, built once when it is parsed:
/// every node in document order with its parent and enclosing repeats, the ids, and an order in
/// which relevance can be computed without recursion (each node after its parent and after every
/// node its `relevant` reads). Building it is where a definition's static logic errors are found.
struct FormStructure: Sendable, Equatable {
    /// A class: a check reads entries thousands of times a second, and a copy of a node (its
    /// question, labels and logic) would cost a retain and a release per field each time.
    final class Entry: Sendable, Equatable {
        let node: FormNode
        let id: String
        /// Index of the enclosing group or repeat; nil at the top.
        let parent: Int?
        /// Indices of the enclosing repeats, outermost first (a repeat itself not included).
        let repeats: [Int]
        /// Where it is in the definition (`definition.questions[2].children[0]`).
        let path: String
        let isRepeat: Bool
        let question: Question?
        /// The question's type and required flag, read on every check without copying the question.
        let type: QuestionType?
        let required: Bool
        let rules: AnswerRules?
        let counts: RepeatCounts?
        /// The node's logic with its references bound to entries.
        let relevant: BoundLogic?
        let requiredWhen: BoundLogic?
        let constraint: BoundLogic?
        let choiceFilter: BoundLogic?
        let repeatCount: BoundLogic?
        let constraintMessage: LocalizedText?

        init(node: FormNode, parent: Int?, repeats: [Int], path: String, bind: (Logic) -> BoundLogic) {
            self.node = node
            id = node.id
            self.parent = parent
            self.repeats = repeats
            self.path = path
            isRepeat = node.isRepeat
            question = node.question
            type = node.question?.type
            required = node.question?.required ?? false
            rules = node.question.map(AnswerRules.init)
            if case .repeat(let c) = node.kind { counts = c } else { counts = nil }
            let logic = node.question?.logic ?? .none
            relevant = node.relevant.map(bind)
            requiredWhen = logic.requiredWhen.map(bind)
            constraint = logic.constraint.map(bind)
            choiceFilter = logic.choiceFilter.map(bind)
            repeatCount = counts?.repeatCount.map(bind)
            constraintMessage = logic.constraintMessage
        }

        static func == (a: Entry, b: Entry) -> Bool { a.node == b.node && a.parent == b.parent && a.path == b.path }
    }

    /// An expression of the form with each of its references (by slot, see `Expression.references`)
    /// bound to the entry it names and to how that entry is reached from the node whose logic it
    /// is, so that a check never looks a name up.
    final class BoundLogic: Sendable {
        let expression: Expression
        /// Its links, by reference slot, in `FormStructure.links` (one array for the form: a
        /// check that points at a range retains nothing).
        let links: Range<Int>
        /// Its lookups (`pulldata`), by lookup slot, in `FormStructure.lookups` (one array for the
        /// form, as `links`).
        let lookups: Range<Int>
        let dependsOnMoment: Bool

        init(_ logic: Logic, links: Range<Int>, lookups: Range<Int>) {
            expression = logic.expression
            self.links = links
            self.lookups = lookups
            dependsOnMoment = logic.dependsOnMoment
        }
    }

    /// A reference from one node's logic to an entry: `shared` is how many enclosing repeats the
    /// two have in common (the depth of the instance both are read in); `many` when the target
    /// lies in repeats the node is not in, or is a repeat, so that it stands for the list over
    /// those instances.
    struct Link: Sendable {
        /// -1 for a name no node has (such a definition is refused).
        let target: Int
        let shared: Int
        let many: Bool

        init(from here: [Int], to target: Int, placed: [(repeats: [Int], isRepeat: Bool)]) {
            guard placed.indices.contains(target) else {
                (self.target, shared, many) = (-1, 0, false)
                return
            }
            let isRepeat = placed[target].isRepeat
            let there = isRepeat ? placed[target].repeats + [target] : placed[target].repeats
            var shared = 0
            while shared < here.count, shared < there.count, here[shared] == there[shared] { shared += 1 }
            if isRepeat && shared == there.count { shared -= 1 }  // from inside the repeat: all its instances
            self.target = target
            self.shared = shared
            many = shared < there.count
        }
    }

    /// Where answers sit. Level 0 is the answers object; each repeat has a level, that of the
    /// objects of its instances. A check keeps, per object of answers, its answers in the order
    /// of the level's answering entries, and small tables by slot: no id is looked up twice.
    /// A class: a check reads one per object of answers, and a copy of a struct of arrays would
    /// retain and release each of them.
    final class Level: Sendable {
        /// The repeat whose instances sit at this level; -1 for the answers object.
        let repeatEntry: Int
        /// What a walk of one object starts from: the top level, or the repeat's children.
        let top: [Int]
        /// The entries whose id is a key at this level (all but groups with children), in
        /// document order: an entry's `answerSlot` is its index here.
        let answering: [Int]
        /// Id to answer slot, for reading an object's keys.
        let keys: KeyTable
        /// How many entries have a `relevant` (`relevanceSlot`) and how many are read by some
        /// logic (`valueSlot`).
        let relevanceCount: Int
        let valueCount: Int

        init(repeatEntry: Int, top: [Int], answering: [Int], keys: KeyTable, relevanceCount: Int, valueCount: Int) {
            self.repeatEntry = repeatEntry
            self.top = top
            self.answering = answering
            self.keys = keys
            self.relevanceCount = relevanceCount
            self.valueCount = valueCount
        }
    }

    /// A `pulldata` call bound to its table's columns.
    struct BoundLookup: Sendable {
        let table: LookupTable
        let column: Int
        let keyColumn: Int

        /// Nil for a file or column the definition lacks (such a definition is refused).
        init?(_ lookup: Lookup, tables: [String: LookupTable]) {
            guard let table = tables[lookup.fileName], let column = table.columnIndex[lookup.column],
                  let key = table.columnIndex[lookup.keyColumn] else { return nil }
            self.table = table
            self.column = column
            keyColumn = key
        }
    }

    let entries: [Entry]
    let indexById: [String: Int]
    /// The language the server's messages use (a constraint's message).
    let defaultLanguage: String?
    /// Each entry's children, and the top level's, in document order.
    let children: [[Int]]
    let topLevel: [Int]
    /// The entries with a `relevant` of their own, each after its ancestors' and after what it reads.
    let relevanceOrder: [Int]
    /// Whose `relevant` decides an entry's relevance: the nearest of itself and its ancestors
    /// that has one (-1: none, always relevant). Only those are computed for a check.
    let relevanceOwner: [Int]
    /// How many repeats enclose each entry.
    let depth: [Int]
    let levels: [Level]
    /// The most answering entries of one level.
    let widestLevel: Int
    /// By entry: its level; for a repeat, its children's level (else -1); its slot among the
    /// level's answering entries, relevance owners and entries read by logic (each -1 if none).
    let level: [Int]
    let innerLevel: [Int]
    let answerSlot: [Int]
    let relevanceSlot: [Int]
    let valueSlot: [Int]
    /// Every logic's links and lookups (`BoundLogic.links`, `.lookups`).
    let links: [Link]
    let lookups: [BoundLookup?]

    static func == (a: FormStructure, b: FormStructure) -> Bool { a.entries == b.entries }

    static func build(_ nodes: [FormNode], path: String, defaultLanguage: String?,
                      tables: [String: LookupTable] = [:]) -> (structure: FormStructure?, errors: [FieldError]) {
        // Iterative walk in document order: (node, parent, repeats, path).
        var placed: [(node: FormNode, parent: Int?, repeats: [Int], path: String)] = []
        var stack: [(FormNode, Int?, [Int], String)] = nodes.enumerated().reversed().map { ($1, nil, [], "\(path).questions[\($0)]") }
        while let (node, parent, repeats, nodePath) = stack.popLast() {
            let index = placed.count
            placed.append((node, parent, repeats, nodePath))
            let inner = node.isRepeat ? repeats + [index] : repeats
            for (j, child) in node.children.enumerated().reversed() {
                stack.append((child, index, inner, "\(nodePath).children[\(j)]"))
            }
        }
        var indexById: [String: Int] = [:]
        for (i, p) in placed.enumerated() { indexById[p.node.id] = i }
        let shapes = placed.map { (repeats: $0.repeats, isRepeat: $0.node.isRepeat) }
        var links: [Link] = [], lookups: [BoundLookup?] = []
        let entries = placed.map { p in
            Entry(node: p.node, parent: p.parent, repeats: p.repeats, path: p.path) { logic in
                let start = links.count, firstLookup = lookups.count
                links += logic.expression.references.map { Link(from: p.repeats, to: indexById[$0] ?? -1, placed: shapes) }
                lookups += logic.expression.lookups.map { BoundLookup($0, tables: tables) }
                return BoundLogic(logic, links: start..<links.count, lookups: firstLookup..<lookups.count)
            }
        }

        var errors: [FieldError] = []
        // What each node's evaluation waits for: its relevance reads `relevant`'s references;
        // a calculation or a repeat count that reads itself in a circle is refused as well.
        var edges = [[Int]](repeating: [], count: entries.count)
        for (i, e) in entries.enumerated() {
            for (key, logic, context) in Self.logic(of: e.node) {
                let at = "\(e.path).\(key)"
                for name in logic.expression.references {
                    guard let target = indexById[name] else { errors.append(FieldError(path: at, message: "names ${\(name)}, which is no node of this definition")); continue }
                    if key == "relevant" || key == "calculation" || key == "repeatCount" { edges[i].append(target) }
                }
                if logic.expression.usesCurrent && context != .answer {
                    errors.append(FieldError(path: at, message: "`.` is the answer itself, so it belongs in a constraint, not in \(key)"))
                }
                if let field = logic.expression.fields.first, context != .choice {
                    errors.append(FieldError(path: at, message: "`\(field)` is a bare name; refer to a question as ${\(field)}"))
                }
                for lookup in logic.expression.lookups {
                    guard let table = tables[lookup.fileName] else {
                        errors.append(FieldError(path: at, message: "pulldata reads \(lookup.fileName), which is not attached to the form"))
                        continue
                    }
                    for column in [lookup.column, lookup.keyColumn] where table.columnIndex[column] == nil {
                        errors.append(FieldError(path: at, message: "pulldata reads the column \(column) of \(lookup.fileName), which has no such column"))
                    }
                }
            }
            if let parent = e.parent { edges[i].append(parent) }
        }
        guard errors.isEmpty else { return (nil, errors) }
        switch Self.order(edges) {
        case .success(let order):
            var children = [[Int]](repeating: [], count: entries.count), topLevel: [Int] = []
            for (i, e) in entries.enumerated() {
                if let p = e.parent { children[p].append(i) } else { topLevel.append(i) }
            }
            var owner = [Int](repeating: -1, count: entries.count)
            // Parents come before their children in document order.
            for (i, e) in entries.enumerated() { owner[i] = e.relevant != nil ? i : (e.parent.map { owner[$0] } ?? -1) }
            let tables = Tables(entries, links: links, children: children, topLevel: topLevel)
            return (FormStructure(entries: entries, indexById: indexById, defaultLanguage: defaultLanguage, children: children, topLevel: topLevel,
                                  relevanceOrder: order.filter { entries[$0].relevant != nil }, relevanceOwner: owner,
                                  depth: entries.map(\.repeats.count), levels: tables.levels, widestLevel: tables.levels.map { $0.answering.count }.max() ?? 0, level: tables.level,
                                  innerLevel: tables.innerLevel, answerSlot: tables.answerSlot, relevanceSlot: tables.relevanceSlot,
                                  valueSlot: tables.valueSlot, links: links, lookups: lookups), [])
        case .failure(let cycle):
            let names = cycle.map { "${\(entries[$0].id)}" }.joined(separator: " → ")
            // At each expression that takes part: the ones reading another node of the cycle
            // (a node in it only through its group has none, and is named by its own path).
            let members = Set(cycle.map { entries[$0].node.id })
            var errors: [FieldError] = []
            for i in cycle.nodes.dropLast() {
                let taking = Self.logic(of: entries[i].node).filter { key, logic, _ in
                    ["relevant", "calculation", "repeatCount"].contains(key) && logic.expression.references.contains(where: members.contains)
                }
                let paths = taking.isEmpty ? [entries[i].path] : taking.map { "\(entries[i].path).\($0.0)" }
                for path in paths where !errors.contains(where: { $0.path == path }) {
                    errors.append(FieldError(path: path, message: "its logic depends on itself: \(names)"))
                }
            }
            return (nil, errors)
        }
    }

    /// The levels and slots of `entries` (document order: a parent before its children).
    private struct Tables {
        var levels: [Level] = []
        var level: [Int], innerLevel: [Int], answerSlot: [Int], relevanceSlot: [Int], valueSlot: [Int]

        init(_ entries: [Entry], links: [Link], children: [[Int]], topLevel: [Int]) {
            let n = entries.count
            level = [Int](repeating: 0, count: n)
            innerLevel = [Int](repeating: -1, count: n)
            answerSlot = [Int](repeating: -1, count: n)
            relevanceSlot = [Int](repeating: -1, count: n)
            valueSlot = [Int](repeating: -1, count: n)
            var read = [Bool](repeating: false, count: n)
            for e in entries {
                for logic in [e.relevant, e.requiredWhen, e.constraint, e.choiceFilter, e.repeatCount] {
                    for link in links[logic?.links ?? 0..<0] where read.indices.contains(link.target) { read[link.target] = true }
                }
            }
            var repeatOf = [-1], top = [topLevel]
            for (i, e) in entries.enumerated() where e.isRepeat {
                innerLevel[i] = repeatOf.count
                repeatOf.append(i)
                top.append(children[i])
            }
            var answering = [[Int]](repeating: [], count: repeatOf.count)
            var relevanceCount = [Int](repeating: 0, count: repeatOf.count)
            var valueCount = relevanceCount
            for (i, e) in entries.enumerated() {
                let l = e.repeats.last.map { innerLevel[$0] } ?? 0
                level[i] = l
                if e.question != nil || e.isRepeat || children[i].isEmpty {
                    answerSlot[i] = answering[l].count
                    answering[l].append(i)
                }
                if e.relevant != nil {
                    relevanceSlot[i] = relevanceCount[l]
                    relevanceCount[l] += 1
                }
                if read[i] {
                    valueSlot[i] = valueCount[l]
                    valueCount[l] += 1
                }
            }
            for l in repeatOf.indices {
                levels.append(Level(repeatEntry: repeatOf[l], top: top[l], answering: answering[l],
                                    keys: KeyTable(answering[l].map { entries[$0].id }),
                                    relevanceCount: relevanceCount[l], valueCount: valueCount[l]))
            }
        }
    }

    enum LogicContext { case node, answer, choice }

    /// The expressions of a node, with the property each is under and what `.` and bare names may mean there.
    static func logic(of node: FormNode) -> [(String, Logic, LogicContext)] {
        var out: [(String, Logic, LogicContext)] = []
        if let r = node.relevant { out.append(("relevant", r, .node)) }
        if case .repeat(let counts) = node.kind, let c = counts.repeatCount { out.append(("repeatCount", c, .node)) }
        if let q = node.question {
            let l = q.logic
            if let x = l.requiredWhen { out.append(("required", x, .node)) }
            if let x = l.constraint { out.append(("constraint", x, .answer)) }
            if let x = l.readonly { out.append(("readonly", x, .node)) }
            // Never evaluated by the server (the device's value is kept), so `.` may be the value itself.
            if let x = l.calculation { out.append(("calculation", x, .answer)) }
            if let x = l.choiceFilter { out.append(("choiceFilter", x, .choice)) }
        }
        return out
    }

    /// A topological order of the graph (each node after the nodes it points to), or a cycle.
    /// Iterative depth-first search: a definition's size never turns into recursion depth.
    static func order(_ edges: [[Int]]) -> Result<[Int], Cycle> {
        enum Mark { case new, open, done }
        var mark = [Mark](repeating: .new, count: edges.count)
        var order: [Int] = []
        order.reserveCapacity(edges.count)
        for start in edges.indices where mark[start] == .new {
            var stack: [(node: Int, next: Int)] = [(start, 0)]
            mark[start] = .open
            while let top = stack.last {
                if top.next < edges[top.node].count {
                    stack[stack.count - 1].next += 1
                    let target = edges[top.node][top.next]
                    switch mark[target] {
                    case .new:
                        mark[target] = .open
                        stack.append((target, 0))
                    case .open:
                        // The cycle: from the target's place on the stack to here, and back.
                        let from = stack.firstIndex { $0.node == target } ?? 0
                        return .failure(Cycle(stack[from...].map(\.node) + [target]))
                    case .done:
                        break
                    }
                } else {
                    mark[top.node] = .done
                    order.append(top.node)
                    stack.removeLast()
                }
            }
        }
        return .success(order)
    }

    struct Cycle: Error {
        let nodes: [Int]
        init(_ nodes: [Int]) { self.nodes = nodes }
        func map<T>(_ f: (Int) -> T) -> [T] { nodes.map(f) }
        subscript(_ i: Int) -> Int { nodes[i] }
    }
}
