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
    private let root: [String: JSONValue]
    // A check is one object used by one thread, never shared: the run-time exclusivity checks
    // of its state (7 % of a roster form's check) are left out.
    @exclusivity(unchecked) private var check = AnswerCheck()
    /// Relevance by entry: outside repeats one value, inside one repeat a value per instance,
    /// deeper by instance path (the indices of the enclosing repeats' instances).
    @exclusivity(unchecked) private var relevanceTop: [Relevance]
    @exclusivity(unchecked) private var relevanceInOne: [[Relevance]]
    @exclusivity(unchecked) private var relevanceDeeper: [[[Int]: Relevance]]
    /// Every instance of a repeat (its path and its answers), by the repeat's entry.
    @exclusivity(unchecked) private var instanceCache: [Int: [([Int], [String: JSONValue])]] = [:]
    @exclusivity(unchecked) private var pathCache: [Int: [[Int]]] = [:]
    /// Answers as the language sees them, once read: outside repeats by entry, inside one
    /// repeat by entry and instance. A form reads the same few answers many times.
    @exclusivity(unchecked) private var valueTop: [Value?]
    @exclusivity(unchecked) private var valueInOne: [[Value?]]
    /// Where the expression being evaluated is: its entry, instance path and bound references.
    @exclusivity(unchecked) private var evaluatingEntry = 0
    @exclusivity(unchecked) private var evaluatingPath: [Int] = []
    @exclusivity(unchecked) private var evaluatingTargets: [Int] = []
    @exclusivity(unchecked) private var evaluatingLookups: [FormStructure.BoundLookup?] = []

    enum Relevance { case yes, no, unknown }

    init(_ structure: FormStructure, answers: JSONValue) {
        self.structure = structure
        self.answers = answers
        root = answers.objectValue ?? [:]
        let n = structure.entries.count
        relevanceTop = Array(repeating: .yes, count: n)
        relevanceInOne = Array(repeating: [], count: n)
        relevanceDeeper = Array(repeating: [:], count: n)
        valueTop = Array(repeating: nil, count: n)
        valueInOne = Array(repeating: [], count: n)
    }

    func run() -> AnswerCheck {
        guard answers.objectValue != nil else {
            return AnswerCheck(errors: [FieldError(path: "answers", message: "must be an object")])
        }
        computeRelevance()
        walk(structure.topLevel, in: root, path: [], prefix: "answers")
        return check
    }

    /// The paths of the nodes that are not relevant with these answers (`answers.<id>`, inside a
    /// repeat `answers.<repeatId>[<index>].<id>`; a group by its own id at the level it sits),
    /// for a reader that lays a response out. A node below a non-relevant one is listed too; a
    /// relevance that depends on the moment counts as relevant.
    func notRelevantPaths() -> Set<String> {
        guard answers.objectValue != nil else { return [] }
        computeRelevance()
        var out: Set<String> = []
        collectNotRelevant(structure.topLevel, in: root, path: [], prefix: "answers", into: &out)
        return out
    }

    private func collectNotRelevant(_ entries: [Int], in object: [String: JSONValue], path: [Int], prefix: String, into out: inout Set<String>) {
        for e in entries {
            let entry = structure.entries[e]
            let at = "\(prefix).\(entry.id)"
            if relevanceOf(e, path) == .no { out.insert(at) }
            if entry.isRepeat {
                for (i, item) in (object[entry.id]?.arrayValue ?? []).enumerated() {
                    guard let inner = item.objectValue else { continue }
                    collectNotRelevant(children(of: e), in: inner, path: path + [i], prefix: "\(at)[\(i)]", into: &out)
                }
            } else if entry.question == nil {
                collectNotRelevant(children(of: e), in: object, path: path, prefix: prefix, into: &out)
            }
        }
    }

    // MARK: relevance

    private func computeRelevance() {
        for e in structure.relevanceOrder {
            let entry = structure.entries[e]
            if entry.repeats.isEmpty {
                setRelevance(e, [], relevanceAt(entry, e, []))
            } else {
                let paths = instancePaths(of: entry.repeats)
                if entry.repeats.count == 1, let last = paths.last?.first {
                    relevanceInOne[e] = Array(repeating: .yes, count: last + 1)
                }
                for path in paths { setRelevance(e, path, relevanceAt(entry, e, path)) }
            }
        }
    }

    private func relevanceAt(_ entry: FormStructure.Entry, _ e: Int, _ path: [Int]) -> Relevance {
        var r: Relevance = .yes
        if let parent = entry.parent {
            // A repeat's children sit in one of its instances: that instance exists, so only the
            // repeat's own relevance (outside it) counts.
            r = relevanceOf(parent, path)
        }
        if r != .no, let logic = entry.relevant {
            switch evaluate(logic, at: e, path: path) {
            case .some(let v): if !v.asBoolean { r = .no }
            case .none: r = .unknown
            }
        }
        return r
    }

    private func setRelevance(_ e: Int, _ path: [Int], _ r: Relevance) {
        switch path.count {
        case 0: relevanceTop[e] = r
        case 1:
            let i = path[0]
            if relevanceInOne[e].count <= i { relevanceInOne[e] += Array(repeating: .yes, count: i + 1 - relevanceInOne[e].count) }
            relevanceInOne[e][i] = r
        default: relevanceDeeper[e][path] = r
        }
    }

    /// The relevance of entry `e` in the instance named by (the first indices of) `path`: that
    /// of its relevance owner, the nearest of itself and its ancestors with a `relevant`.
    private func relevanceOf(_ e: Int, _ path: [Int]) -> Relevance {
        let owner = structure.relevanceOwner[e]
        guard owner >= 0 else { return .yes }
        let depth = structure.depth[owner]
        guard depth <= path.count else { return .yes }
        switch depth {
        case 0: return relevanceTop[owner]
        case 1: return relevanceInOne[owner].indices.contains(path[0]) ? relevanceInOne[owner][path[0]] : .yes
        default: return relevanceDeeper[owner][Array(path.prefix(depth))] ?? .yes
        }
    }

    /// The instance paths of `repeats` (outermost first); `[[]]` outside repeats.
    private func instancePaths(of repeats: [Int]) -> [[Int]] {
        guard let innermost = repeats.last else { return [[]] }
        if let cached = pathCache[innermost] { return cached }
        let found = instances(of: repeats).map(\.0)
        pathCache[innermost] = found
        return found
    }

    /// Every instance path of `repeats` (outermost first) with the object holding the answers
    /// there; `[([], root)]` outside repeats.
    private func instances(of repeats: [Int]) -> [([Int], [String: JSONValue])] {
        guard let innermost = repeats.last else { return [([], root)] }
        if let cached = instanceCache[innermost] { return cached }
        let found = instances(of: repeats[...], from: [([], root)])
        instanceCache[innermost] = found
        return found
    }

    /// The instances of `repeats` below each of `level`'s objects, their paths extending `level`'s.
    private func instances(of repeats: ArraySlice<Int>, from level: [([Int], [String: JSONValue])]) -> [([Int], [String: JSONValue])] {
        var level = level
        for r in repeats {
            let id = structure.entries[r].id
            var next: [([Int], [String: JSONValue])] = []
            for (path, object) in level {
                for (i, item) in (object[id]?.arrayValue ?? []).enumerated() {
                    if let o = item.objectValue { next.append((path + [i], o)) }
                }
            }
            level = next
        }
        return level
    }

    /// The object holding the answers at `path` inside `repeats`.
    private func object(_ repeats: [Int], _ path: [Int]) -> [String: JSONValue]? {
        guard path.count == repeats.count else { return nil }
        var o = root
        for (r, i) in zip(repeats, path) {
            guard let items = o[structure.entries[r].id]?.arrayValue, items.indices.contains(i), let inner = items[i].objectValue else { return nil }
            o = inner
        }
        return o
    }

    // MARK: values

    /// Evaluates `logic` of entry `e` at `path`; nil when it depends on the moment, and false
    /// (an empty string) when it fails to evaluate within its bounds.
    private func evaluate(_ logic: FormStructure.BoundLogic, at e: Int, path: [Int], current: Value = .string(""),
                          field: @escaping (String) -> Value = { _ in .string("") }) -> Value? {
        if logic.dependsOnMoment { return nil }
        // No evaluation starts inside another: relevance is computed beforehand, and a
        // reference only reads answers.
        evaluatingEntry = e
        evaluatingPath = path
        evaluatingTargets = logic.targets
        evaluatingLookups = logic.lookups
        let context = EvaluationContext(source: self, current: current, field: field, position: (path.last ?? -1) + 1)
        return (try? logic.expression.evaluate(context)) ?? .string("")
    }

    func value(ofReference slot: Int) -> Value {
        guard evaluatingTargets.indices.contains(slot) else { return .string("") }
        return reference(evaluatingTargets[slot], from: evaluatingEntry, path: evaluatingPath)
    }

    /// `pulldata`: the bound table's value for the key (a number key as its text, `5` not `5.0`).
    func value(ofLookup slot: Int, key: Value) -> Value {
        guard evaluatingLookups.indices.contains(slot), let bound = evaluatingLookups[slot] else { return .string("") }
        return .string(bound.table.value(column: bound.column, keyColumn: bound.keyColumn, key: key.asString))
    }

    /// Entry `target` as seen from entry `from` at `path`: the answer in the same (or an enclosing)
    /// instance, or the list of answers of every instance of a repeat that does not enclose it.
    /// A repeat itself stands for the list of its instances (`count(${members})`).
    private func reference(_ target: Int, from: Int, path: [Int]) -> Value {
        guard structure.entries.indices.contains(target) else { return .string("") }
        let entry = structure.entries[target]
        // The usual case: a question outside repeats, read wherever it is read from.
        if entry.repeats.isEmpty && !entry.isRepeat { return value(target, []) }
        let here = structure.entries[from].repeats
        let isRepeat = entry.isRepeat
        let there = isRepeat ? entry.repeats + [target] : entry.repeats
        var shared = 0
        while shared < here.count, shared < there.count, here[shared] == there[shared] { shared += 1 }
        if isRepeat && shared == there.count { shared -= 1 }  // from inside the repeat: all its instances
        // The usual case inside a repeat, a sibling in the same instance, needs no copy of the path.
        let base = shared == path.count ? path : Array(path.prefix(shared))
        if shared == there.count { return value(target, base) }
        guard let start = object(Array(there.prefix(shared)), base) else { return .nodes([]) }
        var items: [Value] = []
        for (full, _) in instances(of: there[shared...], from: [(base, start)]) {
            if isRepeat {
                if relevanceOf(target, Array(full.dropLast())) != .no { items.append(.string("")) }
            } else {
                items.append(value(target, full))
            }
        }
        return .nodes(items)
    }

    /// The answer to question entry `e` at `path` as the language sees it: empty when absent or not relevant.
    private func value(_ e: Int, _ path: [Int]) -> Value {
        switch path.count {
        case 0:
            if let known = valueTop[e] { return known }
            let v = readValue(e, path)
            valueTop[e] = v
            return v
        case 1:
            let i = path[0]
            if valueInOne[e].indices.contains(i), let known = valueInOne[e][i] { return known }
            let v = readValue(e, path)
            if valueInOne[e].count <= i { valueInOne[e] += Array(repeating: nil, count: max(8, i + 1 - valueInOne[e].count)) }
            valueInOne[e][i] = v
            return v
        default:
            return readValue(e, path)
        }
    }

    /// Read only once a target's relevance is final: relevance is computed in an order that puts
    /// each node after what its `relevant` reads, and the other logic runs after all of it.
    private func readValue(_ e: Int, _ path: [Int]) -> Value {
        let entry = structure.entries[e]
        guard let type = entry.type, relevanceOf(e, path) != .no else { return .string("") }
        let answer = entry.repeats.isEmpty ? root[entry.id] : object(entry.repeats, path)?[entry.id]
        guard let answer, !answer.isNull else { return .string("") }
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

    /// Checks the nodes `entries` (siblings, groups to be entered) against `object`.
    private func walk(_ entries: [Int], in object: [String: JSONValue], path: [Int], prefix: String) {
        var present = 0
        walkLevel(entries, in: object, path: path, prefix: prefix, present: &present)
        // Ids are unique: when every key was some node's, there is no unknown key to look for.
        guard present < object.count else { return }
        var known: Set<String> = []
        collectIds(entries, into: &known)
        for key in object.keys.filter({ !known.contains($0) }).sorted() {
            check.errors.append(FieldError(path: "\(prefix).\(key)", message: "unknown question"))
        }
    }

    /// The ids answered at this level: groups entered, repeats' children not.
    private func collectIds(_ entries: [Int], into known: inout Set<String>) {
        for e in entries {
            let entry = structure.entries[e]
            if entry.question == nil && !entry.isRepeat && !structure.children[e].isEmpty {
                collectIds(structure.children[e], into: &known)
            } else {
                known.insert(entry.id)
            }
        }
    }

    private func walkLevel(_ entries: [Int], in object: [String: JSONValue], path: [Int], prefix: String, present: inout Int) {
        for e in entries {
            let entry = structure.entries[e]
            let answer = object[entry.id]
            if answer != nil { present += 1 }
            if let type = entry.type {
                if let message = problem(entry, e, answer ?? .null, path) {
                    check.errors.append(FieldError(path: "\(prefix).\(entry.id)", message: message))
                } else if type == .file, let id = answer?["clientUploadId"]?.stringValue {
                    check.fileAnswers.append(FileAnswer(questionId: entry.id, clientUploadId: id))
                }
            } else if let counts = entry.counts {
                let at = "\(prefix).\(entry.id)"
                let value = answer ?? .null
                let items = value.isNull ? [] : value.arrayValue
                guard let items, items.allSatisfy({ $0.objectValue != nil }) else {
                    check.errors.append(FieldError(path: at, message: "must be a list of objects, one per instance"))
                    continue
                }
                if relevanceOf(e, path) == .no {
                    if !items.isEmpty { check.errors.append(FieldError(path: at, message: "not relevant")) }
                    continue
                }
                if let message = countProblem(counts, items.count, e, path) {
                    check.errors.append(FieldError(path: at, message: message))
                }
                for (i, item) in items.enumerated() {
                    walk(children(of: e), in: item.objectValue ?? [:], path: path + [i], prefix: "\(at)[\(i)]")
                }
            } else if structure.children[e].isEmpty {
                // A note: it takes no answer.
                if answer != nil { check.errors.append(FieldError(path: "\(prefix).\(entry.id)", message: "a note takes no answer")) }
            } else {
                // A group: its children answer at this level. Its own id is no answer.
                if answer != nil { present -= 1 }
                walkLevel(children(of: e), in: object, path: path, prefix: prefix, present: &present)
            }
        }
    }

    private func children(of e: Int) -> [Int] { structure.children[e] }

    /// The first rule `answer` breaks, in the contract's order, or nil.
    private func problem(_ entry: FormStructure.Entry, _ e: Int, _ answer: JSONValue, _ path: [Int]) -> String? {
        let relevant = relevanceOf(e, path)
        if relevant == .no { return answer.isNull ? nil : "not relevant" }
        guard let type = entry.type else { return nil }
        var required = entry.required
        if let when = entry.requiredWhen {
            // Not enforced when it depends on the moment.
            required = evaluate(when, at: e, path: path)?.asBoolean ?? false
        }
        if answer.isNull { return required ? "required" : nil }
        if let constraint = entry.constraint,
           let v = evaluate(constraint, at: e, path: path, current: Self.value(of: answer, type: type)), !v.asBoolean {
            if let message = entry.constraintMessage { return message.text(in: structure.defaultLanguage) }
            return "does not meet the constraint \(constraint.expression.source)"
        }
        if let message = entry.question?.problem(with: answer, required: required) { return message }
        if let filter = entry.choiceFilter, let q = entry.question {
            let chosen = type == .selectOne ? [answer.stringValue ?? ""] : (answer.arrayValue ?? []).compactMap(\.stringValue)
            for name in chosen {
                guard let at = q.choiceIndex.position(of: name), q.options.indices.contains(at) else { continue }
                let choice = q.options[at]
                let field: (String) -> Value = { column in
                    column == "name" ? .string(choice.name) : .string(choice.columns[column] ?? choice.label?.text(in: nil) ?? "")
                }
                if let v = evaluate(filter, at: e, path: path, field: field), !v.asBoolean {
                    return "\"\(name)\" is not offered here (its choice filter is false)"
                }
            }
        }
        return nil
    }

    private func countProblem(_ counts: RepeatCounts, _ n: Int, _ e: Int, _ path: [Int]) -> String? {
        if let min = counts.minCount, n < min { return "needs at least \(min) instance\(min == 1 ? "" : "s"), has \(n)" }
        if let max = counts.maxCount, n > max { return "takes at most \(max) instance\(max == 1 ? "" : "s"), has \(n)" }
        if let logic = structure.entries[e].repeatCount, let v = evaluate(logic, at: e, path: path) {
            let expected = v.asNumber
            if expected.isFinite, expected >= 0, expected < 1e9, Int(expected) != n {
                return "must have \(Int(expected)) instances (its repeat count), has \(n)"
            }
        }
        return nil
    }
}
