import SurveyExpressions
import SurveyForms

/// Writes a survey definition as an ODK XForm — what ODK Collect runs — in the shape pyxform
/// gives it: `h:html`/`h:head`/`model` with the primary instance `<data id="…" version="…">`
/// and `meta/instanceID`, a bind per node, `itext` translations for every language (the
/// default first, marked `default="true()"`), a secondary instance for each choice list, a
/// repeat as a template and a first instance (`jr:template`, `jr:count`), and the body's
/// controls, groups and notes (`Docs/forms.md`, "The XForm of a JSON definition").
///
/// It is `XFormReader`'s inverse: the reader reads the XForm back into the same definition —
/// the same canonical JSON, so the same `contentHash`. What a definition holds that an XForm
/// has no place for (`maxLength`, `minimum`, a repeat's `minCount`, a calculation's label, a
/// choice written as a bare name, …) is written in surveyd's namespace (`surveyd:maxLength`),
/// which ODK ignores and the reader reads. Written through libxml2's `xmlTextWriter`, and
/// deterministic: the same definition gives the same bytes.
public enum XFormWriter {
    /// Why a definition cannot be written as an XForm that reads back into it.
    public struct Unwritable: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// The name of the primary instance's root, as pyxform names it.
    static let root = "data"

    /// The XForm of `definition` (a definition `SurveyDefinition.parse` accepts). Its form id is
    /// the definition's `formId`, else `formId` (the survey's id); `version` (the version's
    /// number) is the primary instance's `version` attribute.
    /// `parsed`: the definition as parsed already, where the caller has it.
    public static func xform(of definition: JSONValue, parsed known: SurveyDefinition? = nil, formId: String, version: String?) throws(Unwritable) -> [UInt8] {
        let parsed: SurveyDefinition
        if let known {
            parsed = known
        } else {
            do { parsed = try SurveyDefinition.parse(definition) } catch {
                let problems = error.errors.prefix(3).map(\.description).joined(separator: "; ")
                throw Unwritable("the definition is not valid: \(problems)")
            }
        }
        var planner = XFormPlanner(definition: definition, parsed: parsed)
        let plan = try planner.plan(fallbackFormId: formId, version: version)
        do {
            return try XFormRendering.render(plan)
        } catch {
            throw Unwritable(error.message)
        }
    }
}

/// Which attributes of the `surveyd:` namespace mean what, for the writer and the reader alike.
enum Surveyd {
    /// On a bind: the definition's node type, where the XForm alone reads as another one
    /// (`calculate` without a calculation, `text` read-only without a value).
    static let type = "type"
    /// On a repeat count's helper node (`jr:count` points to it): not a question.
    static let repeatCountHelper = "repeatCount"
    /// On `model`: the properties the XForm names (`formId`, `defaultLanguage`) that the
    /// definition does not have.
    static let absent = "absent"
    /// On a choice list's secondary instance: `inline` (a question's own `choices`) or `unused`
    /// (a `choiceList` no question names).
    static let list = "list"
    /// On a choice (`item`): `string` (written as a bare name), `unlabelled` (an object without
    /// a label), `plain` (a label in one text for every language).
    static let choice = "choice"
    /// On a bind: `required="false"` (the definition says so), `required="expression"` and
    /// `readonly="expression"` (the attribute is the definition's expression, even `true()`).
    static let expression = "expression"
    /// On a bind whose `constraint` also holds the question's bounds (`minimum`, `maximum`,
    /// `maxLength`, so that ODK apps check them as they are typed): the definition's own
    /// constraint, "" when it has none.
    static let constraint = "constraint"
    /// On a bind: the definition's id of a node whose element has another name (`name`).
    static let id = "id"
}

/// A definition's XForm, decided before any byte is written (the itext comes first in the
/// model, yet it gathers the texts of every node).
struct XFormPlan {
    enum Label {
        case plain(String)
        case itext(String)
    }

    struct Item {
        var attributes: [(String, String)]
        var label: Label
        var value: String
    }

    final class Node {
        enum Kind { case question, note, group, `repeat`, helper }
        let id: String
        let path: String
        let kind: Kind
        var value: String?
        var instanceAttributes: [(String, String)] = []
        /// The bind's attributes after `nodeset`; none: no bind.
        var bind: [(String, String)] = []
        /// `input`, `select1`, `select`, `upload`; nil for a calculation.
        var control: String?
        var controlAttributes: [(String, String)] = []
        var label: Label?
        var hint: Label?
        var items: [Item] = []
        var itemset: (nodeset: String, label: String)?
        var count: String?
        var children: [Node] = []
        /// A group's or repeat's entity, written in its own `meta`.
        var entity: XFormEntityPlan?
        /// A repeat's: the entity ids made anew for each instance (`odk-new-repeat`).
        var newInstanceIds: [String] = []

        init(id: String, path: String, kind: Kind) {
            self.id = id
            self.path = path
            self.kind = kind
        }

        /// The element's name: the last step of its path (the id, unless the definition names it).
        var name: Substring {
            guard let slash = path.lastIndex(of: "/") else { return path[...] }
            return path[path.index(after: slash)...]
        }
    }

    struct Column {
        let name: String
        let value: String
        let isNumber: Bool
    }

    struct ChoiceList {
        let id: String
        var attributes: [(String, String)]
        var items: [(attributes: [(String, String)], columns: [Column])]
        /// A CSV file the version carries (`src`), read by the app: no items of its own.
        var file: String? = nil
    }

