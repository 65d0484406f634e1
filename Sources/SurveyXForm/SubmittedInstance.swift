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
    private let root: XMLElement

    public init(xml: [UInt8]) throws(XFormRefusal) {
        root = try XMLDocumentReader.parse(xml, document: "the submission")
        guard let id = root.attribute("id")?.trimmingWhitespace(), !id.isEmpty else {
            throw XFormRefusal("the submission's root element <\(root.name)> has no id attribute naming its form")
        }
        formId = id
        version = root.attribute("version")?.trimmingWhitespace()
        instanceID = root.children.first { $0.name == "meta" }?.children.first { $0.name == "instanceID" }?.text.trimmingWhitespace()
    }

    /// The answers as the JSON API takes them (`Docs/odk-collect.md`): groups unwrap, a repeat's
    /// elements become a list of objects, an empty element is no answer, numbers and points are
    /// read by the question's type, and a file question's file name becomes the upload
    /// `uploadId(fileName)`. An element no node of the definition names is kept as a text
    /// answer, so that the check refuses it by name rather than it being lost.
    /// `files`: each file the answers name, with its question, in document order.
    public func answers(for definition: SurveyDefinition, uploadId: (String) -> String) -> (answers: JSONValue, files: [NamedFile]) {
        var fileNames: [NamedFile] = []
        let object = Self.object(root.children, nodes: definition.nodes, top: true, uploadId: uploadId, fileNames: &fileNames)
        return (.object(object), fileNames)
    }

    /// A file an answer names: what the part carrying it is called, and its question.
    public struct NamedFile: Sendable, Equatable {
        public let fileName: String
        public let questionId: String
    }

    private static func object(_ elements: [XMLElement], nodes: [FormNode], top: Bool, uploadId: (String) -> String,
                               fileNames: inout [NamedFile]) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        var consumed = Array(repeating: false, count: elements.count)
        fill(&out, elements, &consumed, nodes: nodes, uploadId: uploadId, fileNames: &fileNames)
        for (i, element) in elements.enumerated() where !consumed[i] {
            // The meta block (instanceID, deviceID, …) is the envelope, not an answer.
            if top && element.name == "meta" { continue }
            if out[element.name] == nil { out[element.name] = .string(element.text) }
        }
        return out
    }

    /// Puts the answers of `nodes` (groups entered in place) found among `elements` into `out`.
    private static func fill(_ out: inout [String: JSONValue], _ elements: [XMLElement], _ consumed: inout [Bool], nodes: [FormNode],
                             uploadId: (String) -> String, fileNames: inout [NamedFile]) {
        // By local name: apps write the instance with or without the form's default namespace.
        var byName: [String: [Int]] = [:]
        for (i, element) in elements.enumerated() { byName[element.name, default: []].append(i) }
        fill(&out, elements, &consumed, byName, nodes: nodes, uploadId: uploadId, fileNames: &fileNames)
    }

    private static func fill(_ out: inout [String: JSONValue], _ elements: [XMLElement], _ consumed: inout [Bool], _ byName: [String: [Int]],
                             nodes: [FormNode], uploadId: (String) -> String, fileNames: inout [NamedFile]) {
        for node in nodes {
            let indices = byName[node.id] ?? []
            switch node.kind {
            case .group:
                // A group's element holds its children at the answers' own level.
                for i in indices {
                    consumed[i] = true
                    var inner = Array(repeating: false, count: elements[i].children.count)
                    fill(&out, elements[i].children, &inner, nodes: node.children, uploadId: uploadId, fileNames: &fileNames)
                    for (k, child) in elements[i].children.enumerated() where !inner[k] && out[child.name] == nil {
                        out[child.name] = .string(child.text)
                    }
                }
            case .repeat:
                var items: [JSONValue] = []
                for i in indices {
                    consumed[i] = true
                    items.append(.object(object(elements[i].children, nodes: node.children, top: false, uploadId: uploadId, fileNames: &fileNames)))
                }
                if !items.isEmpty { out[node.id] = .array(items) }
            case .note:
                for i in indices { consumed[i] = true }
            case .question(let question):
                guard let i = indices.first else { continue }
                for k in indices { consumed[k] = true }
                // A question appears once; a second element of its name is an answer of no node.
                if indices.count > 1 { out[node.id] = .string(elements[i].text + " " + elements[indices[1]].text); continue }
                let text = elements[i].text
                guard !text.isEmpty else { continue }
                if question.type == .file { fileNames.append(NamedFile(fileName: text, questionId: node.id)) }
                out[node.id] = value(text, type: question.type, uploadId: uploadId)
            }
        }
    }

    /// The JSON answer of an element's text; text that does not read as its type stays text, so
    /// that the check says what is wrong with it.
    static func value(_ text: String, type: QuestionType, uploadId: (String) -> String) -> JSONValue {
        switch type {
        case .integer:
            return isNumber(text, fraction: false) ? Double(text).map(JSONValue.number) ?? .string(text) : .string(text)
        case .decimal:
            return isNumber(text, fraction: true) ? Double(text).map(JSONValue.number) ?? .string(text) : .string(text)
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
        guard (2...4).contains(fields.count), fields.allSatisfy({ isNumber($0, fraction: true) }) else { return nil }
        let numbers = fields.compactMap(Double.init)
        guard numbers.count == fields.count else { return nil }
        var o: [String: JSONValue] = ["lat": .number(numbers[0]), "lon": .number(numbers[1])]
        if numbers.count > 2 { o["altitude"] = .number(numbers[2]) }
        if numbers.count > 3 { o["accuracy"] = .number(numbers[3]) }
        return .object(o)
    }

    /// `-?digits` (and with `fraction`, `-?digits.digits`, `-?.digits`, `-?digits.`): what ODK
    /// writes; never Swift's `Double` extras (`inf`, `nan`, hexadecimal, exponents).
    static func isNumber(_ text: String, fraction: Bool) -> Bool {
        var digits = 0, points = 0
        for (i, b) in text.utf8.enumerated() {
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits += 1
            case UInt8(ascii: "-") where i == 0: break
            case UInt8(ascii: ".") where fraction && points == 0: points += 1
            default: return false
            }
        }
        return digits > 0 && text.utf8.count <= 40
    }
}
