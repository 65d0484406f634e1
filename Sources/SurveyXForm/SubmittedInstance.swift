import SurveyForms

/// A filled-in form as ODK Collect, KoboCollect or Enketo send it (`xml_submission_file`): the
/// primary instance of the form's XForm with the answers as element text. Read with libxml2
/// like an XForm (no DTD, no entities, no network, bounded size and depth); then mapped onto the
/// answers of the JSON API by the version's definition, so the same check runs on both.
public struct SubmittedInstance: Sendable {
    /// The root element's `id`: the form's id.
    public let formId: String
    /// The root element's `version`, when the form has one.
    public let version: String?
    /// `meta/instanceID` (`uuid:…`): the submission's id, whichever door it arrives at.
    public let instanceID: String?
    /// `meta/deprecatedID`: the instanceID this instance replaces (ODK's edit of a sent form).
    public let deprecatedID: String?
    /// `meta/entity` as the JSON door's `entity` (`{dataset, id, create?, update?, baseVersion?,
    /// trunkVersion?, branchId?, label?}`), when the instance has one: what the device did to an
    /// entity, its conditions already evaluated.
    public let entity: JSONValue?
    private let root: XMLElement

    public init(xml: [UInt8]) throws(XFormRefusal) {
        root = try XMLDocumentReader.parse(xml, document: "the submission")
        guard let id = root.attribute("id")?.trimmingWhitespace(), !id.isEmpty else {
            throw XFormRefusal("the submission's root element <\(root.name)> has no id attribute naming its form")
        }
        formId = id
        version = root.attribute("version")?.trimmingWhitespace()
        let meta = root.children.first { $0.name == "meta" }
        instanceID = meta?.children.first { $0.name == "instanceID" }?.text.trimmingWhitespace()
        deprecatedID = meta?.children.first { $0.name == "deprecatedID" }.map { $0.text.trimmingWhitespace() }.flatMap { $0.isEmpty ? nil : $0 }
        entity = meta?.children.first { $0.name == "entity" }.map(Self.entity)
    }

    /// Whether `xml` holds `name` anywhere: a look at the bytes before any parse (`memchr`).
    public static func mayName(_ name: StaticString, _ xml: [UInt8]) -> Bool { XMLDocumentReader.contains(xml, name) }

    /// The `meta/entity` of each group and repeat instance that declares an entity (Entities
    /// 2025.1), as the JSON door's `entities` items (`{container, index?, …}`: `index` the
    /// instance of the repeat holding the container, counted from 0), in document order.
    public func entities(for definition: SurveyDefinition) -> [JSONValue] {
        let containers = Set(definition.entities.compactMap(\.container))
        guard !containers.isEmpty else { return [] }
        var out: [JSONValue] = []
        // The group and repeat elements of one level with their nodes, in document order, and
        // the repeat instance each is in.
        func containerElements(_ elements: [XMLElement], _ nodes: [FormNode], _ index: Int?) -> [(XMLElement, FormNode, Int?)] {
            let byName = ElementsByName(elements)
            var found: [(position: Int, XMLElement, FormNode, Int?)] = []
            for node in nodes where node.isRepeat || node.kind == .group {
                for (k, i) in byName.indices(node.name).enumerated() { found.append((i, elements[i], node, node.isRepeat ? k : index)) }
            }
            return found.sorted { $0.position < $1.position }.map { ($0.1, $0.2, $0.3) }
        }
        // Iterative, depth first in document order.
        var stack = containerElements(root.children, definition.nodes, nil).reversed().map { $0 }
        while let (element, node, index) = stack.popLast() {
            if containers.contains(node.id),
               let e = element.children.first(where: { $0.name == "meta" })?.children.first(where: { $0.name == "entity" }),
               var o = Self.entity(e).objectValue {
                o["container"] = .string(node.id)
                if let index { o["index"] = .number(Double(index)) }
                out.append(.object(o))
            }
            stack += containerElements(element.children, node.children, index).reversed()
        }
        return out
    }

