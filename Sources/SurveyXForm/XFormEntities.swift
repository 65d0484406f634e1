import SurveyForms

/// Reads an XForm's entity declarations (the ODK Entities specification, 2022.1 to 2025.1, as
/// pyxform 4.5.0 writes it) into the definition's `entity` or `entities`: each `meta/entity` of the primary instance
/// (`dataset`, `create`, `update`, `id`, `baseVersion`, `trunkVersion`, `branchId`, a `label`
/// child), the binds that compute its attributes and label, and `entities:saveto` on question
/// binds. The device evaluates all of it; the server keeps it to know which list a form writes,
/// which properties it creates, and which answer goes to which property. The XForm itself is
/// served to devices as published, entity block included.
enum XFormEntities {
    /// The specification versions surveyd reads (`entities:entities-version` on the model).
    static let specVersions = ["2022.1", "2023.1", "2024.1", "2025.1"]
    /// `meta/entity`'s attributes; any other is refused by name.
    private static let entityAttributes: Set<String> = ["dataset", "id", "create", "update", "baseVersion", "trunkVersion", "branchId"]

    /// The declarations, none for a form without entities: `meta/entity` of the root, then of
    /// each group or repeat (2025.1) in document order, each with its `container` (the id `idOf`
    /// gives the group's or repeat's path; none at the root). `translator` rewrites the
    /// conditions and the label into the definition's syntax; what it cannot rewrite is left to
    /// the device, said in `warnings`.
    static func declarations(data: XMLElement, model: XMLElement, binds: [XMLElement], translator: XPathTranslator,
                             idOf: (String) -> String?, warnings: inout [String]) throws(XFormRefusal) -> [[String: JSONValue]] {
        let root = "/" + data.name
        let specVersion = model.attribute("entities-version", namespace: XMLNamespace.entities)
        // A repeat's instances share a path: each path once, in document order.
        var seen: Set<String> = []
        let found = entityElements(data, path: root).filter { seen.insert($0.path).inserted }
        let saveTo = binds.compactMap { bind -> (String, String)? in
            guard let property = bind.attribute("saveto", namespace: XMLNamespace.entities),
                  let nodeset = bind.attribute("nodeset")?.trimmingWhitespace() else { return nil }
            return (nodeset, property)
        }
        guard !found.isEmpty else {
            if specVersion != nil || !saveTo.isEmpty {
                throw XFormRefusal("the form names ODK entities (entities:entities-version or entities:saveto) but its meta has no <entity>")
            }
            return []
        }
        if let specVersion, !specVersions.contains(where: { specVersion == $0 || specVersion.hasPrefix($0 + ".") }) {
            throw XFormRefusal("the form uses ODK entities version \(specVersion); surveyd reads versions \(specVersions.joined(separator: ", "))")
        }
        if found.count > 1 || found.first?.path != root + "/meta/entity", specVersion?.hasPrefix("2025.") != true {
            throw XFormRefusal("the form declares entities at \(found.map(\.path).joined(separator: ", ")); entities of groups and repeats, and several per form, are ODK entities version 2025.1 (entities:entities-version=\"2025.1.0\"), not \(specVersion ?? "none")")
        }
        var bindOf: [String: XMLElement] = [:]
        for bind in binds { if let n = bind.attribute("nodeset")?.trimmingWhitespace() { bindOf[n] = bind } }
        // Each saved question belongs to the entity of the innermost group or repeat holding it.
        let containers = found.map { String($0.path.dropLast("/meta/entity".count)) }
        var saved: [[(String, String)]] = Array(repeating: [], count: found.count)
        for (nodeset, property) in saveTo {
            let holder = containers.indices.filter { containers[$0] == root || nodeset.hasPrefix(containers[$0] + "/") }
                .max { containers[$0].count < containers[$1].count }
            guard let holder else { throw XFormRefusal("the bind of \(nodeset) saves to \(property), yet no entity is declared where it is") }
            saved[holder].append((nodeset, property))
        }
        var out: [[String: JSONValue]] = []
        for (i, e) in found.enumerated() {
            var o = try declaration(e.element, at: e.path, bindOf: bindOf, saveTo: saved[i], translator: translator, idOf: idOf, warnings: &warnings)
            if let specVersion { o["specVersion"] = .string(specVersion) }
            if containers[i] != root {
                guard let id = idOf(containers[i]) else { throw XFormRefusal("\(e.path) is in \(containers[i]), which is no group or repeat of the form") }
                o["container"] = .string(id)
            }
            out.append(o)
        }
        // The root's first (pyxform writes the root's meta last), then the others in document order.
        return out.filter { $0["container"] == nil } + out.filter { $0["container"] != nil }
    }

