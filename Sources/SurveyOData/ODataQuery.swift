import Foundation
import SurveyDomain

/// A request's query options, read for one table: what the server evaluates, and a 501 for any
/// system query option it does not (never silently ignored). Options that do not start with `$`
/// are custom options, which OData lets a server ignore.
public struct ODataQuery: Sendable {
    public enum Expand: Sendable, Equatable {
        case none
        /// `$expand=*`: every repeat, at every level.
        case all
        /// `$expand=a,b`: these repeats (tables), one level.
        case tables(Set<Int>)
    }

    public struct Order: Sendable {
        let path: [String]
        let type: ODataModel.EdmType
        let descending: Bool
    }

    public var top: Int?
    public var skip = 0
    public var count = false
    public var filter: ODataFilter?
    public var orderBy: [Order] = []
    /// nil: every property.
    public var select: [[String]]?
    public var expand: Expand = .none
    public var wkt = false
    public var skipToken: SkipToken?

    static let understood: Set<String> = ["$top", "$skip", "$count", "$filter", "$orderby", "$select", "$expand", "$skiptoken", "$format", "$wkt"]
    static let maxOrderBy = 8

    public init(_ query: [String: String], model: ODataModel, table: Int) throws(ODataError) {
        for key in query.keys.sorted() where key.hasPrefix("$") && !Self.understood.contains(key) {
            throw .unsupported("The query option \(key) is not supported (supported: \(Self.understood.sorted().joined(separator: ", "))).")
        }
        if let f = query["$format"] {
            let type = f.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard type == "json" || type == "application/json" else { throw .unsupported("$format=\(f) is not supported: this service writes JSON only.") }
        }
        top = try Self.number(query, "$top")
        skip = try Self.number(query, "$skip") ?? 0
        count = try Self.flag(query, "$count")
        wkt = try Self.flag(query, "$wkt")
        if let f = query["$filter"] { filter = try ODataFilter(f, model: model, table: table) }
        if let o = query["$orderby"] { orderBy = try Self.orderBy(o, model: model, table: table) }
        if let s = query["$select"] { select = try Self.select(s, model: model, table: table) }
        if let e = query["$expand"] { expand = try Self.expand(e, model: model, table: table) }
        if let t = query["$skiptoken"] {
            guard let token = SkipToken(t), token.keys.count == orderBy.count else {
                throw .bad("$skiptoken is not one this service gave for this query (follow @odata.nextLink as it is).")
            }
            skipToken = token
        }
    }

    static func number(_ query: [String: String], _ key: String) throws(ODataError) -> Int? {
        guard let v = query[key] else { return nil }
        guard !v.isEmpty, v.utf8.count <= 15, v.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let n = Int(v) else {
            throw .bad("\(key) must be a whole number, 0 or more.")
        }
        return n
    }

    static func flag(_ query: [String: String], _ key: String) throws(ODataError) -> Bool {
        switch query[key] {
        case nil, "false": return false
        case "true": return true
        default: throw .bad("\(key) must be true or false.")
        }
    }

    static func names(_ text: String) -> [String] {
        text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
    }

    static func path(_ item: String, _ option: String) throws(ODataError) -> [String] {
        let path = item.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !path.isEmpty, path.allSatisfy({ !$0.isEmpty }) else { throw .bad("\(option): \"\(item)\" is not a property path.") }
        if item.contains("(") || item.contains("$") || item.contains("'") {
            throw .unsupported("\(option): \"\(item)\" is not supported (only property paths are).")
        }
        return path
    }

    static func orderBy(_ text: String, model: ODataModel, table: Int) throws(ODataError) -> [Order] {
        var out: [Order] = []
        for item in names(text) {
            let words = item.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard let first = words.first, words.count <= 2 else { throw .bad("$orderby: \"\(item)\" is not a property and asc or desc.") }
            let descending: Bool
            switch words.count == 2 ? words[1].lowercased() : "asc" {
            case "asc": descending = false
            case "desc": descending = true
            default: throw .bad("$orderby: \"\(item)\" must end in asc or desc, if anything.")
            }
            let p = try path(first, "$orderby")
            switch model.resolve(p, in: table) {
            case .primitive(.point)?: throw .unsupported("$orderby: ordering by a geopoint is not supported.")
            case .primitive(let type)?: out.append(Order(path: p, type: type, descending: descending))
            case .complex?: throw .bad("$orderby: \(first) is a group; name one of its properties.")
            case .navigation?: throw .unsupported("$orderby: ordering by a repeat is not supported.")
            case nil: throw .bad("$orderby: there is no property \(first).")
            }
        }
        guard out.count <= maxOrderBy else { throw .unsupported("$orderby takes at most \(maxOrderBy) properties here.") }
        return out
    }

