import SurveyForms

/// Builds the definition's nodes by walking the primary instance (its order and nesting), each
/// element taking its kind, label and appearance from the body and its logic from its bind.
/// `meta` (instanceID and the like) is the device's bookkeeping, not a question: it is skipped.
struct XFormNodeBuilder {
    private let data: XMLElement
    private let rootPath: String
    private var secondary: [String: XMLElement] = [:]
    private var binds: [String: XMLElement] = [:]
    private let body: XFormBody
    private let translations: ItextTranslations
    private(set) var translator = XPathTranslator(ids: [:])
    /// Every node's id by its path (`assignIds`).
    private var ids: [String: String] = [:]
    /// The paths of the `meta` elements of groups and repeats that hold an entity: the device's
    /// bookkeeping, read by `XFormEntities`.
    private var entityMetas: [String] = []
    private var usedBinds: Set<String> = []
    private var usedBody: Set<String> = []
    /// Secondary instances read as choice lists, by instance id.
    private(set) var choiceLists: [String: JSONValue] = [:]
    private var choiceListShapes: [String: String] = [:]
    /// Instances read as a question's own choices (`surveyd:list="inline"`).
    private var inlineLists: Set<String> = []
    /// Instances of CSV files whose rows are a question's choices.
    private var fileLists: Set<String> = []
    /// What the reader has to say of the form beyond the definition.
    private(set) var warnings: [String] = []
    /// Instances of CSV files no question's choices come from, by id: what `pulldata` reads.
    private(set) var dataFiles: [String: String] = [:]

    private static let bindAttributes: Set<String> = ["nodeset", "type", "required", "relevant", "constraint", "calculate", "readonly"]
    private static let bindJavaRosaAttributes: Set<String> = ["constraintMsg", "preload", "preloadParams", "requiredMsg"]
    /// What `XFormWriter` keeps of a definition that an XForm has no place for (`Surveyd`).
    private static let bindSurveydAttributes: Set<String> = ["type", "label", "hint", "appearance", "minimum", "maximum", "maxLength",
                                                             "maxBytes", "accept", "minCount", "maxCount", "required", "readonly", "default", "constraint", "id"]

    /// The model's actions (`setvalue`, `odk:setgeopoint`, `odk:recordaudio`), checked with the body's.
    private let modelActions: [XMLElement]

    init(data: XMLElement, secondary: [XMLElement], binds: [XMLElement], body: XFormBody, translations: ItextTranslations,
         modelActions: [XMLElement] = []) throws(XFormRefusal) {
        self.data = data
        self.modelActions = modelActions
        self.rootPath = "/" + data.name
        self.body = body
        self.translations = translations
        // Iterative, each path once: a group's or repeat's meta that holds an entity.
        var metas: Set<String> = []
        var walk = [(data, "/" + data.name)]
        while let (element, path) = walk.popLast() {
            for child in element.children {
                let childPath = path + "/" + child.name
                if child.name == "meta" && childPath != "/" + data.name + "/meta" && child.children.contains(where: { $0.name == "entity" }) {
                    metas.insert(childPath)
                } else if !child.children.isEmpty {
                    walk.append((child, childPath))
                }
            }
        }
        entityMetas = metas.sorted()
        for instance in secondary {
            guard let id = instance.attribute("id"), !id.isEmpty else { throw XFormRefusal("the XForm has a second <instance> without an id") }
            guard self.secondary[id] == nil else { throw XFormRefusal("the XForm has two instances named \(id)") }
            self.secondary[id] = instance
        }
        for bind in binds {
            guard let nodeset = bind.attribute("nodeset")?.trimmingWhitespace(), nodeset.hasPrefix("/") else {
                throw XFormRefusal("the XForm has a <bind> without an absolute nodeset")
            }
            guard self.binds[nodeset] == nil else { throw XFormRefusal("the XForm has two binds for \(nodeset)") }
            for a in bind.attributes where !Self.isServerBindAttribute(a) {
                // surveyd's own attributes are all known: another one was not written by surveyd.
                guard a.namespace != XMLNamespace.surveyd else {
                    throw XFormRefusal("the bind of \(nodeset) has \(a.displayName)=\"\(a.value)\", which surveyd does not carry")
                }
                warnings.append(Self.keptForDevices("the bind of \(nodeset)", a))
            }
            self.binds[nodeset] = bind
        }
    }

    /// The `upload` of an OpenStreetMap question.
    private static let osmMediatype = "osm/*"

    /// A bind attribute the server reads; any other (`saveIncomplete`, `jr:noAppErrorString`, a
    /// `bind::` column of the XLSForm) is the device's, kept in the XForm.
    private static func isServerBindAttribute(_ a: XMLElement.Attribute) -> Bool {
        switch a.namespace {
        case nil: bindAttributes.contains(a.name)
        case XMLNamespace.javaRosa: bindJavaRosaAttributes.contains(a.name)
        case XMLNamespace.surveyd: bindSurveydAttributes.contains(a.name)
        // What the device does with an answer as it takes it (`orx:max-pixels`, `odk:quality`, …).
        case XMLNamespace.odk, XMLNamespace.openRosa: true
        case XMLNamespace.entities: a.name == "saveto"  // read by XFormEntities
        default: false
        }
    }

    /// The warning for an attribute only ODK apps read.
    private static func keptForDevices(_ place: String, _ a: XMLElement.Attribute) -> String {
        "\(place) has \(a.displayName)=\"\(a.value)\", which ODK apps read: surveyd keeps it in the XForm and does not check it."
    }