    /// One `meta/entity` at `at`.
    private static func declaration(_ entity: XMLElement, at: String, bindOf: [String: XMLElement], saveTo: [(String, String)],
                                    translator: XPathTranslator, idOf: (String) -> String?,
                                    warnings: inout [String]) throws(XFormRefusal) -> [String: JSONValue] {
        // The root's is named as before (`meta/entity`), a group's or repeat's by its path.
        let shown = at.split(separator: "/").count == 3 ? "meta/entity" : at
        for a in entity.attributes where a.namespace != nil || !entityAttributes.contains(a.name) {
            throw XFormRefusal("\(shown) has \(a.displayName)=\"\(a.value)\", which surveyd does not read")
        }
        for child in entity.children where child.name != "label" {
            throw XFormRefusal("\(shown) holds <\(child.displayName)>, which surveyd does not read")
        }
        guard let dataset = entity.attribute("dataset")?.trimmingWhitespace(), EntityDeclaration.isName(dataset) else {
            throw XFormRefusal("\(shown)'s dataset=\"\(entity.attribute("dataset") ?? "")\" is not an entity list's name (an XML name)")
        }

        // Relative paths read from the bind's own node (pyxform writes `../../../name` in a repeat).
        func translated(_ source: String, what: String, node: String) -> String? {
            do { return try translator.translate(source, context: .node(path: node), what: what) } catch {
                warnings.append("\(error.message); the device computes the entity's \(what), and the server takes it as sent.")
                return nil
            }
        }
        // An attribute's own value (`create="1"`), or its bind's calculation.
        func condition(_ name: String) -> JSONValue? {
            if let calculate = bindOf[at + "/@" + name]?.attribute("calculate") {
                return translated(calculate, what: name + " condition", node: at + "/@" + name).map(JSONValue.string) ?? .bool(true)
            }
            switch entity.attribute(name)?.trimmingWhitespace() {
            case "1"?, "true"?, "true()"?: return .bool(true)
            default: return nil
            }
        }
        var o: [String: JSONValue] = ["list": .string(dataset)]
        o["create"] = condition("create")
        o["update"] = condition("update")
        guard o["create"] != nil || o["update"] != nil else {
            throw XFormRefusal("\(shown) neither creates nor updates (no create or update attribute)")
        }
        if let calculate = bindOf[at + "/@id"]?.attribute("calculate") {
            o["id"] = translated(calculate, what: "id", node: at + "/@id").map(JSONValue.string)
        } else if o["create"] != nil {
            o["id"] = "uuid()"  // pyxform's setvalue on first load (and on each new repeat instance)
        }
        if let calculate = bindOf[at + "/label"]?.attribute("calculate") {
            o["label"] = translated(calculate, what: "label", node: at + "/label").map(JSONValue.string)
        }
        var properties: [String: JSONValue] = [:]
        for (nodeset, property) in saveTo {
            guard let id = idOf(nodeset) ?? nodeset.split(separator: "/").last.map(String.init), !id.isEmpty else { continue }
            guard EntityDeclaration.isName(property), !EntityDeclaration.isReservedProperty(property) else {
                throw XFormRefusal("the bind of \(nodeset) saves to \"\(property)\", which is not a property name (an XML name, not name, label or __…)")
            }
            properties[id] = .string(property)
        }
        if !properties.isEmpty { o["saveTo"] = .object(properties) }
        return o
    }

    /// Every `entity` element inside a `meta` element of the primary instance, with its path, in
    /// document order. Iterative, with an explicit stack.
    private static func entityElements(_ data: XMLElement, path: String) -> [(element: XMLElement, path: String)] {
        var out: [(XMLElement, String)] = []
        var stack = [(data, path)]
        while let (element, p) = stack.popLast() {
            for child in element.children {
                let childPath = p + "/" + child.name
                if element.name == "meta" && child.name == "entity" { out.append((child, childPath)); continue }
            }
            // Children pushed last-first, so the walk meets them in document order.
            for child in element.children.reversed() where !(element.name == "meta" && child.name == "entity") {
                stack.append((child, p + "/" + child.name))
            }
        }
        return out
    }
}
