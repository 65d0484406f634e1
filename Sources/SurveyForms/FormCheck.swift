import SurveyExpressions

/// Checks one submission's answers against a version-2 definition, in the order of
/// `Docs/forms.md`: relevance, required, constraint, repeat counts, the type's rules, the
/// choices a `choiceFilter` offers. Every failure is listed, one per answer, in document order.
///
/// Relevance is computed first for every node and repeat instance, in `relevanceOrder` (each
/// node after what it reads), so no evaluation recurses into another. An expression that
/// depends on the moment or the device (`today()`, `now()`, …) is not evaluated: such a
/// relevance allows the answer present or absent, such a `required` or `constraint` is not
/// enforced.
final class FormCheck: ReferenceSource {
    private let structure: FormStructure
    private let answers: JSONValue
    // A check is one object used by one thread, never shared: the run-time exclusivity checks
    // of its state (7 % of a roster form's check) are left out.
    @exclusivity(unchecked) private var check = AnswerCheck()
    /// Every object of answers: the answers object first, then each repeat instance (an object
    /// in a repeat's list), each repeat's instances in one run, parents before children.
    @exclusivity(unchecked) private var instances: [Instance] = []
    /// The objects' dictionaries, by instance.
    @exclusivity(unchecked) private var objects: [[String: JSONValue]] = []
    /// Where the answers of each object are in its dictionary, in its level's document order
    /// (`Instance.answers`), found once: the walk and the references read these, never hashing
    /// an id again.
    @exclusivity(unchecked) private var found: [Found] = []
    /// Keys of an object that are no node's there (`Instance.unknown`).
    @exclusivity(unchecked) private var unknownKeys: [String] = []
    /// By instance and slot (`Instance.relevance`, `.values`): the relevance of each node with a
    /// `relevant`, the value of each node some logic reads once read.
    @exclusivity(unchecked) private var relevance: [Relevance] = []
    @exclusivity(unchecked) private var values: [Value?] = []
    /// By instance and value slot: where in `found` the answer is (-1: absent).
    @exclusivity(unchecked) private var valueAnswers: [Int] = []
    /// Where the expression being evaluated is: its object and bound references.
    @exclusivity(unchecked) private var evaluatingInstance = 0
    @exclusivity(unchecked) private var evaluatingLinks: Range<Int> = 0..<0
    /// The lookups (`pulldata`) of the expression being evaluated, by slot.
    @exclusivity(unchecked) private var evaluatingLookups: Range<Int> = 0..<0

    enum Relevance { case yes, no, unknown }

    struct Instance {
        let level: Int
        /// The enclosing object, its depth (how many repeats enclose it) and its index in its
        /// repeat's list.
        let parent: Int
        let depth: Int
        let index: Int
        /// Its ranges of `found` and `unknownKeys`, its first relevance and value slots.
        var answers: Range<Int> = 0..<0
        var unknown: Range<Int> = 0..<0
        let relevance: Int
        let values: Int
    }

    /// A key of an object that is some node's: the node's answer slot at that level and where
    /// the answer is in the object's dictionary (no copy of it, so nothing to release at the
    /// end); for a repeat, its instances (a range of `instances`).
    struct Found {
        let slot: Int
        let at: Dictionary<String, JSONValue>.Index
        var instances: Range<Int> = 0..<0
    }

    init(_ structure: FormStructure, answers: JSONValue) {
        self.structure = structure
        self.answers = answers
    }

    func run() -> AnswerCheck {
        guard let root = answers.objectValue else {
            return AnswerCheck(errors: [FieldError(path: "answers", message: "must be an object")])
        }
        gather(root)
        computeRelevance()
        walk(0)
        collectHiddenOutsideRepeats(structure.levels[0].top)
        return check
    }

    /// `AnswerCheck.hiddenOutsideRepeats`: `collectNotRelevant` at the top level, groups
    /// included, repeats left out.
    private func collectHiddenOutsideRepeats(_ entries: [Int]) {
        for e in entries {
            let entry = structure.entries[e]
            if relevanceOf(e, 0) == .no { check.hiddenOutsideRepeats.insert("answers.\(entry.id)") }
            if !entry.isRepeat && entry.question == nil { collectHiddenOutsideRepeats(structure.children[e]) }
        }
    }

