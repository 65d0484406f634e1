import SurveyForms

/// Reads an XForm's entity declaration (the ODK Entities specification, 2022.1 to 2025.1, as
/// pyxform 4.5.0 writes it) into the definition's `entity`: `meta/entity` of the primary instance
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

    /// The declaration, nil for a form without entities. `translator` rewrites the conditions and
    /// the label into the definition's syntax; what it cannot rewrite is left to the device, said
    /// in `warnings`.
    static func declaration(data: XMLElement, model: XMLElement, binds: [XMLElement], translator: XPathTranslator,
                            warnings: inout [String]) throws(XFormRefusal) -> JSONValue? {
        let root = "/" + data.name
        let specVersion = model.attribute("entities-version", namespace: XMLNamespace.entities)
        let found = entityElements(data, path: root)
        let saveTo = binds.compactMap { bind -> (String, String)? in
            guard let property = bind.attribute("saveto", namespace: XMLNamespace.entities),
                  let nodeset = bind.attribute("nodeset")?.trimmingWhitespace() else { return nil }
            return (nodeset, property)
        }
        guard let first = found.first else {
            if specVersion != nil || !saveTo.isEmpty {
                throw XFormRefusal("the form names ODK entities (entities:entities-version or entities:saveto) but its meta has no <entity>")
            }
            return nil
        }
        guard found.count == 1, first.path == root + "/meta/entity" else {
            let paths = found.map(\.path).joined(separator: ", ")
            throw XFormRefusal("the form declares entities at \(paths); surveyd reads one entity per form, in the top-level meta (not inside a group or repeat)")
        }
        if let specVersion, !specVersions.contains(where: { specVersion == $0 || specVersion.hasPrefix($0 + ".") }) {
            throw XFormRefusal("the form uses ODK entities version \(specVersion); surveyd reads versions \(specVersions.joined(separator: ", "))")
        }
        let entity = first.element
        for a in entity.attributes where a.namespace != nil || !entityAttributes.contains(a.name) {
            throw XFormRefusal("meta/entity has \(a.displayName)=\"\(a.value)\", which surveyd does not read")
        }
        for child in entity.children where child.name != "label" {
            throw XFormRefusal("meta/entity holds <\(child.displayName)>, which surveyd does not read")
        }
        guard let dataset = entity.attribute("dataset")?.trimmingWhitespace(), EntityDeclaration.isName(dataset) else {
            throw XFormRefusal("meta/entity's dataset=\"\(entity.attribute("dataset") ?? "")\" is not an entity list's name (an XML name)")
        }
        var bindOf: [String: XMLElement] = [:]
        for bind in binds { if let n = bind.attribute("nodeset")?.trimmingWhitespace() { bindOf[n] = bind } }
        let at = root + "/meta/entity"

        func translated(_ source: String, what: String) -> String? {
            do { return try translator.translate(source, context: .node(path: at), what: what) } catch {
                warnings.append("\(error.message); the device computes the entity's \(what), and the server takes it as sent.")
                return nil
            }
        }
        // An attribute's own value (`create="1"`), or its bind's calculation.
        func condition(_ name: String) -> JSONValue? {
            if let calculate = bindOf[at + "/@" + name]?.attribute("calculate") {
                return translated(calculate, what: name + " condition").map(JSONValue.string) ?? .bool(true)
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
            throw XFormRefusal("meta/entity neither creates nor updates (no create or update attribute)")
        }
        if let calculate = bindOf[at + "/@id"]?.attribute("calculate") {
            o["id"] = translated(calculate, what: "id").map(JSONValue.string)
        } else if o["create"] != nil {
            o["id"] = "uuid()"  // pyxform's setvalue on first load
        }
        if let calculate = bindOf[at + "/label"]?.attribute("calculate") {
            o["label"] = translated(calculate, what: "label").map(JSONValue.string)
        }
        var properties: [String: JSONValue] = [:]
        for (nodeset, property) in saveTo {
            guard let id = nodeset.split(separator: "/").last.map(String.init), !id.isEmpty else { continue }
            guard EntityDeclaration.isName(property), !EntityDeclaration.isReservedProperty(property) else {
                throw XFormRefusal("the bind of \(nodeset) saves to \"\(property)\", which is not a property name (an XML name, not name, label or __…)")
            }
            properties[id] = .string(property)
        }
        if !properties.isEmpty { o["saveTo"] = .object(properties) }
        if let specVersion { o["specVersion"] = .string(specVersion) }
        return .object(o)
    }

    /// Every `entity` element inside a `meta` element of the primary instance, with its path.
    /// Iterative, with an explicit stack.
    private static func entityElements(_ data: XMLElement, path: String) -> [(element: XMLElement, path: String)] {
        var out: [(XMLElement, String)] = []
        var stack = [(data, path)]
        while let (element, p) = stack.popLast() {
            for child in element.children {
                let childPath = p + "/" + child.name
                if element.name == "meta" && child.name == "entity" { out.append((child, childPath)); continue }
                stack.append((child, childPath))
            }
        }
        return out
    }
}