    /// ODK writes a flag as `1` / `true` (`0`, `false` or empty: not), a version as its number.
    private static func entity(_ e: XMLElement) -> JSONValue {
        var o: [String: JSONValue] = [:]
        for a in e.attributes where a.namespace == nil {
            let value = a.value.trimmingWhitespace()
            switch a.name {
            case "create", "update":
                if value == "1" || value == "true" { o[a.name] = true } else if value != "0" && value != "false" && !value.isEmpty {
                    o[a.name] = .string(value)  // neither: refused by name with the submission
                }
            case "baseVersion", "trunkVersion":
                guard !value.isEmpty else { continue }
                o[a.name] = number(value, fraction: false).map(JSONValue.number) ?? .string(value)
            case "dataset", "id", "branchId":
                if !value.isEmpty { o[a.name] = .string(value) }
            default:
                continue
            }
        }
        if let label = e.children.first(where: { $0.name == "label" }) { o["label"] = .string(label.text) }
        return .object(o)
    }

    /// The answers as the JSON API takes them (`Docs/odk-collect.md`): groups unwrap, a repeat's
    /// elements become a list of objects, an empty element is no answer, numbers and points are
    /// read by the question's type (as JavaRosa writes them: `1.5E7`, `5.0E-4`), and a file
    /// question's file name becomes the upload `uploadId(fileName)`. An element no node of the
    /// definition names is kept as a text answer, so that the check refuses it by name rather
    /// than it being lost. `files`: each file the answers name, with its question, in document
    /// order. `problems`: what no ODK app can have written, which the JSON API's rules do not
    /// refuse — an integer beyond JavaRosa's 32 bits — at its answer's path.
    public func answers(for definition: SurveyDefinition, uploadId: (String) -> String)
        -> (answers: JSONValue, files: [NamedFile], problems: [FieldError]) {
        withoutActuallyEscaping(uploadId) { uploadId in
            var reading = Reading(uploadId: uploadId, entityContainers: Set(definition.entities.compactMap(\.container)))
            let object = Self.object(root.children, nodes: definition.nodes, top: true, path: "answers", &reading)
            return (.object(object), reading.files, reading.problems)
        }
    }

    /// The `meta` holding the `entity` of a group or repeat instance the form declares one in:
    /// the envelope, not an answer (elsewhere it is an answer of no node, refused by name).
    private static func isEntityMeta(_ element: XMLElement, of container: String, _ reading: Reading) -> Bool {
        element.name == "meta" && reading.entityContainers.contains(container) && element.children.contains { $0.name == "entity" }
    }

    /// What reading the answers collects besides them.
    private struct Reading {
        let uploadId: (String) -> String
        /// The groups and repeats the form declares an entity in.
        let entityContainers: Set<String>
        var files: [NamedFile] = []
        var problems: [FieldError] = []
    }

    /// A file an answer names: what the part carrying it is called, and its question.
    public struct NamedFile: Sendable, Equatable {
        public let fileName: String
        public let questionId: String
    }