    var title = ""
    var formId = ""
    var version: String?
    var modelAttributes: [(String, String)] = []
    /// An encrypted form's RSA public key, written on `<submission>` as pyxform writes it.
    var publicKey: String?
    /// Default first.
    var languages: [String] = []
    var defaultLanguage: String?
    var texts = ItextTable()
    var nodes: [XFormPlan.Node] = []
    var lists: [ChoiceList] = []
    /// The entity the form creates or updates at its root.
    var entity: XFormEntityPlan?
    /// Those of its groups and repeats (Entities 2025.1), in document order.
    var containerEntities: [XFormEntityPlan] = []
}

/// Text ids in the order they were added, each with its text by language, and the media a
/// label shows (`form` and file) by language.
struct ItextTable {
    private(set) var ids: [String] = []
    private var values: [String: [String: String]] = [:]
    private var media: [String: [String: [(form: String, file: String)]]] = [:]

    var isEmpty: Bool { ids.isEmpty }

    /// Adds a text under `preferred` (made unique, quotes replaced) and returns its id.
    mutating func add(_ preferred: String, _ byLanguage: [String: String]) -> String {
        let base = String(preferred.map { $0 == "'" || $0 == "\"" ? "_" : $0 })
        var id = base, n = 2
        while values[id] != nil {
            id = "\(base)~\(n)"
            n += 1
        }
        ids.append(id)
        values[id] = byLanguage
        return id
    }

    func text(_ id: String, in language: String) -> String? { values[id]?[language] }

    mutating func setMedia(_ id: String, _ byLanguage: [String: [(form: String, file: String)]]) { media[id] = byLanguage }
    func media(_ id: String, in language: String) -> [(form: String, file: String)] { media[id]?[language] ?? [] }

    /// Where an app finds a media file of a form: `jr://images/…`, `jr://audio/…`, `jr://video/…`.
    static func uri(form: String, file: String) -> String {
        switch form {
        case "audio": return "jr://audio/" + file
        case "video": return "jr://video/" + file
        default: return "jr://images/" + file
        }
    }
}

/// Walks the definition as it was written (its JSON: a bare-name choice and `{"name": …}` are
/// different definitions) into an `XFormPlan`.
struct XFormPlanner {
    let definition: JSONValue
    let parsed: SurveyDefinition
    private var plan = XFormPlan()
    private var printer = XPathPrinter(paths: [:])
    /// Every id of the definition, and of the nodes the writer adds (repeat count helpers).
    private var ids: Set<String> = []
    private var listIds: Set<String> = []
    private var usedLists: Set<String> = []
    private var inlineLists: [XFormPlan.ChoiceList] = []
    private var localizedLists: Set<String> = []
    /// A label of a definition without languages shows media: its texts go in pyxform's one
    /// translation, `default` (which the reader reads as plain text again).
    private var usesDefaultTranslation = false

    init(definition: JSONValue, parsed: SurveyDefinition) {
        self.definition = definition
        self.parsed = parsed
    }

    typealias Unwritable = XFormWriter.Unwritable

