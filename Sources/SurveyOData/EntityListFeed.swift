import SurveyDomain
import SurveyStorage
import SurveyXForm

/// An entity list's OData service (`/v1/orgs/{orgId}/entity-lists/{name}.svc`): one entity set,
/// `Entities`, a row per entity that is not deleted — `__id` (the entity's id), `label`,
/// `__system` (`createdAt`, `creatorId`, `updatedAt`, `version`, `conflict`) and each property of
/// the list as text — in id order, a page at a time with `@odata.nextLink`. Power BI and Excel
/// read it as they read a survey's `Submissions`.
public struct EntityListFeed: Sendable {
    public static let setName = "Entities"
    static let typeName = "Entity"
    static let systemType = "EntitySystem"
    static let namespace = "surveyd.entities"
    static let containerName = "EntityList"
    static let ownSystemProperties: [(String, ODataModel.EdmType)] = [
        ("createdAt", .dateTimeOffset), ("creatorId", .string), ("updatedAt", .dateTimeOffset), ("version", .int64), ("conflict", .string),
    ]

    public let list: EntityListRecord
    /// surveyd's names, or ODK Central's (`creatorId` the actorId, `updates` added).
    public let naming: ODataNaming
    /// `__system`'s properties and their types, in order.
    let systemProperties: [(String, ODataModel.EdmType)]
    /// Each property's name in the feed: the list's own where OData can name it (a letter or `_`,
    /// then letters, digits, `_`), else with `_` for each other character (`village-name` →
    /// `village_name`); a name taken twice, or one the row's own members use, gets a number after it.
    public let propertyNames: [(property: String, odata: String)]

    public init(list: EntityListRecord, naming: ODataNaming = .surveyd) {
        self.list = list
        self.naming = naming
        systemProperties = Self.ownSystemProperties + (naming.entityUpdates ? [("updates", .int64)] : [])
        var taken: Set<String> = ["__id", "label", "__system"]
        propertyNames = list.properties.map { property in
            var base = String(String.UnicodeScalarView(property.unicodeScalars.map { c in
                c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_") ? c : "_"
            }))
            if !(base.unicodeScalars.first.map { $0.isASCII && ($0.properties.isAlphabetic || $0 == "_") } ?? false) { base = "_" + base }
            var name = base, n = 2
            while !taken.insert(name).inserted {
                name = "\(base)_\(n)"
                n += 1
            }
            return (property, name)
        }
    }

    /// `{"@odata.context", "value": [Entities]}`.
    public static func serviceDocument(serviceRoot: String) -> [UInt8] {
        CanonicalJSON.encode([
            "@odata.context": .string(serviceRoot + "/$metadata"),
            "value": [["name": .string(setName), "kind": "EntitySet", "url": .string(setName)]],
        ])
    }

    /// The CSDL document: the `__system` complex type, the entity type (key `__id`) and its set.
    public func metadata() throws -> [UInt8] {
        do {
            let w = try XMLTextWriter()
            try w.startDocument()
            try w.startElement("edmx:Edmx")
            try w.attribute("xmlns:edmx", ODataDocuments.edmx)
            try w.attribute("Version", "4.0")
            try w.startElement("edmx:DataServices")
            try w.startElement("Schema")
            try w.attribute("xmlns", ODataDocuments.edm)
            try w.attribute("Namespace", Self.namespace)
            try w.startElement("ComplexType")
            try w.attribute("Name", Self.systemType)
            for (name, type) in systemProperties { try w.element("Property", [("Name", name), ("Type", type.rawValue)]) }
            try w.endElement()
            try w.startElement("EntityType")
            try w.attribute("Name", Self.typeName)
            try w.startElement("Key")
            try w.element("PropertyRef", [("Name", "__id")])
            try w.endElement()
            try w.element("Property", [("Name", "__id"), ("Type", ODataModel.EdmType.string.rawValue), ("Nullable", "false")])
            try w.element("Property", [("Name", "label"), ("Type", ODataModel.EdmType.string.rawValue), ("Nullable", "false")])
            try w.element("Property", [("Name", "__system"), ("Type", Self.namespace + "." + Self.systemType), ("Nullable", "false")])
            for (_, name) in propertyNames { try w.element("Property", [("Name", name), ("Type", ODataModel.EdmType.string.rawValue)]) }
            try w.endElement()
            try w.startElement("EntityContainer")
            try w.attribute("Name", Self.containerName)
            try w.element("EntitySet", [("Name", Self.setName), ("EntityType", Self.namespace + "." + Self.typeName)])
            try w.endElement()
            try w.endElement()
            try w.endElement()
            try w.endElement()
            return try w.finish()
        } catch {
            throw ApiError(.internalError, "The OData metadata could not be written: \(error.message).")
        }
    }