    /// `container`: the repeat whose instance `elements` are, nil at the top.
    private static func object(_ elements: [XMLElement], nodes: [FormNode], top: Bool, container: String? = nil, path: String,
                               _ reading: inout Reading) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        out.reserveCapacity(elements.count)
        var consumed = Array(repeating: false, count: elements.count)
        fill(&out, elements, &consumed, nodes: nodes, path: path, &reading)
        for (i, element) in elements.enumerated() where !consumed[i] {
            // The meta block (instanceID, deviceID, …) is the envelope, not an answer.
            if top && element.name == "meta" { continue }
            if let container, isEntityMeta(element, of: container, reading) { continue }
            if out[element.name] == nil { out[element.name] = .string(element.text) }
        }
        return out
    }

    /// Where each node's elements are among one level's elements (found by local name: apps write
    /// the instance with or without the form's default namespace). Apps write an instance in its
    /// form's order, so one walk in step with the nodes usually places them all, comparing names
    /// and hashing none. When it does not — an element out of order, a name met apart or twice
    /// over — the level's names are put in a table, which places the same elements wherever they are.
    private struct Placement {
        /// Each node's elements as one run, from the walk in step.
        private var runs: [Range<Int>] = []
        private var table: ElementsByName?
        private let nodes: [FormNode]
        private static let exceptions = 8

        init(_ elements: [XMLElement], nodes: [FormNode]) {
            self.nodes = nodes
            var runs: [Range<Int>] = []
            runs.reserveCapacity(nodes.count)
            // Each exception is looked for across the level, so a few are: past them, the table
            // costs less (and an instance of many stray elements stays linear).
            var i = 0, inStep = true, absent = 0
            for node in nodes {
                let start = i
                while i < elements.count && elements[i].name == node.name { i += 1 }
                // A node with no element here must have none anywhere else on the level either.
                if start == i {
                    absent += 1
                    if absent > Self.exceptions || elements.contains(where: { $0.name == node.name }) { inStep = false; break }
                }
                runs.append(start..<i)
            }
            // What the walk left over (the meta block; an element no node names) must be no node's.
            if inStep && i < elements.count {
                inStep = elements.count - i <= Self.exceptions
                    && !elements[i...].contains { element in nodes.contains { $0.name == element.name } }
            }
            if inStep { self.runs = runs } else { table = ElementsByName(elements) }
        }

        /// The elements of node `n`, in document order.
        func indices(ofNode n: Int) -> [Int] {
            if let table { return table.indices(nodes[n].name) }
            return Array(runs[n])
        }

        /// The first element of node `n`, and the second when there is one.
        func firstTwo(ofNode n: Int) -> (first: Int, second: Int?)? {
            if let table {
                guard let first = table.first(nodes[n].name) else { return nil }
                return (first, table.second(after: first))
            }
            let run = runs[n]
            guard let first = run.first else { return nil }
            return (first, run.count > 1 ? first + 1 : nil)
        }
    }

    /// The elements of one level by local name: the first of each name, and for each element the
    /// next of its name — one table and one array, however many repeat instances there are.
    private struct ElementsByName {
        private var first: [String: Int] = [:]
        private var next: [Int]

        init(_ elements: [XMLElement]) {
            next = Array(repeating: -1, count: elements.count)
            first.reserveCapacity(elements.count)
            var last: [String: Int] = [:]
            for (i, element) in elements.enumerated() {
                if let previous = last.updateValue(i, forKey: element.name) { next[previous] = i } else { first[element.name] = i }
            }
        }

        /// The indices of the elements named `name`, in document order.
        func indices(_ name: String) -> [Int] {
            var out: [Int] = []
            var i = first[name] ?? -1
            while i >= 0 { out.append(i); i = next[i] }
            return out
        }

        func first(_ name: String) -> Int? { first[name] }
        func second(after i: Int) -> Int? { next[i] >= 0 ? next[i] : nil }
    }

    /// Puts the answers of `nodes` (groups entered in place) found among `elements` into `out`.
    private static func fill(_ out: inout [String: JSONValue], _ elements: [XMLElement], _ consumed: inout [Bool], nodes: [FormNode],
                             path: String, _ reading: inout Reading) {
        let placement = Placement(elements, nodes: nodes)
        // By index: a node is read in place, never copied with its question and children.
        for n in nodes.indices {
            // Elements are found by the node's name, answers keyed by its id.
            let id = nodes[n].id
            switch nodes[n].kind {
            case .group:
                // A group's element holds its children at the answers' own level.
                for i in placement.indices(ofNode: n) {
                    consumed[i] = true
                    let children = elements[i].children
                    var inner = Array(repeating: false, count: children.count)
                    fill(&out, children, &inner, nodes: nodes[n].children, path: path, &reading)
                    for (k, child) in children.enumerated() where !inner[k] && out[child.name] == nil && !isEntityMeta(child, of: id, reading) {
                        out[child.name] = .string(child.text)
                    }
                }
            case .repeat:
                var items: [JSONValue] = []
                for i in placement.indices(ofNode: n) {
                    consumed[i] = true
                    items.append(.object(object(elements[i].children, nodes: nodes[n].children, top: false, container: id, path: "\(path).\(id)[\(items.count)]",
                                                &reading)))
                }
                if !items.isEmpty { out[id] = .array(items) }
            case .note:
                for i in placement.indices(ofNode: n) { consumed[i] = true }
            case .question:
                guard let (i, second) = placement.firstTwo(ofNode: n) else { continue }
                consumed[i] = true
                // A question appears once; a second element of its name is an answer of no node.
                if let second {
                    for k in placement.indices(ofNode: n) { consumed[k] = true }
                    out[id] = .string(elements[i].text + " " + elements[second].text)
                    continue
                }
                let text = elements[i].text
                guard !text.isEmpty, let type = nodes[n].questionType else { continue }
                if type == .file {
                    // A file answers one question: a second naming it would be stored under the
                    // same upload id (the instance's and the name's) for another question.
                    if let first = reading.files.first(where: { $0.fileName == text }) {
                        reading.problems.append(FieldError(path: "\(path).\(id)", message: "names the file \(text), which \(first.questionId) names too; each file question takes a file of its own"))
                    }
                    reading.files.append(NamedFile(fileName: text, questionId: id))
                }
                let answer = value(text, type: type, uploadId: reading.uploadId)
                if type == .integer, let n = answer.doubleValue, !(Double(Int32.min)...Double(Int32.max)).contains(n) {
                    reading.problems.append(FieldError(path: "\(path).\(id)", message: "too large for an integer question (ODK apps hold -2147483648 to 2147483647)"))
                }
                out[id] = answer
            }
        }
    }

    /// The JSON answer of an element's text; text that does not read as its type stays text, so
    /// that the check says what is wrong with it.
    static func value(_ text: String, type: QuestionType, uploadId: (String) -> String) -> JSONValue {
        switch type {
        case .integer:
            return number(text, fraction: false).map(JSONValue.number) ?? .string(text)
        case .decimal:
            return number(text, fraction: true).map(JSONValue.number) ?? .string(text)
        case .selectMultiple:
            return .array(text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).map { .string(String($0)) })
        case .geopoint:
            return point(text) ?? .string(text)
        case .geotrace, .geoshape:
            let parts = text.split(separator: ";").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
            var points: [JSONValue] = []
            for part in parts {
                guard let p = point(part) else { return .string(text) }
                points.append(p)
            }
            return .array(points)
        case .file:
            return .object(["clientUploadId": .string(uploadId(text))])
        case .text, .selectOne, .date, .time, .datetime, .barcode, .calculate:
            return .string(text)
        }
    }

    /// ODK's point: `lat lon [altitude [accuracy]]`.
    private static func point(_ text: String) -> JSONValue? {
        let fields = text.split(whereSeparator: { $0 == " " }).map(String.init)
        guard (2...4).contains(fields.count) else { return nil }
        let numbers = fields.compactMap { number($0, fraction: true) }
        guard numbers.count == fields.count else { return nil }
        var o: [String: JSONValue] = ["lat": .number(numbers[0]), "lon": .number(numbers[1])]
        if numbers.count > 2 { o["altitude"] = .number(numbers[2]) }
        if numbers.count > 3 { o["accuracy"] = .number(numbers[3]) }
        return .object(o)
    }

    /// A finite number as ODK writes it: `-?digits` for an integer; for a decimal also a point
    /// (`-?digits.digits`, `-?.digits`, `-?digits.`) and an exponent after the digits (`1.5E7`,
    /// `5.0E-4`: Java's `Double.toString`, which JavaRosa writes decimals and points with). Never
    /// Swift's or Java's other spellings (`inf`, `NaN`, `Infinity`, hexadecimal), never a value
    /// that overflows to infinity.
    static func number(_ text: String, fraction: Bool) -> Double? {
        guard text.utf8.count <= 40 else { return nil }
        var digits = 0, points = 0, exponentAt: Int?, exponentDigits = 0
        for (i, b) in text.utf8.enumerated() {
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if exponentAt == nil { digits += 1 } else { exponentDigits += 1 }
            case UInt8(ascii: "-") where i == 0: break
            case UInt8(ascii: "-"), UInt8(ascii: "+"):
                guard let e = exponentAt, i == e + 1 else { return nil }
            case UInt8(ascii: ".") where fraction && points == 0 && exponentAt == nil: points += 1
            case UInt8(ascii: "E"), UInt8(ascii: "e"):
                guard fraction, exponentAt == nil, digits > 0 else { return nil }
                exponentAt = i
            default: return nil
            }
        }
        guard digits > 0, exponentAt == nil || exponentDigits > 0, let value = Double(text), value.isFinite else { return nil }
        return value
    }
}