    mutating func plan(fallbackFormId: String, version: String?) throws(Unwritable) -> XFormPlan {
        let top = Self.present(definition["questions"])?.arrayValue ?? []
        var paths: [String: String] = [:]
        try collectPaths(top, parent: "/" + XFormWriter.root, into: &paths, topLevel: true)
        printer = XPathPrinter(paths: paths, parsed: parsed.expressionsBySource)

        plan.title = definition["title"]?.stringValue ?? ""
        plan.publicKey = parsed.publicKey
        let formId = Self.present(definition["formId"])?.stringValue
        plan.formId = formId ?? fallbackFormId
        plan.version = version
        let declaredDefault = Self.present(definition["defaultLanguage"])?.stringValue
        if parsed.languages.contains("") {
            throw Unwritable("a text of the definition is in a language named \"\", which an itext translation cannot be")
        }
        if !parsed.languages.isEmpty {
            let first = declaredDefault.flatMap { parsed.languages.contains($0) ? $0 : nil } ?? parsed.languages[0]
            plan.defaultLanguage = first
            plan.languages = [first] + parsed.languages.filter { $0 != first }
        }
        var absent: [String] = []
        if formId == nil { absent.append("formId") }
        if declaredDefault == nil && !parsed.languages.isEmpty { absent.append("defaultLanguage") }
        plan.modelAttributes = [("odk:xforms-version", "1.0.0")]
        if let declaredDefault, parsed.languages.isEmpty {
            plan.modelAttributes.append(("surveyd:defaultLanguage", declaredDefault))
        }

        // Choice lists: their names are instance ids; the per-question lists get names of their own.
        let lists = Self.present(definition["choiceLists"])?.objectValue ?? [:]
        listIds = Set(lists.keys)
        for (name, items) in lists where (items.arrayValue ?? []).contains(where: { Self.hasLocalizedLabel($0) }) {
            localizedLists.insert(name)
        }
        plan.nodes = try nodes(top, parent: "/" + XFormWriter.root, insideRepeat: false)
        if usesDefaultTranslation {
            if declaredDefault != nil {
                throw Unwritable("the definition names a defaultLanguage but no language, and its labels show media, which an XForm keeps in a translation")
            }
            plan.languages = ["default"]
            plan.defaultLanguage = "default"
        }
        // The CSV files the form reads (its choice lists' and pulldata's): instances the app fills
        // from the files it downloads with the form.
        var files = Set(lists.keys.filter { FormAttachments.isCSVName($0) && usedLists.contains($0) })
        // The entity lists the form writes, which the server serves as files of their own.
        files.formUnion(FormAttachments.entityListFiles(of: definition).intersection(usedLists))
        files.formUnion((Self.present(definition[FormAttachments.lookupTablesKey])?.objectValue ?? [:]).keys)
        for file in files.sorted() {
            let id = String(file.dropLast(4))
            guard !id.isEmpty, Self.isElementName(id) || id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == "." }),
                  !lists.keys.contains(id), !plan.lists.contains(where: { $0.id == id }) else {
                throw Unwritable("the file \(file) cannot be named by an instance \(id) of its own")
            }
            plan.lists.append(XFormPlan.ChoiceList(id: id, attributes: [("src", "jr://file-csv/" + file)], items: [], file: file))
        }
        for name in lists.keys.sorted() where !(FormAttachments.isCSVName(name) && usedLists.contains(name)) {
            var list = try choiceList(id: name, items: lists[name]?.arrayValue ?? [], localized: localizedLists.contains(name))
            if !usedLists.contains(name) { list.attributes.append(("surveyd:\(Surveyd.list)", "unused")) }
            plan.lists.append(list)
        }
        plan.lists += inlineLists
        var byId: [String: XFormPlan.Node] = [:], repeatAbove: [String: XFormPlan.Node] = [:]
        var walk: [(XFormPlan.Node, XFormPlan.Node?)] = plan.nodes.map { ($0, nil) }
        while let (node, inRepeat) = walk.popLast() {
            byId[node.id] = node
            if let inRepeat { repeatAbove[node.id] = inRepeat }
            walk += node.children.map { ($0, node.kind == .repeat ? node : inRepeat) }
        }
        for entity in parsed.entities {
            guard let container = entity.container else { continue }
            guard let node = byId[container], node.kind == .group || node.kind == .repeat else {
                throw Unwritable("the entity of \(entity.list) is declared in \(container), which is no group or repeat of the definition")
            }
            // Its `meta` holds the entity: a node of that name there would be a second one.
            guard !node.children.contains(where: { $0.name == "meta" }) else {
                throw Unwritable("\(container) declares an entity, whose meta a node of \(container) named meta would clash with")
            }
            let written = try XFormEntityPlan(entity, container: node.path, pathOf: { byId[$0]?.path }, printer: printer,
                                              readsFiles: Set(plan.lists.compactMap(\.file)))
            for (questionId, property) in written.saveTo.sorted(by: { $0.key < $1.key }) {
                guard let q = byId[questionId], q.kind == .question else {
                    throw Unwritable("the entity saves \(questionId) to \(property), but \(questionId) is no question of the definition")
                }
                q.bind.append(("entities:saveto", property))
            }
            node.entity = written
            // Each new instance of the repeat makes its entity's id, as pyxform writes it.
            if written.idOnFirstLoad, let r = node.kind == .repeat ? node : repeatAbove[node.id] { r.newInstanceIds.append(written.at + "/@id") }
            plan.containerEntities.append(written)
        }
        if !plan.containerEntities.isEmpty {
            // Several entities, or one of a group or repeat: the 2025.1 form of the entity block.
            plan.modelAttributes.append(("entities:entities-version", "2025.1.0"))
        }
        if let entity = parsed.entity {
            let written = try XFormEntityPlan(entity, printer: printer, readsFiles: Set(plan.lists.compactMap(\.file)))
            for (questionId, property) in written.saveTo.sorted(by: { $0.key < $1.key }) {
                guard let node = byId[questionId], node.kind == .question else {
                    throw Unwritable("the entity saves \(questionId) to \(property), but \(questionId) is no question of the definition")
                }
                node.bind.append(("entities:saveto", property))
            }
            if plan.containerEntities.isEmpty { plan.modelAttributes.append(("entities:entities-version", written.specVersion)) }
            // What the reader would find that the declaration does not say: an id made on first load, a version.
            var unsaid: [String] = []
            if entity.create != .never && entity.id == nil { unsaid.append("entity.id") }
            if entity.specVersion == nil && plan.containerEntities.isEmpty { unsaid.append("entity.specVersion") }
            if !unsaid.isEmpty { absent += unsaid }
            plan.entity = written
        }
        if !absent.isEmpty { plan.modelAttributes.append(("surveyd:\(Surveyd.absent)", absent.joined(separator: " "))) }
        return plan
    }

    static func present(_ v: JSONValue?) -> JSONValue? {
        guard let v, !v.isNull else { return nil }
        return v
    }

    private static func hasLocalizedLabel(_ choice: JSONValue) -> Bool {
        present(choice["label"])?.objectValue != nil
    }

    /// Every node's path by id; the primary instance reserves `meta` at the top.
    private mutating func collectPaths(_ items: [JSONValue], parent: String, into paths: inout [String: String], topLevel: Bool) throws(Unwritable) {
        for item in items {
            guard let id = item["id"]?.stringValue else { continue }
            let name = Self.elementName(item, id: id)
            if topLevel && name == "meta" {
                throw Unwritable("the definition has a node named meta at its top level, where an XForm keeps its metadata (meta/instanceID)")
            }
            paths[id] = parent + "/" + name
            ids.insert(id)
            ids.insert(name)
            if let children = Self.present(item["children"])?.arrayValue { try collectPaths(children, parent: parent + "/" + name, into: &paths, topLevel: false) }
        }
    }

    /// The element a node is written as: its `name`, else its id.
    private static func elementName(_ item: JSONValue, id: String) -> String {
        present(item["name"])?.stringValue ?? id
    }

    private mutating func nodes(_ items: [JSONValue], parent: String, insideRepeat: Bool) throws(Unwritable) -> [XFormPlan.Node] {
        var out: [XFormPlan.Node] = []
        for item in items {
            guard let o = item.objectValue, let id = o["id"]?.stringValue else { continue }
            let path = parent + "/" + Self.elementName(item, id: id)
            switch o["type"]?.stringValue {
            case "group", "repeat":
                let isRepeat = o["type"]?.stringValue == "repeat"
                let node = XFormPlan.Node(id: id, path: path, kind: isRepeat ? .repeat : .group)
                node.label = try label(Self.present(o["label"]), id: path + ":label", media: Self.present(o["media"]))
                if let relevant = Self.present(o["relevant"])?.stringValue { node.bind.append(("relevant", try printer.xpath(relevant))) }
                if isRepeat {
                    for key in ["minCount", "maxCount"] {
                        if let n = Self.present(o[key])?.doubleValue { node.bind.append(("surveyd:\(key)", CanonicalJSON.number(n))) }
                    }
                    if let count = Self.present(o["repeatCount"])?.stringValue {
                        if let helper = try repeatCount(count, repeatId: id, parent: parent) {
                            out.append(helper)
                            node.count = " \(helper.path) "
                        } else {
                            node.count = try printer.xpath(count)
                        }
                    }
                }
                let children = Self.present(o["children"])?.arrayValue ?? []
                node.children = try nodes(children, parent: path, insideRepeat: insideRepeat || isRepeat)
                out.append(node)
            case "note":
                let node = XFormPlan.Node(id: id, path: path, kind: .note)
                node.label = try label(Self.present(o["label"]), id: path + ":label", media: Self.present(o["media"]))
                node.bind = [("readonly", "true()"), ("type", "string")]
                if let relevant = Self.present(o["relevant"])?.stringValue { node.bind.append(("relevant", try printer.xpath(relevant))) }
                node.control = "input"
                out.append(node)
            default:
                out.append(try question(o, id: id, path: path, insideRepeat: insideRepeat))
            }
        }
        return out
    }

    /// A repeat count that is one reference is `jr:count`'s path; any other expression is a
    /// calculation of a node of its own that `jr:count` names, as pyxform writes it (ODK's
    /// `jr:count` takes a path only).
    private mutating func repeatCount(_ source: String, repeatId: String, parent: String) throws(Unwritable) -> XFormPlan.Node? {
        let spans = (printer.parsed[source] ?? (try? Expression(source)))?.referenceSpans ?? []
        let scalars = Array(source.unicodeScalars)
        if spans.count == 1, let span = spans.first,
           scalars[..<span.offset].allSatisfy({ $0.properties.isWhitespace }),
           scalars[(span.offset + span.length)...].allSatisfy({ $0.properties.isWhitespace }) {
            return nil
        }
        var name = repeatId + "_count", n = 2
        while ids.contains(name) || (parent == "/" + XFormWriter.root && name == "meta") {
            name = "\(repeatId)_count\(n)"
            n += 1
        }
        ids.insert(name)
        let helper = XFormPlan.Node(id: name, path: parent + "/" + name, kind: .helper)
        helper.bind = [("readonly", "true()"), ("type", "string"), ("calculate", try printer.xpath(source)),
                       ("surveyd:\(Surveyd.type)", Surveyd.repeatCountHelper)]
        return helper
    }

    private mutating func question(_ o: [String: JSONValue], id: String, path: String, insideRepeat: Bool) throws(Unwritable) -> XFormPlan.Node {
        let node = XFormPlan.Node(id: id, path: path, kind: .question)
        let type = o["type"]?.stringValue ?? ""
        var bind: [(String, String)] = []
        var extra: [(String, String)] = []
        let bindType: String
        switch type {
        case "text": bindType = "string"; node.control = "input"
        case "integer": bindType = "int"; node.control = "input"
        case "decimal": bindType = "decimal"; node.control = "input"
        case "date": bindType = "date"; node.control = "input"
        case "time": bindType = "time"; node.control = "input"
        case "datetime": bindType = "dateTime"; node.control = "input"
        case "geopoint", "geotrace", "geoshape", "barcode": bindType = type; node.control = "input"
        case "select_one": bindType = "string"; node.control = "select1"
        case "select_multiple": bindType = "string"; node.control = "select"
        case "file": bindType = "binary"; node.control = "upload"
        case "calculate": bindType = "string"
        default: throw Unwritable("\(path) has the type \(type), which an XForm cannot carry")
        }
        bind.append(("type", bindType))

        let required = Self.present(o["required"])
        if let flag = required?.boolValue {
            if flag { bind.append(("required", "true()")) } else { extra.append(("surveyd:required", "false")) }
        } else if let expression = required?.stringValue {
            bind.append(("required", try printer.xpath(expression)))
            if Self.isBooleanLiteral(expression) { extra.append(("surveyd:required", Surveyd.expression)) }
        }
        if let relevant = Self.present(o["relevant"])?.stringValue { bind.append(("relevant", try printer.xpath(relevant))) }
        // The definition's own constraint; its bounds join it below, so that ODK Collect checks them too.
        let ownConstraint = try Self.present(o["constraint"])?.stringValue.map { (source) throws(Unwritable) in try printer.xpath(source) }
        if let message = Self.present(o["constraintMessage"]) {
            bind.append(("jr:constraintMsg", try attributeText(message, id: path + ":jr:constraintMsg", what: "the constraint message of \(path)")))
        }
        let readonly = Self.present(o["readonly"])?.stringValue
        if let readonly {
            bind.append(("readonly", try printer.xpath(readonly)))
            if readonly.trimmingWhitespace() == "false()" { extra.append(("surveyd:readonly", Surveyd.expression)) }
        }
        if let calculation = Self.present(o["calculation"])?.stringValue { bind.append(("calculate", try printer.xpath(calculation))) }

        if let value = Self.present(o["default"])?.stringValue {
            if value.isEmpty {
                extra.append(("surveyd:default", ""))
            } else {
                node.value = value
                if value != value.trimmingWhitespace() { node.instanceAttributes = [("xml:space", "preserve")] }
            }
        }
        let appearance = Self.present(o["appearance"])?.stringValue

        switch type {
        case "calculate":
            if Self.present(o["calculation"]) == nil { extra.append(("surveyd:\(Surveyd.type)", "calculate")) }
            // No control shows it: its label and hint, when they are not the reader's (the id), are kept here.
            let label = Self.present(o["label"])
            if label?.stringValue != id, let label {
                extra.append(("surveyd:label", try attributeText(label, id: path + ":label", what: "the label of \(path)")))
            }
            if let hint = Self.present(o["hint"]) {
                extra.append(("surveyd:hint", try attributeText(hint, id: path + ":hint", what: "the hint of \(path)")))
            }
            if let appearance { extra.append(("surveyd:appearance", appearance)) }
        default:
            node.label = try label(Self.present(o["label"]), id: path + ":label", media: Self.present(o["media"]))
            node.hint = try label(Self.present(o["hint"]), id: path + ":hint")
            if let appearance { node.controlAttributes.append(("appearance", appearance)) }
        }

        // Bounds an XForm has no attribute for, as terms of the constraint ODK apps check.
        var bounds: [String] = []
        switch type {
        case "text":
            if let n = Self.present(o["maxLength"])?.doubleValue {
                extra.append(("surveyd:maxLength", CanonicalJSON.number(n)))
                bounds.append("string-length(.) <= \(CanonicalJSON.number(n))")
            }
            if readonly?.trimmingWhitespace() == "true()" && (node.value ?? "").trimmingWhitespace().isEmpty {
                extra.append(("surveyd:\(Surveyd.type)", "text")) // else it reads as a note
            }
        case "integer", "decimal":
            for (key, op) in [("minimum", ">="), ("maximum", "<=")] {
                if let n = Self.present(o[key])?.doubleValue {
                    extra.append(("surveyd:\(key)", CanonicalJSON.number(n)))
                    bounds.append(". \(op) \(CanonicalJSON.number(n))")
                }
            }
        case "file":
            let accept = (Self.present(o["accept"])?.arrayValue ?? []).compactMap(\.stringValue)
            node.controlAttributes.append(("mediatype", Self.mediatype(accept)))
            if accept.count != 1 { extra.append(("surveyd:accept", accept.joined(separator: " "))) }
            if let n = Self.present(o["maxBytes"])?.doubleValue { extra.append(("surveyd:maxBytes", CanonicalJSON.number(n))) }
        case "select_one", "select_multiple":
            try choices(o, node: node, insideRepeat: insideRepeat)
        default:
            break
        }
        if bounds.isEmpty {
            if let ownConstraint { bind.append(("constraint", ownConstraint)) }
        } else {
            // `surveyd:constraint`: the definition's own part of the constraint ("" for none).
            bind.append(("constraint", ((ownConstraint.map { ["(\($0))"] } ?? []) + bounds).joined(separator: " and ")))
            extra.append(("surveyd:\(Surveyd.constraint)", ownConstraint ?? ""))
        }
        node.bind = bind + extra
        return node
    }

    /// What ODK Collect picks its widget by: the type, or `image/*` for several image types.
    private static func mediatype(_ accept: [String]) -> String {
        guard accept.count != 1 else { return accept[0] }
        let majors = Set(accept.map { $0.split(separator: "/").first.map(String.init) ?? "" })
        if majors.count == 1, let major = majors.first, !major.isEmpty, major != "*" { return major + "/*" }
        return "*/*"
    }

    private static func isBooleanLiteral(_ source: String) -> Bool {
        let s = source.trimmingWhitespace()
        return s == "true()" || s == "false()"
    }

    /// A select's choices: a named list's secondary instance (`itemset`), the question's own
    /// choices inline (`item`s), or — when a filter or a column needs one — an instance of the
    /// question's own, marked inline.
    private mutating func choices(_ o: [String: JSONValue], node: XFormPlan.Node, insideRepeat: Bool) throws(Unwritable) {
        let filter = try Self.present(o["choiceFilter"])?.stringValue.map { (source) throws(Unwritable) in
            try printer.choiceFilter(source, questionPath: node.path, insideRepeat: insideRepeat)
        }
        if let name = Self.present(o["choiceList"])?.stringValue {
            usedLists.insert(name)
            if FormAttachments.isCSVName(name) {
                // A CSV file the app downloads with the form, read through the instance named after it, as pyxform writes it.
                node.itemset = (try Self.nodeset(String(name.dropLast(4)), filter: filter), "label")
                return
            }
            node.itemset = (try Self.nodeset(name, filter: filter), localizedLists.contains(name) ? "jr:itext(itextId)" : "label")
            return
        }
        let items = Self.present(o["choices"])?.arrayValue ?? []
        let hasColumns = items.contains { item in (item.objectValue ?? [:]).keys.contains { $0 != "name" && $0 != "label" } }
        if filter == nil && !hasColumns {
            for (i, item) in items.enumerated() {
                node.items.append(try inlineItem(item, id: "\(node.path)-\(i)"))
            }
            return
        }
        var name = node.id, n = 2
        while listIds.contains(name) {
            name = "\(node.id)_\(n)"
            n += 1
        }
        listIds.insert(name)
        let localized = items.contains { Self.hasLocalizedLabel($0) }
        var list = try choiceList(id: name, items: items, localized: localized)
        list.attributes.append(("surveyd:\(Surveyd.list)", "inline"))
        inlineLists.append(list)
        node.itemset = (try Self.nodeset(name, filter: filter), localized ? "jr:itext(itextId)" : "label")
    }

    private static func nodeset(_ list: String, filter: String?) throws(Unwritable) -> String {
        guard !list.isEmpty else { throw Unwritable("a choice list is named \"\", which an instance cannot be") }
        let quote: Character
        if !list.contains("'") { quote = "'" } else if !list.contains("\"") { quote = "\"" } else {
            throw Unwritable("the choice list \(list) has both kinds of quote in its name, which an XPath literal cannot hold")
        }
        return "instance(\(quote)\(list)\(quote))/root/item" + (filter.map { "[\($0)]" } ?? "")
    }

    private mutating func inlineItem(_ item: JSONValue, id: String) throws(Unwritable) -> XFormPlan.Item {
        if let name = item.stringValue {
            return XFormPlan.Item(attributes: [("surveyd:\(Surveyd.choice)", "string")], label: .plain(name), value: name)
        }
        let name = item["name"]?.stringValue ?? ""
        if Self.present(item["media"]) != nil { throw Self.choiceMedia(name) }
        guard let text = Self.present(item["label"]), let label = try label(text, id: id) else {
            return XFormPlan.Item(attributes: [("surveyd:\(Surveyd.choice)", "unlabelled")], label: .plain(name), value: name)
        }
        return XFormPlan.Item(attributes: [], label: label, value: name)
    }

    /// Media on a choice is carried by the XForm an XLSForm or XForm was published as, not yet
    /// written for a JSON definition.
    static func choiceMedia(_ name: String) -> Unwritable {
        Unwritable("the choice \(name) shows media, which surveyd writes only in an XForm published as one (or made of an XLSForm)")
    }

    /// A choice list as a secondary instance: `name`, then the label (`label`, or `itextId` when
    /// a label of the list is in several languages), then the other columns by name.
    private mutating func choiceList(id: String, items: [JSONValue], localized: Bool) throws(Unwritable) -> XFormPlan.ChoiceList {
        var list = XFormPlan.ChoiceList(id: id, attributes: [], items: [])
        for (i, item) in items.enumerated() {
            var attributes: [(String, String)] = []
            var columns: [XFormPlan.Column] = []
            let name: String
            var shown: JSONValue
            if let bare = item.stringValue {
                name = bare
                shown = .string(bare)
                attributes.append(("surveyd:\(Surveyd.choice)", "string"))
            } else {
                name = item["name"]?.stringValue ?? ""
                if Self.present(item["media"]) != nil { throw Self.choiceMedia(name) }
                if let label = Self.present(item["label"]) {
                    shown = label
                    if localized && label.stringValue != nil { attributes.append(("surveyd:\(Surveyd.choice)", "plain")) }
                } else {
                    shown = .string(name)
                    attributes.append(("surveyd:\(Surveyd.choice)", "unlabelled"))
                }
            }
            columns.append(XFormPlan.Column(name: "name", value: name, isNumber: false))
            if localized {
                var byLanguage: [String: String] = [:]
                if let plain = shown.stringValue {
                    for language in plan.languages { byLanguage[language] = plain }
                } else {
                    for (language, text) in shown.objectValue ?? [:] { byLanguage[language] = text.stringValue ?? "" }
                }
                columns.append(XFormPlan.Column(name: "itextId", value: plan.texts.add("\(id)-\(i)", byLanguage), isNumber: false))
            } else {
                columns.append(XFormPlan.Column(name: "label", value: shown.stringValue ?? "", isNumber: false))
            }
            let object = item.objectValue ?? [:]
            for key in object.keys.sorted() where key != "name" && key != "label" {
                guard Self.isElementName(key), key != "itextId" || !localized else {
                    throw Unwritable("the column \(key) of the choice list \(id) is not a name an XML element can have")
                }
                switch object[key] {
                case .string(let s)?: columns.append(XFormPlan.Column(name: key, value: s, isNumber: false))
                case .number(let d)?: columns.append(XFormPlan.Column(name: key, value: CanonicalJSON.number(d), isNumber: true))
                default: continue // not a column the definition keeps (true, null, …)
                }
            }
            list.items.append((attributes, columns))
        }
        return list
    }

    /// A label or hint in the body: its text, or its itext when it is in several languages or
    /// shows media (`media`: the files by form, each a file or files by language).
    private mutating func label(_ value: JSONValue?, id: String, media: JSONValue? = nil) throws(Unwritable) -> XFormPlan.Label? {
        if let media = media?.objectValue, !media.isEmpty { return try labelWithMedia(value, media, id: id) }
        guard let value else { return nil }
        if let s = value.stringValue { return .plain(s) }
        guard let object = value.objectValue else { return nil }
        var byLanguage: [String: String] = [:]
        for (language, text) in object { byLanguage[language] = text.stringValue ?? "" }
        return .itext(plan.texts.add(id, byLanguage))
    }

    /// A label that shows media is an itext: in each language of the form, or in pyxform's
    /// `default` for a form without languages. A form with languages names each file per
    /// language (a file written for all of them would read back keyed by each).
    private mutating func labelWithMedia(_ value: JSONValue?, _ media: [String: JSONValue], id: String) throws(Unwritable) -> XFormPlan.Label {
        var texts: [String: String] = [:]
        var files: [String: [(form: String, file: String)]] = [:]
        let languages = parsed.languages
        if languages.isEmpty {
            guard let text = value?.stringValue else { throw Unwritable("\(id) shows media without a label") }
            usesDefaultTranslation = true
            texts["default"] = text
            for form in media.keys.sorted() {
                guard let file = media[form]?.stringValue else { throw Unwritable("\(id) shows media by language in a form without languages") }
                files["default", default: []].append((form, file))
            }
        } else {
            guard let byLanguage = value?.objectValue else {
                throw Unwritable("\(id) shows media with a label in no language of the form's; an XForm keeps such a label in a translation")
            }
            for (language, text) in byLanguage { texts[language] = text.stringValue ?? "" }
            for form in media.keys.sorted() {
                guard let perLanguage = media[form]?.objectValue else {
                    throw Unwritable("\(id) shows one \(form) file for every language; an XForm names it in each language, so name it by language")
                }
                for language in perLanguage.keys.sorted() {
                    guard texts[language] != nil, let file = perLanguage[language]?.stringValue else {
                        throw Unwritable("\(id) shows a \(form) in \(language), a language its label is not written in")
                    }
                    files[language, default: []].append((form, file))
                }
            }
        }
        let textId = plan.texts.add(id, texts)
        plan.texts.setMedia(textId, files)
        return .itext(textId)
    }

    /// A text in an attribute (`jr:constraintMsg`, `surveyd:label`): itself, or `jr:itext('id')`.
    private mutating func attributeText(_ value: JSONValue, id: String, what: String) throws(Unwritable) -> String {
        switch try label(value, id: id) {
        case .plain(let s)?:
            if ItextTranslations.reference(s) != nil {
                throw Unwritable("\(what) is \(s), which an XForm reads as a reference to a translated text")
            }
            return s
        case .itext(let textId)?: return "jr:itext('\(textId)')"
        case nil: return ""
        }
    }

    /// An XML element name without a prefix (NCName), as a column of a choice becomes one.
    static func isElementName(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first else { return false }
        func start(_ c: Unicode.Scalar) -> Bool {
            (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c == "_" || (c.value >= 0xC0 && c.properties.isAlphabetic)
        }
        return start(first) && s.unicodeScalars.allSatisfy {
            start($0) || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "." || $0.value == 0xB7
        }
    }
}