    /// The paths of the nodes that are not relevant with these answers (`answers.<id>`, inside a
    /// repeat `answers.<repeatId>[<index>].<id>`; a group by its own id at the level it sits),
    /// for a reader that lays a response out. A node below a non-relevant one is listed too; a
    /// relevance that depends on the moment counts as relevant.
    func notRelevantPaths() -> Set<String> {
        guard let root = answers.objectValue else { return [] }
        gather(root)
        computeRelevance()
        var out: Set<String> = []
        collectNotRelevant(structure.levels[0].top, in: 0, prefix: "answers", into: &out)
        return out
    }

    private func collectNotRelevant(_ entries: [Int], in x: Int, prefix: String, into out: inout Set<String>) {
        for e in entries {
            let entry = structure.entries[e]
            let at = "\(prefix).\(entry.id)"
            if relevanceOf(e, x) == .no { out.insert(at) }
            if entry.isRepeat {
                for i in found(e, in: x).map({ found[$0].instances }) ?? 0..<0 {
                    collectNotRelevant(structure.children[e], in: i, prefix: "\(at)[\(instances[i].index)]", into: &out)
                }
            } else if entry.question == nil {
                collectNotRelevant(structure.children[e], in: x, prefix: prefix, into: &out)
            }
        }
    }

    // MARK: the objects of answers

    /// Reads every object of answers once, parents first: its keys into `found` (in the level's
    /// document order) or `unknownKeys`, a repeat's object items into new instances.
    private func gather(_ root: [String: JSONValue]) {
        let levels = structure.levels
        objects = [root]
        instances.append(Instance(level: 0, parent: -1, depth: 0, index: 0, relevance: 0, values: 0))
        var relevanceCount = levels[0].relevanceCount, valueCount = levels[0].valueCount
        // Grown at most once for a usual form: a repeat's instances hold about as many answers as the top.
        found.reserveCapacity(2 * root.count)
        instances.reserveCapacity(16)
        // An object's keys by slot, emptied again as they move to `found`.
        withUnsafeTemporaryAllocation(of: Dictionary<String, JSONValue>.Index?.self, capacity: structure.widestLevel) { bySlot in
            bySlot.initialize(repeating: nil)
            var x = 0
            while x < objects.count {
                let level = levels[instances[x].level]
                let object = objects[x]
                let firstUnknown = unknownKeys.count
                var i = object.startIndex
                while i != object.endIndex {
                    let key = object.keys[i]
                    if let slot = level.keys.slot(of: key), bySlot.indices.contains(slot) { bySlot[slot] = i } else { unknownKeys.append(key) }
                    object.formIndex(after: &i)
                }
                instances[x].unknown = firstUnknown..<unknownKeys.count
                let start = found.count
                let values = instances[x].values
                for (slot, e) in level.answering.enumerated() {
                    guard slot < bySlot.count, let at = bySlot[slot] else { continue }
                    bySlot[slot] = nil
                    var f = Found(slot: slot, at: at)
                    let read = structure.valueSlot[e]
                    if read >= 0 {
                        if valueAnswers.count < values + level.valueCount {
                            valueAnswers += repeatElement(-1, count: values + level.valueCount - valueAnswers.count)
                        }
                        valueAnswers[values + read] = found.count
                    }
                    let inner = structure.innerLevel[e]
                    if inner >= 0, case .array(let items) = object.values[at] {
                        let first = instances.count
                        for (i, item) in items.enumerated() {
                            guard case .object(let o) = item else { continue }
                            instances.append(Instance(level: inner, parent: x, depth: instances[x].depth + 1, index: i,
                                                      relevance: relevanceCount, values: valueCount))
                            objects.append(o)
                            relevanceCount += levels[inner].relevanceCount
                            valueCount += levels[inner].valueCount
                        }
                        f.instances = first..<instances.count
                    }
                    found.append(f)
                }
                instances[x].answers = start..<found.count
                x += 1
            }
        }
        relevance = [Relevance](repeating: .yes, count: relevanceCount)
        values = [Value?](repeating: nil, count: valueCount)
    }

    /// Where in `found` entry `e`'s answer in object `x` is: by its value slot when some logic
    /// reads it (set while gathering), else searched.
    private func answerIndex(_ e: Int, in x: Int) -> Int? {
        let slot = structure.valueSlot[e]
        guard slot >= 0 else { return found(e, in: x) }
        let at = instances[x].values + slot
        guard valueAnswers.indices.contains(at), valueAnswers[at] >= 0 else { return nil }
        return valueAnswers[at]
    }