    /// A property path's type in `Entities` (what `$filter` may name).
    public func resolve(_ path: [String]) -> ODataModel.Resolved? {
        let properties = Set(propertyNames.map(\.odata))
        switch path.count {
        case 1 where path[0] == "__id" || path[0] == "label" || properties.contains(path[0]): return .primitive(.string)
        case 1 where path[0] == "__system": return .complex
        case 2 where path[0] == "__system": return systemProperties.first { $0.0 == path[1] }.map { .primitive($0.1) }
        default: return nil
        }
    }

    /// The options a request may carry: `$top`, `$skip`, `$count`, `$filter` (as a survey's
    /// feed reads it, over `__id`, `label`, `__system/…` and the properties), `$select` (of
    /// those), `$skiptoken` (the last id of the page before); any other `$` option is 501,
    /// never ignored.
    public struct Query: Sendable {
        public let top: Int?
        public let skip: Int
        public let count: Bool
        public let filter: ODataFilter?
        /// nil: every property.
        public let select: [[String]]?
        public let after: String?

        public init(_ options: [String: String], feed: EntityListFeed) throws(ODataError) {
            var top: Int?, skip = 0, count = false, after: String?, filter: ODataFilter?, select: [[String]]?
            for (key, value) in options.sorted(by: { $0.key < $1.key }) where key.hasPrefix("$") {
                switch key {
                case "$top":
                    guard let n = Int(value), n >= 0 else { throw ODataError.bad("$top must be a whole number of 0 or more.") }
                    top = n
                case "$skip":
                    guard let n = Int(value), n >= 0 else { throw ODataError.bad("$skip must be a whole number of 0 or more.") }
                    skip = n
                case "$filter":
                    filter = try ODataFilter(value) { feed.resolve($0) }
                case "$select":
                    select = try ODataQuery.select(value) { feed.resolve($0) }
                case "$count":
                    guard value == "true" || value == "false" else { throw ODataError.bad("$count must be true or false.") }
                    count = value == "true"
                case "$skiptoken":
                    guard !value.isEmpty, value.utf8.count <= 128 else { throw ODataError.bad("This $skiptoken is not one the feed wrote.") }
                    after = value
                case "$format" where value == "json" || value.hasPrefix("application/json"):
                    continue
                default:
                    throw ODataError.unsupported("\(key) is not supported on an entity list's feed: it offers $filter, $select, $top, $skip, $count and server-driven paging (@odata.nextLink).")
                }
            }
            self.top = top; self.skip = skip; self.count = count; self.filter = filter; self.select = select; self.after = after
        }
    }

    /// An entity's row as the feed writes it (and `$filter` reads it).
    public func row(_ e: EntityRecord) -> JSONValue {
        var system: [String: JSONValue] = [
            "createdAt": .string(Timestamp.format(e.createdAt)), "creatorId": .string(naming.user(e.createdBy)),
            "updatedAt": .string(Timestamp.format(e.updatedAt)), "version": .number(Double(e.version)),
            "conflict": e.conflict.map(JSONValue.string) ?? .null,
        ]
        if naming.entityUpdates { system["updates"] = .number(Double(e.version - 1)) }
        var row: [String: JSONValue] = ["__id": .string(e.entityId), "label": .string(e.label), "__system": .object(system)]
        for (property, name) in propertyNames { row[name] = e.properties[property].map(JSONValue.string) ?? .null }
        return .object(row)
    }

    /// `row` cut to `$select`'s paths, with its key whatever is selected (a client relates rows by it).
    public func select(_ row: JSONValue, _ paths: [[String]]?) -> JSONValue {
        guard let paths, case .object(let o) = row else { return row }
        var out: [String: JSONValue] = [:]
        if let key = o["__id"] { out["__id"] = key }
        for p in paths { ODataFeed.copy(p[...], from: o, into: &out) }
        return .object(out)
    }
}