    /// The definition's nodes; every bind and body element must have been used.
    mutating func nodes() throws(XFormRefusal) -> [JSONValue] {
        ids = try assignIds()
        translator = XPathTranslator(ids: ids)
        try checkActions(ids: ids)
        let nodes = try children(of: data, path: rootPath)
        guard !nodes.isEmpty else { throw XFormRefusal("the XForm has no questions") }
        for path in binds.keys.sorted() where !usedBinds.contains(path) && !isMeta(path) {
            if isRepeatCountHelper(path) {
                throw XFormRefusal("\(path) is a repeat count's node (surveyd:type=\"\(Surveyd.repeatCountHelper)\"), yet no repeat's jr:count names it")
            }
            throw XFormRefusal("the bind of \(path) names no node of the primary instance")
        }
        let bodyPaths = Set(body.controls.keys).union(body.groups.keys).union(body.repeats.keys)
        for path in bodyPaths.sorted() where !usedBody.contains(path) {
            throw XFormRefusal("the body's control for \(path) names no node of the primary instance")
        }
        for (id, instance) in secondary.sorted(by: { $0.key < $1.key }) where choiceLists[id] == nil {
            if let src = instance.attribute("src") {
                if !fileLists.contains(id) { dataFiles[id] = try csvFile(src, instance: id) }
                continue
            }
            // A choice list no question names, kept by XFormWriter: `name`, and `itextId` or `label`.
            switch instance.attribute(Surveyd.list, namespace: XMLNamespace.surveyd) {
            case "unused"?:
                let items = instance.children.first?.children ?? []
                let itext = items.contains { $0.child("itextId", namespace: XMLNamespace.xforms) != nil }
                choiceLists[id] = try choiceList(instance, id: id, valueRef: "name", labelRef: itext ? "jr:itext(itextId)" : "label")
            case "inline"? where !inlineLists.contains(id):
                throw XFormRefusal("instance('\(id)') holds a question's own choices (surveyd:list=\"inline\"), yet no question's itemset names it")
            default:
                break
            }
        }
        return nodes
    }

    /// Every action sets a node of the primary instance, and its value reads (its paths name
    /// nodes of the form); the device runs it, the XForm keeps it.
    private func checkActions(ids: [String: String]) throws(XFormRefusal) {
        let all = modelActions.map { ($0, "") } + body.actions.map { ($0.action, $0.at) }
        for (action, _) in all {
            try XFormActions.check(action)
            guard let ref = action.attribute("ref")?.trimmingWhitespace(), ref.hasPrefix("/"), !ref.contains("[") else {
                throw XFormRefusal("the action <\(action.displayName)> names no node (ref=\"\(action.attribute("ref") ?? "")\"); surveyd reads an absolute path such as /data/name")
            }
            guard ids[ref] != nil || isMeta(ref) else {
                throw XFormRefusal("the action <\(action.displayName)> sets \(ref), which is not a node of the form")
            }
            if let value = action.attribute("value"), !value.trimmingWhitespace().isEmpty {
                _ = try translator.translate(value, context: .node(path: ref), what: "the value <\(action.displayName)> sets \(ref) to")
            }
        }
    }

    /// `id`, and `name` where the element's name is not the id.
    private func identity(_ element: XMLElement, path: String) -> [String: JSONValue] {
        let id = ids[path] ?? element.name
        return id == element.name ? ["id": .string(id)] : ["id": .string(id), "name": .string(element.name)]
    }

    /// The root's `meta`, and a group's or repeat's `meta` holding an `entity` (Entities 2025.1).
    private func isMeta(_ path: String) -> Bool {
        if path == rootPath + "/meta" || path.hasPrefix(rootPath + "/meta/") { return true }
        return entityMetas.contains { path == $0 || path.hasPrefix($0 + "/") }
    }

    /// A node's id by its path in the primary instance.
    func id(ofPath path: String) -> String? { ids[path] }

    /// The node `XFormWriter` adds for a repeat count that is not one path (`jr:count` takes a
    /// path only): not a question; the repeat's count is its calculation.
    private func isRepeatCountHelper(_ path: String) -> Bool {
        binds[path]?.attribute(Surveyd.type, namespace: XMLNamespace.surveyd) == Surveyd.repeatCountHelper
    }

    /// A node's id is its element's name where that name is the form's only node of that name
    /// and an id (a letter, then letters, digits, `_`: an XML name may also hold `-` and `.`).
    /// Ids are unique across the whole definition (groups add no level to the answers), so the
    /// nodes sharing a name in different groups (`/data/col1/count`, `/data/col2/count`) each
    /// take their path below the root (`col1_count`, `col2_count`; a number after it if that
    /// is taken) and keep the name as their element's; `surveyd:id` on a bind (what
    /// `XFormWriter` writes for such a node) gives the id back.
    private func assignIds() throws(XFormRefusal) -> [String: String] {
        var paths: [String] = []
        var pathsByName: [String: Int] = [:]
        collectPaths(data, path: rootPath, into: &paths, seen: &pathsByName)
        var ids: [String: String] = [:]
        var taken: Set<String> = []
        for path in paths {
            let name = Self.lastStep(path)
            if let given = binds[path]?.attribute(Surveyd.id, namespace: XMLNamespace.surveyd)?.trimmingWhitespace() {
                guard SurveyDefinition.isValidId(given), taken.insert(given).inserted else {
                    throw XFormRefusal("the bind of \(path) gives the id \(given) (surveyd:id), which is not an id or is another node's")
                }
                ids[path] = given
            } else if pathsByName[name] == 1, SurveyDefinition.isValidId(name), taken.insert(name).inserted {
                ids[path] = name
            }
        }
        for path in paths where ids[path] == nil {
            let name = Self.lastStep(path)
            let steps = pathsByName[name] == 1 ? [name[...]] : path.dropFirst(rootPath.count + 1).split(separator: "/")
            let base = Self.idLike(steps.joined(separator: "_"))
            var id = base, n = 2
            while !taken.insert(id).inserted {
                id = "\(base)_\(n)"
                n += 1
            }
            ids[path] = id
        }
        return ids
    }