    /// The answer `found[f]` of object `x`.
    private func answer(_ f: Int, in x: Int) -> JSONValue {
        objects[x].values[found[f].at]
    }

    /// The index in `found` of entry `e`'s answer in object `x` (of `e`'s level), if present.
    private func found(_ e: Int, in x: Int) -> Int? {
        let slot = structure.answerSlot[e]
        var range = instances[x].answers
        while !range.isEmpty {
            let mid = range.lowerBound + range.count / 2
            let s = found[mid].slot
            if s == slot { return mid }
            if s < slot { range = (mid + 1)..<range.upperBound } else { range = range.lowerBound..<mid }
        }
        return nil
    }

    /// The object enclosing `x` at `depth` (`x` itself at its own depth).
    private func ancestor(_ x: Int, depth: Int) -> Int {
        var a = x
        while instances[a].depth > depth, instances[a].parent >= 0 { a = instances[a].parent }
        return a
    }

    /// `answers.members[2]`: where object `x`'s answers are.
    private func prefix(_ x: Int) -> String {
        guard x > 0 else { return "answers" }
        let i = instances[x]
        return "\(prefix(i.parent)).\(structure.entries[structure.levels[i.level].repeatEntry].id)[\(i.index)]"
    }

    // MARK: relevance

    private func computeRelevance() {
        for e in structure.relevanceOrder {
            let entry = structure.entries[e]
            guard let logic = entry.relevant else { continue }
            let parent = entry.parent, level = structure.level[e], slot = structure.relevanceSlot[e]
            for x in instances.indices where instances[x].level == level {
                var r: Relevance = .yes
                if let parent {
                    // A repeat's children sit in one of its instances: that instance exists, so
                    // only the repeat's own relevance (outside it) counts.
                    r = relevanceOf(parent, x)
                }
                if r != .no {
                    switch evaluate(logic, in: x) {
                    case .some(let v): if !v.asBoolean { r = .no }
                    case .none: r = .unknown
                    }
                }
                relevance[instances[x].relevance + slot] = r
            }
        }
    }

    /// The relevance of entry `e` in object `x` (or one enclosing it): that of its relevance
    /// owner, the nearest of itself and its ancestors with a `relevant`.
    private func relevanceOf(_ e: Int, _ x: Int) -> Relevance {
        let owner = structure.relevanceOwner[e]
        guard owner >= 0 else { return .yes }
        let depth = structure.depth[owner]
        guard depth <= instances[x].depth else { return .yes }
        return relevance[instances[ancestor(x, depth: depth)].relevance + structure.relevanceSlot[owner]]
    }

    // MARK: values

    /// Evaluates `logic` in object `x`; nil when it depends on the moment, and false (an empty
    /// string) when it fails to evaluate within its bounds.
    private func evaluate(_ logic: FormStructure.BoundLogic, in x: Int, current: Value = .string(""),
                          field: ((String) -> Value)? = nil) -> Value? {
        if logic.dependsOnMoment { return nil }
        // No evaluation starts inside another: relevance is computed beforehand, and a
        // reference only reads answers.
        evaluatingInstance = x
        evaluatingLinks = logic.links
        evaluatingLookups = logic.lookups
        let position = instances[x].depth == 0 ? 0 : instances[x].index + 1
        guard let field else { return (try? logic.expression.evaluate(source: self, current: current, position: position)) ?? .string("") }
        let context = EvaluationContext(source: self, current: current, field: field, position: position)
        return (try? logic.expression.evaluate(context)) ?? .string("")
    }

    func value(ofReference slot: Int) -> Value {
        guard slot >= 0, slot < evaluatingLinks.count, structure.links.indices.contains(evaluatingLinks.lowerBound + slot) else { return .string("") }
        let link = structure.links[evaluatingLinks.lowerBound + slot]
        guard structure.entries.indices.contains(link.target) else { return .string("") }
        let base = ancestor(evaluatingInstance, depth: link.shared)
        return link.many ? list(link.target, below: base, shared: link.shared) : value(link.target, base)
    }

    /// `pulldata`: the bound table's value for the key (a number key as its text, `5` not `5.0`).
    func value(ofLookup slot: Int, key: Value) -> Value {
        guard slot >= 0, slot < evaluatingLookups.count, structure.lookups.indices.contains(evaluatingLookups.lowerBound + slot),
              let bound = structure.lookups[evaluatingLookups.lowerBound + slot] else { return .string("") }
        return .string(bound.table.value(column: bound.column, keyColumn: bound.keyColumn, key: key.asString))
    }

