import SurveyDomain
import SurveyXForm

/// The service's two descriptions of itself: the service document (JSON: the entity sets) and
/// `$metadata` (a CSDL EDMX document, OData 4.0, written through libxml2's `xmlTextWriter` like
/// every XML document surveyd writes: escaping is libxml2's, never hand-made).
public enum ODataDocuments {
    static let edmx = "http://docs.oasis-open.org/odata/ns/edmx"
    static let edm = "http://docs.oasis-open.org/odata/ns/edm"

    /// `{"@odata.context": "<root>/$metadata", "value": [{"name", "kind": "EntitySet", "url"}…]}`.
    public static func serviceDocument(_ model: ODataModel, serviceRoot: String) -> [UInt8] {
        CanonicalJSON.encode([
            "@odata.context": .string(serviceRoot + "/$metadata"),
            "value": .array(model.tables.map { ["name": .string($0.setName), "kind": "EntitySet", "url": .string($0.setName)] }),
        ])
    }

    /// The CSDL document: the `__system` complex type, a complex type per group, an entity type
    /// per table (key `__id`; a repeat's also names its parent row), a navigation property per
    /// repeat, and the container with an entity set per table.
    public static func metadata(_ model: ODataModel) throws -> [UInt8] {
        do {
            let w = try XMLTextWriter()
            try w.startDocument()
            try w.startElement("edmx:Edmx")
            try w.attribute("xmlns:edmx", edmx)
            try w.attribute("Version", "4.0")
            try w.startElement("edmx:DataServices")
            try w.startElement("Schema")
            try w.attribute("xmlns", edm)
            try w.attribute("Namespace", ODataModel.namespace)

            try w.startElement("ComplexType")
            try w.attribute("Name", ODataModel.systemType)
            for (name, type) in ODataModel.systemProperties { try property(w, name, type) }
            try w.endElement()

            for (name, children) in model.complexTypes {
                try w.startElement("ComplexType")
                try w.attribute("Name", name)
                for n in children { try node(w, n) }
                try w.endElement()
            }

            for t in model.tables {
                try w.startElement("EntityType")
                try w.attribute("Name", t.typeName)
                try w.startElement("Key")
                try w.element("PropertyRef", [("Name", "__id")])
                try w.endElement()
                try w.element("Property", [("Name", "__id"), ("Type", ODataModel.EdmType.string.rawValue), ("Nullable", "false")])
                if let key = t.parentKey {
                    try w.element("Property", [("Name", key), ("Type", ODataModel.EdmType.string.rawValue), ("Nullable", "false")])
                } else {
                    try w.element("Property", [("Name", "__system"), ("Type", qualified(ODataModel.systemType)), ("Nullable", "false")])
                }
                for n in t.nodes { try node(w, n) }
                for c in t.children {
                    let child = model.tables[c]
                    try w.element("NavigationProperty", [("Name", child.repeatId ?? ""), ("Type", "Collection(\(qualified(child.typeName)))")])
                }
                try w.endElement()
            }

            try w.startElement("EntityContainer")
            try w.attribute("Name", ODataModel.containerName)
            for t in model.tables {
                try w.startElement("EntitySet")
                try w.attribute("Name", t.setName)
                try w.attribute("EntityType", qualified(t.typeName))
                for c in t.children {
                    let child = model.tables[c]
                    try w.element("NavigationPropertyBinding", [("Path", child.repeatId ?? ""), ("Target", child.setName)])
                }
                try w.endElement()
            }
            try w.endElement()  // EntityContainer
            try w.endElement()  // Schema
            try w.endElement()  // edmx:DataServices
            try w.endElement()  // edmx:Edmx
            return try w.finish()
        } catch {
            throw ApiError(.internalError, "The OData metadata could not be written: \(error.message).")
        }
    }

    static func qualified(_ name: String) -> String { ODataModel.namespace + "." + name }

    private static func node(_ w: XMLTextWriter, _ n: ODataModel.Node) throws(XMLTextWriter.Failure) {
        switch n {
        case .value(let name, let type, _): try property(w, name, type)
        case .group(let name, let typeName, _): try w.element("Property", [("Name", name), ("Type", qualified(typeName))])
        }
    }

    private static func property(_ w: XMLTextWriter, _ name: String, _ type: ODataModel.EdmType) throws(XMLTextWriter.Failure) {
        var attributes = [("Name", name), ("Type", type.rawValue)]
        switch type {
        // CSDL's default scale of a decimal is 0: without `variable` a client would round 2.5.
        case .decimal: attributes.append(("Scale", "variable"))
        case .point: attributes.append(("SRID", "4326"))
        default: break
        }
        try w.element("Property", attributes)
    }
}