/// Writes an `XFormPlan` through libxml2.
enum XFormRendering {
    static let namespaces: [(String, String)] = [
        ("xmlns", XMLNamespace.xforms), ("xmlns:h", XMLNamespace.xhtml), ("xmlns:ev", XMLNamespace.events),
        ("xmlns:xsd", XMLNamespace.xsd), ("xmlns:jr", XMLNamespace.javaRosa), ("xmlns:orx", XMLNamespace.openRosa),
        ("xmlns:odk", XMLNamespace.odk), ("xmlns:surveyd", XMLNamespace.surveyd),
    ]

    static func render(_ plan: XFormPlan) throws(XMLTextWriter.Failure) -> [UInt8] {
        let w = try XMLTextWriter()
        try w.startDocument()
        try w.startElement("h:html")
        for (name, uri) in namespaces { try w.attribute(name, uri) }
        if plan.entity != nil || !plan.containerEntities.isEmpty { try w.attribute("xmlns:entities", XMLNamespace.entities) }
        try w.startElement("h:head")
        try w.element("h:title", preserving(plan.title), text: plan.title)
        try w.startElement("model")
        for (name, value) in plan.modelAttributes { try w.attribute(name, value) }
        if !plan.texts.isEmpty { try itext(plan, w) }
        try w.startElement("instance")
        var root: [(String, String)] = [("id", plan.formId)]
        if let version = plan.version { root.append(("version", version)) }
        try w.startElement(XFormWriter.root)
        for (name, value) in root { try w.attribute(name, value) }
        for node in plan.nodes { try instance(node, w, mode: .normal) }
        try w.startElement("meta")
        if let entity = plan.entity { try entityElement(entity, w) }
        try w.element("instanceID")
        try w.endElement()
        try w.endElement()
        try w.endElement()
        for list in plan.lists { try choiceList(list, w) }
        for node in plan.nodes { try binds(node, w) }
        for entity in plan.containerEntities + (plan.entity.map { [$0] } ?? []) {
            for bind in entity.binds { try w.element("bind", bind) }
            if entity.idOnFirstLoad {
                try w.element("setvalue", [("ref", entity.at + "/@id"), ("event", "odk-instance-first-load"), ("value", "uuid()")])
            }
        }
        try w.element("bind", [("nodeset", "/\(XFormWriter.root)/meta/instanceID"), ("type", "string"), ("readonly", "true()"), ("jr:preload", "uid")])
        if let key = plan.publicKey { try w.element("submission", [("base64RsaPublicKey", key), ("method", "post")]) }
        try w.endElement() // model
        try w.endElement() // h:head
        try w.startElement("h:body")
        for node in plan.nodes { try body(node, w) }
        try w.endElement()
        try w.endElement()
        return try w.finish()
    }

