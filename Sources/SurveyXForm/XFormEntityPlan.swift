import SurveyForms

/// A definition's entity declaration written as pyxform writes it (the ODK Entities
/// specification 2024.1; 2025.1 for one of a group or repeat, in its container's `meta`): `meta/entity` with its attributes and `label`, the binds that compute
/// them, the id made once on the form's first load for a create, and `entities:saveto` on the
/// binds of the answers saved to properties — what `XFormEntities` reads back into the same
/// declaration. An update reads its entity's versions from the list's CSV file, which the form
/// must read for the device to have it (a question whose choices come from `<list>.csv`).
struct XFormEntityPlan {
    /// `meta/entity`'s attributes, in pyxform's order.
    let attributes: [(String, String)]
    /// Each bind after the questions' binds: its nodeset first.
    let binds: [[(String, String)]]
    /// Whether the id is made on the form's first load (`uuid()`), as pyxform does for a create.
    let idOnFirstLoad: Bool
    let specVersion: String
    /// The question binds' `entities:saveto`, by question id.
    let saveTo: [String: String]

    /// The root's `meta/entity`.
    static let rootAt = "/" + XFormWriter.root + "/meta/entity"
    /// Where this one is: the root's, or `<container>/meta/entity`.
    let at: String
    /// The version a declaration without one is written in: pyxform 4.5.0's.
    static let defaultSpecVersion = "2024.1.0"

    /// `container`: the group's or repeat's path, nil at the root. `pathOf` gives a question's
    /// path by id: an update inside a repeat names its entity relative to the bind's node
    /// (`current()/../../../member`, as pyxform writes it), since an absolute path inside the
    /// predicate would read the repeat's first instance.
    init(_ entity: EntityDeclaration, container: String? = nil, pathOf: (String) -> String? = { _ in nil }, printer: XPathPrinter,
         readsFiles: Set<String>) throws(XFormWriter.Unwritable) {
        let at = container.map { $0 + "/meta/entity" } ?? Self.rootAt
        self.at = at
        var attributes: [(String, String)] = [("dataset", entity.list)]
        var binds: [[(String, String)]] = []
        func calculated(_ node: String, _ source: String) throws(XFormWriter.Unwritable) {
            binds.append([("nodeset", at + node), ("calculate", try printer.xpath(source)), ("readonly", "true()"), ("type", "string")])
        }
        for (name, condition) in [("create", entity.create), ("update", entity.update)] {
            switch condition {
            case .never: continue
            case .always: attributes.append((name, "1"))
            case .when(let source):
                attributes.append((name, "1"))
                try calculated("/@" + name, source)
            }
        }
        let updates = entity.update != .never
        if updates {
            guard let id = entity.id else {
                throw XFormWriter.Unwritable("the entity's update names no entity: give the declaration an id expression")
            }
            guard readsFiles.contains(entity.list + ".csv") else {
                throw XFormWriter.Unwritable("the form updates entities of \(entity.list) but no question reads \(entity.list).csv, where the device finds their versions")
            }
            // The version the device holds of the entity it updates, as the list's CSV says.
            var named = try printer.xpath(id)
            if let container {
                guard id.hasPrefix("${"), id.hasSuffix("}"), let path = pathOf(String(id.dropFirst(2).dropLast())),
                      path.hasPrefix(container + "/") else {
                    throw XFormWriter.Unwritable("the update of \(entity.list) in \(container) names its entity by \(id); surveyd writes an update in a group or repeat whose id is one of its questions (${question})")
                }
                named = "current()/../../../" + path.dropFirst(container.count + 1)
            }
            let item = "instance('\(entity.list)')/root/item[name= \(named) ]"
            for (attribute, column) in [("baseVersion", "__version"), ("trunkVersion", "__trunkVersion"), ("branchId", "__branchId")] {
                attributes.append((attribute, ""))
                binds.append([("nodeset", at + "/@" + attribute), ("calculate", item + "/" + column), ("readonly", "true()"), ("type", "string")])
            }
        }
        attributes.append(("id", ""))
        idOnFirstLoad = entity.create != .never && (entity.id == nil || entity.id == "uuid()")
        if idOnFirstLoad {
            binds.append([("nodeset", at + "/@id"), ("readonly", "true()"), ("type", "string")])
        } else if let id = entity.id {
            try calculated("/@id", id)
        }
        if let label = entity.label { try calculated("/label", label) }
        self.attributes = attributes
        self.binds = binds
        specVersion = entity.specVersion ?? (container == nil ? Self.defaultSpecVersion : "2025.1.0")
        var saveTo: [String: String] = [:]
        for s in entity.saveTo { saveTo[s.questionId] = s.property }
        self.saveTo = saveTo
    }
}