    /// Every node's path below `element` in document order, once (a repeat's template and its
    /// copies share a path), with how many paths end in each name.
    private func collectPaths(_ element: XMLElement, path: String, into paths: inout [String], seen: inout [String: Int]) {
        var here: Set<String> = []
        for child in element.children {
            let childPath = path + "/" + child.name
            guard !isMeta(childPath), here.insert(child.name).inserted else { continue }
            paths.append(childPath)
            seen[child.name, default: 0] += 1
        }
        var entered: Set<String> = []
        for child in element.children where entered.insert(child.name).inserted && !isMeta(path + "/" + child.name) {
            collectPaths(child, path: path + "/" + child.name, into: &paths, seen: &seen)
        }
    }

    /// An XML name as an id: every character outside `A-Za-z0-9_` becomes `_` (`label-test` →
    /// `label_test`), `n_` before one that does not start with a letter, at most 60 characters
    /// (room for a number after it).
    private static func idLike(_ name: String) -> String {
        var id = String(String.UnicodeScalarView(name.unicodeScalars.map { c in
            c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_") ? c : "_"
        }))
        if !(id.unicodeScalars.first.map { $0.isASCII && $0.properties.isAlphabetic } ?? false) { id = "n_" + id }
        return String(id.prefix(60))
    }