    static func select(_ text: String, model: ODataModel, table: Int) throws(ODataError) -> [[String]]? {
        try select(text) { model.resolve($0, in: table) }
    }

    /// `$select`'s property paths, each one `resolve` types (nil: `*`, every property).
    static func select(_ text: String, resolve: ([String]) -> ODataModel.Resolved?) throws(ODataError) -> [[String]]? {
        var out: [[String]] = []
        for item in names(text) {
            if item == "*" { return nil }
            let p = try path(item, "$select")
            guard let r = resolve(p) else { throw .bad("$select: there is no property \(item).") }
            if case .navigation = r { throw .bad("$select: \(item) is a repeat; use $expand for it.") }
            out.append(p)
        }
        return out
    }

    static func expand(_ text: String, model: ODataModel, table: Int) throws(ODataError) -> Expand {
        let items = names(text)
        if items == ["*"] { return .all }
        var tables: Set<Int> = []
        for item in items {
            if item.contains("(") || item.contains("$") || item.contains("/") || item == "*" {
                throw .unsupported("$expand: \"\(item)\" is not supported (only * or the names of repeats, without options).")
            }
            guard case .navigation(let t)? = model.resolve([item], in: table) else { throw .bad("$expand: there is no repeat \(item) here.") }
            tables.insert(t)
        }
        return .tables(tables)
    }
}

/// Where a page ended: the last row's order keys, response and place among that response's rows
/// of the table, and how many rows the pages before have delivered (for `$top`). A position in
/// a total order (the keys, then response id, then place), so a page never repeats or skips a
/// row that existed when the read began, whatever arrives meanwhile.
public struct SkipToken: Sendable, Equatable {
    let keys: [ODataFilter.Value]
    let responseId: String
    let ordinal: Int
    let delivered: Int

    init(keys: [ODataFilter.Value], responseId: String, ordinal: Int, delivered: Int) {
        self.keys = keys; self.responseId = responseId; self.ordinal = ordinal; self.delivered = delivered
    }

    var encoded: String {
        let k: [JSONValue] = keys.map {
            switch $0 {
            case .null: .null
            case .string(let s): ["s", .string(s)]
            case .number(let d): ["n", .number(d)]
            case .bool(let b): ["b", .bool(b)]
            case .date(let s): ["d", .string(s)]
            case .time(let t): ["t", .number(Double(t))]
            }
        }
        let json: JSONValue = ["k": .array(k), "r": .string(responseId), "o": .number(Double(ordinal)), "n": .number(Double(delivered))]
        return "o1." + Base64.encode(CanonicalJSON.encode(json), url: true)
    }

    init?(_ text: String) {
        guard text.hasPrefix("o1."), text.utf8.count < 8192, let bytes = Base64.decode(String(text.dropFirst(3))),
              let json = try? JSONParser.parse(bytes), let r = json["r"]?.stringValue, let o = json["o"]?.intValue, o >= 0,
              let n = json["n"]?.intValue, n >= 0, let k = json["k"]?.arrayValue else { return nil }
        var keys: [ODataFilter.Value] = []
        for v in k {
            if v.isNull { keys.append(.null); continue }
            guard let a = v.arrayValue, a.count == 2, let kind = a[0].stringValue else { return nil }
            switch (kind, a[1]) {
            case ("s", .string(let s)): keys.append(.string(s))
            case ("n", .number(let d)): keys.append(.number(d))
            case ("b", .bool(let b)): keys.append(.bool(b))
            case ("d", .string(let s)): keys.append(.date(s))
            // A client sends the token: a time beyond Int64 (1e300) must be refused, not trap.
            case ("t", .number(let d)):
                guard let t = Int64(exactly: d) else { return nil }
                keys.append(.time(t))
            default: return nil
            }
        }
        self.init(keys: keys, responseId: r, ordinal: o, delivered: n)
    }
}