    /// `<entity …><label/></entity>` of a `meta`.
    private static func entityElement(_ entity: XFormEntityPlan, _ w: XMLTextWriter) throws(XMLTextWriter.Failure) {
        try w.startElement("entity")
        for (name, value) in entity.attributes { try w.attribute(name, value) }
        try w.element("label")
        try w.endElement()
    }

    /// A group's or repeat instance's own `meta/entity` (Entities 2025.1), after its children.
    private static func containerMeta(_ node: XFormPlan.Node, _ w: XMLTextWriter) throws(XMLTextWriter.Failure) {
        guard let entity = node.entity else { return }
        try w.startElement("meta")
        try entityElement(entity, w)
        try w.endElement()
    }

    /// `xml:space="preserve"` on an element whose text starts or ends with white space, which
    /// the reader otherwise trims (a hand-indented XForm's labels).
    static func preserving(_ text: String) -> [(String, String)] {
        text == text.trimmingWhitespace() ? [] : [("xml:space", "preserve")]
    }

    private static func itext(_ plan: XFormPlan, _ w: XMLTextWriter) throws(XMLTextWriter.Failure) {
        try w.startElement("itext")
        for language in plan.languages {
            try w.startElement("translation")
            try w.attribute("lang", language)
            if language == plan.defaultLanguage { try w.attribute("default", "true()") }
            for id in plan.texts.ids {
                guard let text = plan.texts.text(id, in: language) else { continue }
                try w.startElement("text")
                try w.attribute("id", id)
                try w.element("value", preserving(text), text: text)
                for (form, file) in plan.texts.media(id, in: language) {
                    try w.element("value", [("form", form)], text: ItextTable.uri(form: form, file: file))
                }
                try w.endElement()
            }
            try w.endElement()
        }
        try w.endElement()
    }