    /// Entry `target` read from object `base` that does not hold it: the list of its answers in
    /// every instance of the repeats between, or for a repeat, an item per instance.
    /// (`count(${members})`).
    private func list(_ target: Int, below base: Int, shared: Int) -> Value {
        let entry = structure.entries[target]
        let there = entry.isRepeat ? entry.repeats + [target] : entry.repeats
        var level = [base]
        for r in there.dropFirst(shared) {
            var next: [Int] = []
            for x in level {
                if let f = found(r, in: x) { next.append(contentsOf: found[f].instances) }
            }
            level = next
        }
        var items: [Value] = []
        for x in level {
            if entry.isRepeat {
                if relevanceOf(target, instances[x].parent) != .no { items.append(.string("")) }
            } else {
                items.append(value(target, x))
            }
        }
        return .nodes(items)
    }

    /// The answer to question entry `e` in object `x` as the language sees it: empty when absent or not relevant.
    private func value(_ e: Int, _ x: Int) -> Value {
        let slot = structure.valueSlot[e]
        guard slot >= 0 else { return readValue(e, x) }
        let at = instances[x].values + slot
        if let known = values[at] { return known }
        let v = readValue(e, x)
        values[at] = v
        return v
    }

    /// Read only once a target's relevance is final: relevance is computed in an order that puts
    /// each node after what its `relevant` reads, and the other logic runs after all of it.
    private func readValue(_ e: Int, _ x: Int) -> Value {
        guard let type = structure.entries[e].type, relevanceOf(e, x) != .no, let f = answerIndex(e, in: x) else { return .string("") }
        let answer = answer(f, in: x)
        guard !answer.isNull else { return .string("") }
        return Self.value(of: answer, type: type)
    }

    static func value(of answer: JSONValue, type: QuestionType) -> Value {
        switch type {
        case .integer, .decimal:
            return answer.doubleValue.map(Value.number) ?? .string(answer.stringValue ?? "")
        case .date, .datetime:
            guard let s = answer.stringValue else { return .string("") }
            let text = s.utf8.count == 10 ? s + "T00:00:00Z" : s
            return Timestamp.parse(text).map { .date(days: Double($0) / 86_400_000) } ?? .string(s)
        case .selectMultiple:
            return .string((answer.arrayValue ?? []).compactMap(\.stringValue).joined(separator: " "))
        case .geopoint:
            return .string(point(answer))
        case .geotrace, .geoshape:
            return .string((answer.arrayValue ?? []).map(point).joined(separator: ";"))
        case .file:
            return .string(answer["clientUploadId"]?.stringValue ?? "")
        case .calculate:
            if let b = answer.boolValue { return .boolean(b) }
            return answer.doubleValue.map(Value.number) ?? .string(answer.stringValue ?? "")
        case .text, .selectOne, .time, .barcode:
            return .string(answer.stringValue ?? "")
        }
    }

    /// ODK's text of a point: `lat lon altitude accuracy`.
    private static func point(_ p: JSONValue) -> String {
        ["lat", "lon", "altitude", "accuracy"].map { p[$0]?.doubleValue.map(CanonicalJSON.number) ?? "0" }.joined(separator: " ")
    }

    // MARK: the walk

    /// Checks object `x` against the nodes of its level, then its unknown keys (sorted).
    private func walk(_ x: Int) {
        var next = instances[x].answers.lowerBound
        walkLevel(structure.levels[instances[x].level].top, in: x, next: &next)
        let unknown = instances[x].unknown
        guard !unknown.isEmpty else { return }
        let at = prefix(x)
        for key in unknownKeys[unknown].sorted() {
            check.errors.append(FieldError(path: "\(at).\(key)", message: "unknown question"))
        }
    }

