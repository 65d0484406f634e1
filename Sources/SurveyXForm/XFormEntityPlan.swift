import SurveyForms

/// A definition's entity declaration written as pyxform writes it (the ODK Entities
/// specification 2024.1): `meta/entity` with its attributes and `label`, the binds that compute
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

    static let at = "/" + XFormWriter.root + "/meta/entity"
    /// The version a declaration without one is written in: pyxform 4.5.0's.
    static let defaultSpecVersion = "2024.1.0"

    init(_ entity: EntityDeclaration, printer: XPathPrinter, readsFiles: Set<String>) throws(XFormWriter.Unwritable) {
        var attributes: [(String, String)] = [("dataset", entity.list)]
        var binds: [[(String, String)]] = []
        func calculated(_ node: String, _ source: String) throws(XFormWriter.Unwritable) {
            binds.append([("nodeset", Self.at + node), ("calculate", try printer.xpath(source)), ("readonly", "true()"), ("type", "string")])
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
            let item = "instance('\(entity.list)')/root/item[name= \(try printer.xpath(id)) ]"
            for (attribute, column) in [("baseVersion", "__version"), ("trunkVersion", "__trunkVersion"), ("branchId", "__branchId")] {
                attributes.append((attribute, ""))
                binds.append([("nodeset", Self.at + "/@" + attribute), ("calculate", item + "/" + column), ("readonly", "true()"), ("type", "string")])
            }
        }
        attributes.append(("id", ""))
        idOnFirstLoad = entity.create != .never && (entity.id == nil || entity.id == "uuid()")
        if idOnFirstLoad {
            binds.append([("nodeset", Self.at + "/@id"), ("readonly", "true()"), ("type", "string")])
        } else if let id = entity.id {
            try calculated("/@id", id)
        }
        if let label = entity.label { try calculated("/label", label) }
        self.attributes = attributes
        self.binds = binds
        specVersion = entity.specVersion ?? Self.defaultSpecVersion
        var saveTo: [String: String] = [:]
        for s in entity.saveTo { saveTo[s.questionId] = s.property }
        self.saveTo = saveTo
    }
}