    private static func lastStep(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    private mutating func children(of element: XMLElement, path: String) throws(XFormRefusal) -> [JSONValue] {
        var out: [JSONValue] = []
        var seen: Set<String> = []
        for child in element.children {
            let childPath = path + "/" + child.name
            if isMeta(childPath) { continue } // meta/entity is read by XFormEntities
            guard seen.insert(childPath).inserted else { continue }
            if isRepeatCountHelper(childPath) { continue } // read with the repeat whose jr:count names it
            out.append(try node(child, path: childPath))
        }
        return out
    }

    private mutating func node(_ element: XMLElement, path: String) throws(XFormRefusal) -> JSONValue {
        let bind = binds[path]
        if bind != nil { usedBinds.insert(path) }
        let isContainer = !element.children.isEmpty || body.groups[path] != nil || body.repeats[path] != nil
        if isContainer { return try container(element, path: path, bind: bind) }
        if let control = body.controls[path] {
            usedBody.insert(path)
            return try question(control, element: element, path: path, bind: bind)
        }
        guard let bind else { return try deviceValue(element, path: path, type: "string") }
        let declared = bind.attribute(Surveyd.type, namespace: XMLNamespace.surveyd)
        // A calculation; a preload (start, end, today, deviceid...: a value the device fills in, kept
        // as sent); or a calculate question without a calculation, as XFormWriter writes one.
        guard bind.attribute("calculate") != nil || bind.attribute("preload", namespace: XMLNamespace.javaRosa) != nil || declared == "calculate" else {
            // A hidden question, or a node an action sets (start-geopoint, background-audio, a trigger's setvalue).
            let type = bind.attribute("type").map { t in t.hasPrefix("xsd:") ? String(t.dropFirst(4)) : t } ?? "string"
            var q = try deviceValue(element, path: path, type: type).objectValue ?? [:]
            try logic(bind, path: path, into: &q, allowed: ["relevant", "required", "constraint", "readonly"])
            try surveydAttributes(bind, path: path, into: &q)
            return .object(q)
        }
        if let declared, declared != "calculate" {
            throw XFormRefusal("\(path) has no control in the body, so it is a calculation, yet its bind says surveyd:type=\"\(declared)\"")
        }
        var q = identity(element, path: path)
        q["type"] = "calculate"
        q["label"] = .string(element.name)
        if let calculation = bind.attribute("calculate") {
            do {
                q["calculation"] = .string(try translator.translate(calculation, context: .node(path: path), what: "the calculation of \(path)"))
            } catch {
                // Its value is taken as the device sent it all the same (the server never recomputes
                // one): the calculation stays in the XForm, for the device only.
                warnings.append("\(error.message); the device computes \(element.name), and its value is taken as sent.")
            }
        }
        let value = element.value
        if !value.isEmpty { q["default"] = .string(value) }
        try logic(bind, path: path, into: &q, allowed: ["relevant", "required", "constraint", "readonly"])
        try surveydAttributes(bind, path: path, into: &q)
        return .object(q)
    }

    /// A node without a control whose value the device fills in: a hidden question, or one an
    /// action sets. A question of the type its bind says (a `string` is a `calculate` without a
    /// calculation; `binary`, a recording, a file), labelled by its id, its value taken as sent.
    private func deviceValue(_ element: XMLElement, path: String, type: String) throws(XFormRefusal) -> JSONValue {
        var q = identity(element, path: path)
        q["label"] = .string(element.name)
        switch type {
        case "string": q["type"] = "calculate"
        case "int": q["type"] = "integer"
        case "decimal", "date", "time", "geopoint", "geotrace", "geoshape", "barcode": q["type"] = .string(type)
        case "dateTime": q["type"] = "datetime"
        case "binary":
            q["type"] = "file"
            q["accept"] = ["*/*"]
        default:
            throw XFormRefusal("\(path) has no control in the body, and its bind's type \(type) is none surveyd knows")
        }
        let value = element.value
        if !value.isEmpty { q["default"] = .string(value) }
        return .object(q)
    }

    private mutating func container(_ element: XMLElement, path: String, bind: XMLElement?) throws(XFormRefusal) -> JSONValue {
        guard body.controls[path] == nil else {
            throw XFormRefusal("\(path) holds other nodes, yet the body shows it as a question")
        }
        var node = identity(element, path: path)
        var label: XMLElement?
        if let r = body.repeats[path] {
            node["type"] = "repeat"
            label = r.label
            for a in r.element.attributes {
                switch (a.namespace, a.name) {
                case (nil, "nodeset"), (nil, "appearance"): continue
                case (XMLNamespace.javaRosa, "count"):
                    let target = a.value.trimmingWhitespace()
                    if isRepeatCountHelper(target), let helper = binds[target], let calculation = helper.attribute("calculate") {
                        usedBinds.insert(target)
                        node["repeatCount"] = .string(try translator.translate(calculation, context: .node(path: target), what: "the repeat count of \(path)"))
                    } else {
                        node["repeatCount"] = .string(try translator.translate(a.value, context: .node(path: path), what: "the repeat count of \(path)"))
                    }
                case (XMLNamespace.javaRosa, "noAddRemove"):
                    guard r.element.attribute("count", namespace: XMLNamespace.javaRosa) != nil || a.value.trimmingWhitespace() == "false()" else {
                        throw XFormRefusal("the repeat \(path) has jr:noAddRemove without jr:count; surveyd counts a fixed repeat with repeat_count")
                    }
                case (XMLNamespace.surveyd, _):
                    throw XFormRefusal("the repeat \(path) has \(a.displayName)=\"\(a.value)\", which surveyd does not carry")
                default:
                    warnings.append(Self.keptForDevices("the repeat \(path)", a))
                }
            }
            usedBody.insert(path)
        } else {
            node["type"] = "group"
            label = body.groups[path]?.child("label")
            if body.groups[path] != nil { usedBody.insert(path) }
        }
        if body.groups[path] != nil { usedBody.insert(path) }
        if let label {
            node["label"] = try text(label, what: "the label of \(path)", allowsMedia: true, path: path)
            if let media = try media(label, what: "the label of \(path)") { node["media"] = media }
        }
        if let bind {
            try logic(bind, path: path, into: &node, allowed: ["relevant"])
            try surveydAttributes(bind, path: path, into: &node)
        }
        let children = try self.children(of: element, path: path)
        guard !children.isEmpty else { throw XFormRefusal("the \(node["type"]?.stringValue ?? "group") \(path) has no questions") }
        node["children"] = .array(children)
        return .object(node)
    }

    private mutating func question(_ control: XMLElement, element: XMLElement, path: String, bind: XMLElement?) throws(XFormRefusal) -> JSONValue {
        let bindType = bind?.attribute("type").map { t in t.hasPrefix("xsd:") ? String(t.dropFirst(4)) : t } ?? "string"
        let readonly = bind?.attribute("readonly")?.trimmingWhitespace()
        let declared = bind?.attribute(Surveyd.type, namespace: XMLNamespace.surveyd)
        if bind?.attribute("calculate") != nil {
            throw XFormRefusal("\(path) is shown in the body and has a calculation; surveyd calculates only in calculate questions")
        }
        var q = identity(element, path: path)
        var allowed: Set<String> = ["relevant", "required", "constraint", "readonly"]
        switch (control.name, bindType) {
        // pyxform's note; a read-only text with a value of its own stays a question.
        case ("input", "string") where readonly == "true()" && element.text.trimmingWhitespace().isEmpty && declared != "text":
            q["type"] = "note"
            allowed = ["relevant", "readonly"]
        case ("input", "string"): q["type"] = "text"
        case ("input", "int"): q["type"] = "integer"
        case ("input", "decimal"): q["type"] = "decimal"
        case ("input", "date"): q["type"] = "date"
        case ("input", "time"): q["type"] = "time"
        case ("input", "dateTime"): q["type"] = "datetime"
        case ("input", "geopoint"), ("input", "geotrace"), ("input", "geoshape"), ("input", "barcode"):
            q["type"] = .string(bindType)
        case ("select1", "string"), ("select1", "select1"): q["type"] = "select_one"
        case ("select", "string"), ("select", "select"): q["type"] = "select_multiple"
        case ("upload", "binary"):
            q["type"] = "file"
            let mediatype = control.attribute("mediatype")?.trimmingWhitespace() ?? "*/*"
            // An OpenStreetMap question (pyxform's `osm`): the device's mapping app sends the
            // features as an OSM XML file.
            q["accept"] = mediatype == Self.osmMediatype ? ["text/xml", "application/xml"] : .array([.string(mediatype.isEmpty ? "*/*" : mediatype)])
        // acknowledge: "OK" once acknowledged.
        case ("trigger", "string"):
            q["type"] = "select_one"
            q["choices"] = ["OK"]
        // A number between its bounds (start and end, in either order).
        case ("range", "int"), ("range", "decimal"):
            q["type"] = bindType == "int" ? "integer" : "decimal"
            let bounds = ["start", "end"].compactMap { control.attribute($0).flatMap { Double($0.trimmingWhitespace()) } }
            guard bounds.count == 2 else { throw XFormRefusal("the range \(path) needs numbers start and end") }
            q["minimum"] = .number(bounds.min() ?? 0)
            q["maximum"] = .number(bounds.max() ?? 0)
        // Ranking: every choice once, in the order given, as a select_multiple's answer is written.
        case ("rank", "odk:rank") where control.namespace == XMLNamespace.odk:
            q["type"] = "select_multiple"
        default:
            throw XFormRefusal("\(path) is an <\(control.name)> of type \(bindType); surveyd has no such question type")
        }
        if let declared, declared != q["type"]?.stringValue {
            throw XFormRefusal("\(path) is a \(q["type"]?.stringValue ?? "question") by its control and bind, yet its bind says surveyd:type=\"\(declared)\"")
        }
        for a in control.attributes {
            switch (a.namespace, a.name) {
            case (nil, "ref"): continue
            case (nil, "appearance") where q["type"] != "note": q["appearance"] = .string(a.value)
            // A note's appearance, how a control shows (rows, autoplay), a range's step, the choices
            // of select_one_external (query, a file on the device): the device's, kept in the XForm.
            case (nil, "appearance"), (nil, "rows"), (nil, "autoplay"), (nil, "query"),
                 (nil, "accuracyThreshold"), (nil, "unacceptableAccuracyThreshold"): continue
            case (nil, "mediatype") where control.name == "upload": continue
            case (nil, "start") where control.name == "range", (nil, "end") where control.name == "range", (nil, "step") where control.name == "range":
                continue
            case (XMLNamespace.odk, _), (XMLNamespace.openRosa, _): continue
            // Any other (`intent`, a `body::` column of the XLSForm) is how the device shows or fills it.
            default: warnings.append(Self.keptForDevices("the control of \(path)", a))
            }
        }
        var labelElement: XMLElement?
        for child in control.children {
            switch (child.namespace, child.name) {
            case (XMLNamespace.xforms, "label"):
                guard labelElement == nil else { throw XFormRefusal("\(path) has two labels") }
                labelElement = child
            case (XMLNamespace.xforms, "hint") where q["type"] != "note":
                guard q["hint"] == nil else { throw XFormRefusal("\(path) has two hints") }
                let hint = try text(child, what: "the hint of \(path)", path: path)
                if hint != .string("") { q["hint"] = hint } // a hint that is only guidance
            case (XMLNamespace.xforms, "hint"):
                _ = try text(child, what: "the hint of \(path)", path: path) // a note's: shown on the device
            // The OSM tags the mapping app asks for: the device's.
            case (XMLNamespace.xforms, "tag") where control.attribute("mediatype")?.trimmingWhitespace() == Self.osmMediatype:
                continue
            case (XMLNamespace.xforms, "item") where (q["type"] == "select_one" || q["type"] == "select_multiple") && control.name != "trigger",
                 (XMLNamespace.xforms, "itemset") where (q["type"] == "select_one" || q["type"] == "select_multiple") && control.name != "trigger":
                continue
            case _ where XFormActions.isAction(child):
                continue // read by checkActions
            default:
                throw XFormRefusal("\(path) holds <\(child.displayName)>, which surveyd does not carry")
            }
        }
        guard let labelElement else { throw XFormRefusal("\(path) has no label; every question of a definition has one") }
        q["label"] = try text(labelElement, what: "the label of \(path)", allowsMedia: true, path: path)
        if let media = try media(labelElement, what: "the label of \(path)") { q["media"] = media }
        if control.name == "select1" || control.name == "select" || control.name == "rank" { try choices(of: control, path: path, into: &q) }
        let value = element.value
        if !value.isEmpty, q["type"] != "note" { q["default"] = .string(value) }
        if let bind {
            if q["type"] == "note" { q["readonly"] = nil }
            try logic(bind, path: path, into: &q, allowed: allowed)
            if q["type"] == "note" { q["readonly"] = nil } // readonly true() is what makes it a note
            try surveydAttributes(bind, path: path, into: &q)
        }
        return .object(q)
    }

    /// The bind's logic, translated; an attribute the node kind does not carry is refused.
    private func logic(_ bind: XMLElement, path: String, into node: inout [String: JSONValue], allowed: Set<String>) throws(XFormRefusal) {
        // `surveyd:required="expression"`: the definition wrote `true()` / `false()` as an expression.
        let requiredIsExpression = bind.attribute("required", namespace: XMLNamespace.surveyd) == Surveyd.expression
        let readonlyIsExpression = bind.attribute("readonly", namespace: XMLNamespace.surveyd) == Surveyd.expression
        for a in bind.attributes {
            let value = a.value.trimmingWhitespace()
            switch (a.namespace, a.name) {
            case (nil, "nodeset"), (nil, "type"), (nil, "calculate"), (XMLNamespace.javaRosa, "preload"), (XMLNamespace.javaRosa, "preloadParams"):
                continue // read where the kind of node is decided
            case (XMLNamespace.surveyd, _):
                continue // read by surveydAttributes
            case (XMLNamespace.entities, "saveto"):
                continue // read by XFormEntities
            // The message an app shows for a required answer left empty, and what the device does
            // with an answer as it takes it (`orx:max-pixels`, …): kept in the XForm; the server says `required`.
            case (XMLNamespace.javaRosa, "requiredMsg"), (XMLNamespace.odk, _), (XMLNamespace.openRosa, _):
                continue
            case (nil, "readonly") where node["type"] == "note" && value == "true()":
                continue
            case (nil, "readonly") where node["type"] == "calculate" && value == "true()":
                // A calculation is read-only by nature; pyxform says so on the node it adds for a
                // repeat_count that is a number or an expression (`<repeat>_count`).
                continue
            case (nil, "constraint") where allowed.contains("constraint") && bind.attribute(Surveyd.constraint, namespace: XMLNamespace.surveyd) != nil:
                // surveyd's writer joined the bounds to the constraint: the definition's own is this one.
                let own = bind.attribute(Surveyd.constraint, namespace: XMLNamespace.surveyd) ?? ""
                guard !own.trimmingWhitespace().isEmpty else { continue }
                node["constraint"] = .string(try translator.translate(own, context: XPathTranslator.Context.node(path: path), what: "the constraint of \(path)"))
            case (nil, let key) where allowed.contains(key):
                if key == "required" && value == "true()" && !requiredIsExpression { node["required"] = true; continue }
                if key == "required" && value == "false()" && !requiredIsExpression { continue }
                if key == "readonly" && value == "false()" && !readonlyIsExpression { continue }
                let context = XPathTranslator.Context.node(path: path)
                node[key] = .string(try translator.translate(a.value, context: context, what: "the \(key) of \(path)"))
            case (XMLNamespace.javaRosa, "constraintMsg") where allowed.contains("constraint"):
                if let id = ItextTranslations.reference(a.value) {
                    node["constraintMessage"] = try translations.text(id: id, what: "the constraint message of \(path)",
                                                                      render: output(at: path, what: "the constraint message of \(path)"))
                } else {
                    node["constraintMessage"] = .string(a.value)
                }
            case _ where !Self.isServerBindAttribute(a):
                continue // the device's, named in a warning when the binds were read
            default:
                throw XFormRefusal("the bind of \(path) has \(a.displayName)=\"\(a.value)\", which surveyd does not carry on a \(node["type"]?.stringValue ?? "node")")
            }
        }
    }

    /// A label or hint: `jr:itext('id')` in every language, or its own text; an answer it shows
    /// (`<output value=" /data/name "/>`) is kept as `${name}` (read from `path`). Only a label may
    /// show media (read by `media`).
    private func text(_ element: XMLElement, what: String, allowsMedia: Bool = false, path: String? = nil) throws(XFormRefusal) -> JSONValue {
        let render = output(at: path ?? rootPath, what: what)
        if let ref = element.attribute("ref") {
            guard let id = ItextTranslations.reference(ref) else {
                throw XFormRefusal("\(what) is \(ref); surveyd reads a label's text or jr:itext('...')")
            }
            return try translations.text(id: id, what: what, allowsMedia: allowsMedia, render: render)
        }
        return .string(try ItextTranslations.text(of: element, what: what, render: render))
    }

    /// How a text writes the answer an `<output>` shows: `${name}`, a template the XForm keeps
    /// as it is and a reader fills in. An output that computes something else is refused by name.
    private func output(at path: String, what: String) -> ItextTranslations.OutputRenderer {
        let translator = self.translator
        return { (o: XMLElement) throws(XFormRefusal) -> String in
            guard let expression = o.attribute("value") ?? o.attribute("ref") else {
                throw XFormRefusal("\(what) has an <output> without a value")
            }
            let translated = try translator.translate(expression, context: .node(path: path), what: what)
            guard translated.hasPrefix("${"), translated.hasSuffix("}"), !translated.dropFirst(2).dropLast().contains("}") else {
                throw XFormRefusal("\(what) shows <output value=\"\(expression)\"/>; surveyd keeps an output that shows an answer (${name}), not one that computes")
            }
            return translated
        }
    }

    /// The media a label shows (`jr:itext` values of form image, big-image, audio, video).
    private func media(_ element: XMLElement, what: String) throws(XFormRefusal) -> JSONValue? {
        guard let ref = element.attribute("ref"), let id = ItextTranslations.reference(ref) else { return nil }
        return try translations.media(id: id, what: what)
    }

    /// What a bind says in surveyd's namespace (`Surveyd`): the definition's properties an XForm
    /// has no place for, each on the kind of node that has it.
    private func surveydAttributes(_ bind: XMLElement, path: String, into node: inout [String: JSONValue]) throws(XFormRefusal) {
        let kind = node["type"]?.stringValue ?? "node"
        let isQuestion = !["group", "repeat", "note"].contains(kind)
        for a in bind.attributes where a.namespace == XMLNamespace.surveyd {
            switch (a.name, kind) {
            case (Surveyd.type, _):
                continue // read where the kind of node is decided
            case (Surveyd.id, _):
                continue // read with every node's id (`assignIds`)
            case ("required", _) where isQuestion && a.value == "false" && bind.attribute("required") == nil:
                node["required"] = false
            case ("required", _) where isQuestion && a.value == Surveyd.expression && bind.attribute("required") != nil,
                 ("readonly", _) where isQuestion && a.value == Surveyd.expression && bind.attribute("readonly") != nil:
                continue // read with the expression
            case (Surveyd.constraint, _) where isQuestion && bind.attribute("constraint") != nil:
                continue // read with the constraint
            case ("default", _) where isQuestion && node["default"] == nil:
                node["default"] = .string(a.value)
            case ("minimum", "integer"), ("minimum", "decimal"), ("maximum", "integer"), ("maximum", "decimal"),
                 ("maxLength", "text"), ("maxBytes", "file"), ("minCount", "repeat"), ("maxCount", "repeat"):
                guard case .number(let n)? = try? JSONParser.parse(Array(a.value.utf8)) else {
                    throw XFormRefusal("the bind of \(path) has surveyd:\(a.name)=\"\(a.value)\", which is not a number")
                }
                node[a.name] = .number(n)
            case ("accept", "file"):
                node["accept"] = .array(a.value.split(whereSeparator: { $0 == " " }).map { .string(String($0)) })
            case ("label", "calculate"), ("hint", "calculate"):
                if let id = ItextTranslations.reference(a.value) {
                    node[a.name] = try translations.text(id: id, what: "the \(a.name) of \(path)")
                } else {
                    node[a.name] = .string(a.value)
                }
            case ("appearance", "calculate"):
                node["appearance"] = .string(a.value)
            default:
                throw XFormRefusal("the bind of \(path) has \(a.displayName)=\"\(a.value)\", which surveyd does not carry on a \(kind)")
            }
        }
    }

    /// Inline `item`s become the question's `choices`; an `itemset` over a secondary instance
    /// becomes a `choiceList` (named by the instance) and its filter the `choiceFilter`.
    private mutating func choices(of control: XMLElement, path: String, into q: inout [String: JSONValue]) throws(XFormRefusal) {
        let items = control.children("item"), itemsets = control.children("itemset")
        if !items.isEmpty && itemsets.isEmpty {
            var list: [JSONValue] = []
            for item in items {
                guard let value = item.child("value")?.value, !value.isEmpty else {
                    throw XFormRefusal("a choice of \(path) has no value")
                }
                var choice: [String: JSONValue] = ["name": .string(value)]
                switch item.attribute(Surveyd.choice, namespace: XMLNamespace.surveyd) {
                case "string"?:
                    list.append(.string(value)) // the definition names it only; its label shows the name
                    continue
                case "unlabelled"?:
                    break
                case nil, "plain"?:
                    if let label = item.child("label") {
                        let text = try text(label, what: "the label of the choice \(value) of \(path)", allowsMedia: true, path: path)
                        if text != .string("") { choice["label"] = text } // a choice shown by its picture only
                        if let media = try media(label, what: "the label of the choice \(value) of \(path)") { choice["media"] = media }
                    }
                case let other?:
                    throw XFormRefusal("the choice \(value) of \(path) has surveyd:choice=\"\(other)\", which surveyd does not read")
                }
                list.append(.object(choice))
            }
            q["choices"] = .array(list)
            return
        }
        guard items.isEmpty, itemsets.count == 1, let itemset = itemsets.first, let nodeset = itemset.attribute("nodeset") else {
            throw XFormRefusal("\(path) has no choices, or both items and an itemset")
        }
        let (instanceId, filter) = try Self.itemsetSource(nodeset, path: path)
        guard let instance = secondary[instanceId] else {
            throw XFormRefusal("the choices of \(path) come from instance('\(instanceId)'), which the XForm does not have")
        }
        let valueRef = itemset.child("value")?.attribute("ref")?.trimmingWhitespace() ?? ""
        let labelRef = itemset.child("label")?.attribute("ref")?.trimmingWhitespace() ?? ""
        if let src = instance.attribute("src") {
            // Choices from a CSV file the version carries: the list named after the file.
            let file = try csvFile(src, instance: instanceId)
            guard valueRef == "name", labelRef == "label" || labelRef.isEmpty else {
                throw XFormRefusal("the choices of \(path) come from \(file) by its columns \(valueRef) and \(labelRef); surveyd reads a file's choices from its columns name and label")
            }
            fileLists.insert(instanceId)
            q["choiceList"] = .string(file)
            if let filter {
                q["choiceFilter"] = .string(try translator.translate(filter, context: .choiceFilter(questionPath: path), what: "the choice filter of \(path)"))
            }
            return
        }
        switch instance.attribute(Surveyd.list, namespace: XMLNamespace.surveyd) {
        case nil:
            break
        case "inline"?:
            // The question's own choices, in an instance because a filter or a column needs one.
            guard Self.isColumnName(valueRef) else { throw XFormRefusal("the choices of \(path) take their value from \(valueRef); surveyd reads a column name") }
            q["choices"] = try choiceList(instance, id: instanceId, valueRef: valueRef, labelRef: labelRef)
            inlineLists.insert(instanceId)
            if let filter {
                q["choiceFilter"] = .string(try translator.translate(filter, context: .choiceFilter(questionPath: path), what: "the choice filter of \(path)"))
            }
            return
        case let other?:
            throw XFormRefusal("the choices of \(path) come from instance('\(instanceId)'), which says surveyd:list=\"\(other)\"")
        }
        guard Self.isColumnName(valueRef) else { throw XFormRefusal("the choices of \(path) take their value from \(valueRef); surveyd reads a column name") }
        let shape = valueRef + "\n" + labelRef
        if let known = choiceListShapes[instanceId] {
            guard known == shape else { throw XFormRefusal("the choices of instance('\(instanceId)') are read in two ways; surveyd reads a list one way") }
        } else {
            choiceLists[instanceId] = try choiceList(instance, id: instanceId, valueRef: valueRef, labelRef: labelRef)
            choiceListShapes[instanceId] = shape
        }
        q["choiceList"] = .string(instanceId)
        if let filter {
            q["choiceFilter"] = .string(try translator.translate(filter, context: .choiceFilter(questionPath: path), what: "the choice filter of \(path)"))
        }
    }

    private func choiceList(_ instance: XMLElement, id: String, valueRef: String, labelRef: String) throws(XFormRefusal) -> JSONValue {
        guard let root = instance.children.first, instance.children.count == 1 else {
            throw XFormRefusal("instance('\(id)') has no single root element")
        }
        let itextLabels = labelRef == "jr:itext(itextId)"
        guard itextLabels || labelRef.isEmpty || Self.isColumnName(labelRef) else {
            throw XFormRefusal("the choices of instance('\(id)') take their label from \(labelRef); surveyd reads a column or jr:itext(itextId)")
        }
        var list: [JSONValue] = []
        for item in root.children {
            guard item.children.allSatisfy({ $0.children.isEmpty }) else {
                throw XFormRefusal("a choice of instance('\(id)') holds nested elements")
            }
            // XFormWriter's marks: a bare name, a choice without a label, a label in one text for every language.
            let mark = item.attribute(Surveyd.choice, namespace: XMLNamespace.surveyd)
            guard mark == nil || mark == "string" || mark == "unlabelled" || mark == "plain" else {
                throw XFormRefusal("a choice of instance('\(id)') has surveyd:choice=\"\(mark ?? "")\", which surveyd does not read")
            }
            var choice: [String: JSONValue] = [:]
            for column in item.children {
                let value = column.value
                switch column.name {
                case valueRef: choice["name"] = .string(value)
                case "itextId" where itextLabels:
                    if mark == "plain" {
                        choice["label"] = try translations.plainText(id: value, what: "the choice \(value) of instance('\(id)')",
                                                                     render: output(at: rootPath, what: "the choice \(value) of instance('\(id)')"))
                    } else {
                        let label = try translations.text(id: value, what: "the choice \(value) of instance('\(id)')", allowsMedia: true,
                                                          render: output(at: rootPath, what: "the choice \(value) of instance('\(id)')"))
                        if label != .string("") { choice["label"] = label } // a choice shown as a picture only
                        if let media = try translations.media(id: value, what: "the choice \(value) of instance('\(id)')") { choice["media"] = media }
                    }
                case labelRef: choice["label"] = .string(value)
                case "name", "label": continue // pyxform writes both; only the referenced one counts
                default:
                    if column.attribute(Surveyd.type, namespace: XMLNamespace.surveyd) == "number" {
                        guard case .number(let n)? = try? JSONParser.parse(Array(value.utf8)) else {
                            throw XFormRefusal("the column \(column.name) of a choice of instance('\(id)') is not a number, yet it says surveyd:type=\"number\"")
                        }
                        choice[column.name] = .number(n)
                    } else {
                        choice[column.name] = .string(value)
                    }
                }
            }
            guard let name = choice["name"] else { throw XFormRefusal("a choice of instance('\(id)') has no \(valueRef)") }
            switch mark {
            case "string"?: list.append(name); continue
            case "unlabelled"?: choice["label"] = nil
            default: break
            }
            list.append(.object(choice))
        }
        return .array(list)
    }

    /// `instance('id')/root/item` with an optional `[filter]`.
    static func itemsetSource(_ nodeset: String, path: String) throws(XFormRefusal) -> (String, String?) {
        let s = nodeset.trimmingWhitespace()
        let refusal = XFormRefusal("the choices of \(path) come from \(nodeset); surveyd reads instance('list')/root/item with an optional [filter]")
        guard s.hasPrefix("instance(") else { throw refusal }
        // The list's name is a literal, which may hold a ")" or the other quote.
        let argument = s.dropFirst("instance(".count).drop { $0 == " " }
        guard let quote = argument.first, quote == "'" || quote == "\"", let end = argument.dropFirst().firstIndex(of: quote) else { throw refusal }
        let id = String(argument[argument.index(after: argument.startIndex)..<end])
        let afterLiteral = argument[argument.index(after: end)...].drop { $0 == " " }
        guard afterLiteral.first == ")" else { throw refusal }
        let rest = String(afterLiteral.dropFirst())
        guard rest.hasPrefix("/root/item") else { throw refusal }
        let tail = rest.dropFirst("/root/item".count).trimmingWhitespace()
        if tail.isEmpty { return (id, nil) }
        guard tail.hasPrefix("["), tail.hasSuffix("]") else { throw refusal }
        return (id, String(tail.dropFirst().dropLast()))
    }

    private static func isColumnName(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, first.properties.isAlphabetic || first == "_" else { return false }
        return s.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" || $0 == "." }
    }

    /// The file an external instance reads: a CSV file the version carries, named as its
    /// instance (`instance('villages')` is `villages.csv`, as pyxform writes it), so that
    /// `pulldata('villages', …)` names it too.
    private func csvFile(_ src: String, instance id: String) throws(XFormRefusal) -> String {
        let file = String(src.split(separator: "/").last ?? Substring(src))
        guard src.hasPrefix("jr://file-csv/"), FormAttachments.isValidFileName(file), FormAttachments.isCSVName(file) else {
            throw XFormRefusal("instance('\(id)') reads \(src); surveyd reads choices and data from CSV files the form carries (jr://file-csv/…), not XML or GeoJSON")
        }
        guard file.dropLast(4) == id else {
            throw XFormRefusal("instance('\(id)') reads \(file); surveyd reads a file through the instance named after it (instance('\(file.dropLast(4))'))")
        }
        return file
    }
}