    /// `next`: the first of object `x`'s answers not yet passed; the walk meets the nodes in the
    /// order of their slots.
    private func walkLevel(_ entries: [Int], in x: Int, next: inout Int) {
        for e in entries {
            let entry = structure.entries[e]
            // An absent answer reads as null, as `present` tells apart.
            var answer = JSONValue.null
            var answered = -1
            let slot = structure.answerSlot[e]
            if slot >= 0, next < instances[x].answers.upperBound, found[next].slot == slot {
                answer = self.answer(next, in: x)
                answered = next
                next += 1
            }
            let present = answered >= 0
            if let type = entry.type {
                if let message = problem(entry, e, answer, x) {
                    check.errors.append(FieldError(path: "\(prefix(x)).\(entry.id)", message: message))
                } else if type == .file, present, let id = answer["clientUploadId"]?.stringValue {
                    check.fileAnswers.append(FileAnswer(questionId: entry.id, clientUploadId: id))
                }
            } else if let counts = entry.counts {
                let items = answer.isNull ? [] : answer.arrayValue
                guard let items, items.allSatisfy({ $0.objectValue != nil }) else {
                    check.errors.append(FieldError(path: "\(prefix(x)).\(entry.id)", message: "must be a list of objects, one per instance"))
                    continue
                }
                if relevanceOf(e, x) == .no {
                    if !items.isEmpty { check.errors.append(FieldError(path: "\(prefix(x)).\(entry.id)", message: "not relevant")) }
                    continue
                }
                if let message = countProblem(counts, items.count, e, x) {
                    check.errors.append(FieldError(path: "\(prefix(x)).\(entry.id)", message: message))
                }
                // Every item is an object: its instances are the items, in order.
                if answered >= 0 {
                    for i in found[answered].instances { walk(i) }
                }
            } else if structure.children[e].isEmpty {
                // A note: it takes no answer.
                if present { check.errors.append(FieldError(path: "\(prefix(x)).\(entry.id)", message: "a note takes no answer")) }
            } else {
                // A group: its children answer at this level. Its own id is no answer.
                walkLevel(structure.children[e], in: x, next: &next)
            }
        }
    }

    /// The first rule `answer` breaks, in the contract's order, or nil.
    private func problem(_ entry: FormStructure.Entry, _ e: Int, _ answer: JSONValue, _ x: Int) -> String? {
        let relevant = relevanceOf(e, x)
        if relevant == .no { return answer.isNull ? nil : "not relevant" }
        guard let type = entry.type else { return nil }
        var required = entry.required
        if let when = entry.requiredWhen {
            // Not enforced when it depends on the moment.
            required = evaluate(when, in: x)?.asBoolean ?? false
        }
        if answer.isNull { return required ? "required" : nil }
        if let constraint = entry.constraint,
           let v = evaluate(constraint, in: x, current: Self.value(of: answer, type: type)), !v.asBoolean {
            if let message = entry.constraintMessage { return message.text(in: structure.defaultLanguage) }
            return "does not meet the constraint \(constraint.expression.source)"
        }
        if let message = entry.rules?.problem(with: answer, required: required) { return message }
        if let filter = entry.choiceFilter, let q = entry.question {
            let chosen = type == .selectOne ? [answer.stringValue ?? ""] : (answer.arrayValue ?? []).compactMap(\.stringValue)
            for name in chosen {
                // A name that comes back in the list is offered when any of its choices passes the filter.
                var offered: Bool?
                for at in q.choiceIndex.positions(of: name) where q.options.indices.contains(at) {
                    let choice = q.options[at]
                    let field: (String) -> Value = { column in
                        column == "name" ? .string(choice.name) : .string(choice.columns[column] ?? choice.label?.text(in: nil) ?? "")
                    }
                    guard let v = evaluate(filter, in: x, field: field) else { offered = true; break }
                    if v.asBoolean { offered = true; break }
                    offered = false
                }
                if offered == false { return "\"\(name)\" is not offered here (its choice filter is false)" }
            }
        }
        return nil
    }

    private func countProblem(_ counts: RepeatCounts, _ n: Int, _ e: Int, _ x: Int) -> String? {
        if let min = counts.minCount, n < min { return "needs at least \(min) instance\(min == 1 ? "" : "s"), has \(n)" }
        if let max = counts.maxCount, n > max { return "takes at most \(max) instance\(max == 1 ? "" : "s"), has \(n)" }
        if let logic = structure.entries[e].repeatCount, let v = evaluate(logic, in: x) {
            let expected = v.asNumber
            // The least number: a phone makes the missing instances, and keeps those beyond a count
            // lowered after they were filled (the ODK XForms rule), so more are taken as sent.
            if expected.isFinite, expected >= 0, expected < 1e9, n < Int(expected) {
                return "must have at least \(Int(expected)) instance\(Int(expected) == 1 ? "" : "s") (its repeat count), has \(n)"
            }
        }
        return nil
    }
}