    enum InstanceMode { case normal, template, copy }

    /// A repeat is written as pyxform writes it: its template (`jr:template`), then a first
    /// instance; inside a template a repeat is a template only, inside an instance an instance only.
    private static func instance(_ node: XFormPlan.Node, _ w: XMLTextWriter, mode: InstanceMode) throws(XMLTextWriter.Failure) {
        switch node.kind {
        case .group:
            try w.startElement(String(node.name))
            for child in node.children { try instance(child, w, mode: mode) }
            try containerMeta(node, w)
            try w.endElement()
        case .repeat:
            if mode != .copy {
                try w.startElement(String(node.name))
                try w.attribute("jr:template", "")
                for child in node.children { try instance(child, w, mode: .template) }
                try containerMeta(node, w)
                try w.endElement()
            }
            if mode != .template {
                try w.startElement(String(node.name))
                for child in node.children { try instance(child, w, mode: .copy) }
                try containerMeta(node, w)
                try w.endElement()
            }
        case .question, .note, .helper:
            try w.element(String(node.name), node.instanceAttributes, text: node.value)
        }
    }

    private static func choiceList(_ list: XFormPlan.ChoiceList, _ w: XMLTextWriter) throws(XMLTextWriter.Failure) {
        try w.startElement("instance")
        try w.attribute("id", list.id)
        for (name, value) in list.attributes { try w.attribute(name, value) }
        if list.file != nil {
            try w.endElement()
            return
        }
        try w.startElement("root")
        for item in list.items {
            try w.startElement("item")
            for (name, value) in item.attributes { try w.attribute(name, value) }
            for column in item.columns {
                var attributes = preserving(column.value)
                if column.isNumber { attributes.append(("surveyd:\(Surveyd.type)", "number")) }
                try w.element(column.name, attributes, text: column.value)
            }
            try w.endElement()
        }
        try w.endElement()
        try w.endElement()
    }

    private static func binds(_ node: XFormPlan.Node, _ w: XMLTextWriter) throws(XMLTextWriter.Failure) {
        // A node whose element is not its id keeps its id for the way back (`XFormReader`).
        let id: [(String, String)] = node.kind != .helper && String(node.name) != node.id ? [("surveyd:\(Surveyd.id)", node.id)] : []
        if !node.bind.isEmpty || !id.isEmpty { try w.element("bind", [("nodeset", node.path)] + node.bind + id) }
        for child in node.children { try binds(child, w) }
    }

    private static func body(_ node: XFormPlan.Node, _ w: XMLTextWriter) throws(XMLTextWriter.Failure) {
        switch node.kind {
        case .group, .repeat:
            try w.startElement("group")
            try w.attribute("ref", node.path)
            if let label = node.label { try text("label", label, w) }
            if node.kind == .repeat {
                try w.startElement("repeat")
                try w.attribute("nodeset", node.path)
                if let count = node.count { try w.attribute("jr:count", count) }
            }
            for child in node.children { try body(child, w) }
            for ref in node.newInstanceIds {
                try w.element("setvalue", [("ref", ref), ("event", "odk-new-repeat"), ("value", "uuid()")])
            }
            if node.kind == .repeat { try w.endElement() }
            try w.endElement()
        case .question, .note:
            guard let control = node.control else { return }
            try w.startElement(control)
            try w.attribute("ref", node.path)
            for (name, value) in node.controlAttributes { try w.attribute(name, value) }
            if let label = node.label { try text("label", label, w) }
            if let hint = node.hint { try text("hint", hint, w) }
            for item in node.items {
                try w.startElement("item")
                for (name, value) in item.attributes { try w.attribute(name, value) }
                try text("label", item.label, w)
                try w.element("value", preserving(item.value), text: item.value)
                try w.endElement()
            }
            if let itemset = node.itemset {
                try w.startElement("itemset")
                try w.attribute("nodeset", itemset.nodeset)
                try w.element("value", [("ref", "name")])
                try w.element("label", [("ref", itemset.label)])
                try w.endElement()
            }
            try w.endElement()
        case .helper:
            return
        }
    }

    private static func text(_ element: String, _ label: XFormPlan.Label, _ w: XMLTextWriter) throws(XMLTextWriter.Failure) {
        switch label {
        case .plain(let s): try w.element(element, preserving(s), text: s)
        case .itext(let id): try w.element(element, [("ref", "jr:itext('\(id)')")])
        }
    }
}
