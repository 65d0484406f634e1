import SurveyDomain
import SurveyExports
import SurveyOperations
import SurveyStorage

/// One page of one table of a survey's feed, read from one snapshot (`FeedSource`): rows built
/// from the export's cells (`ExportColumns.cells(of:)`), filtered, ordered, skipped, cut to the
/// page, with `@odata.count` and `@odata.nextLink`. A plain read (no `$filter`, `$orderby`,
/// `$select` or `$expand`) writes the same rows from the stored bytes instead (`plainPage`).
///
/// Order: without `$orderby`, the responses' order of arrival (response ids are time-ordered),
/// a repeat's rows in their order within it — read in that order with a keyset, page after page.
/// With `$orderby`, every matching row is looked at and only the rows up to the end of the page
/// are kept (at most `maxOrderedWindow`), in the total order (the keys, then response, then
/// place). Either way the `$skiptoken` is a position in that total order, so rows that arrive
/// between pages never make a page repeat or skip a row that was there when reading began.
public struct ODataFeed {
    public static let defaultPageSize = 1000
    public static let maxPageSize = 10_000
    /// `$skip` plus a page, with `$orderby`: the rows held at once.
    public static let maxOrderedWindow = 50_000

    public let model: ODataModel
    public let source: FeedSource
    public let table: Int
    public let query: ODataQuery
    /// surveyd's names in `__system`, or ODK Central's (its door's feed).
    public let naming: ODataNaming

    public init(model: ODataModel, source: FeedSource, table: Int, query: ODataQuery, naming: ODataNaming = .surveyd) {
        self.model = model; self.source = source; self.table = table; self.query = query; self.naming = naming
    }

    public struct Page: Sendable {
        /// The rows' canonical JSON, separated by commas (the inside of `value`).
        public var rows: [UInt8] = []
        public var rowCount = 0
        public var count: Int?
        /// The `$skiptoken` of the next page, nil after the last.
        public var next: String?

        public init(rows: [UInt8] = [], rowCount: Int = 0, count: Int? = nil, next: String? = nil) {
            self.rows = rows; self.rowCount = rowCount; self.count = count; self.next = next
        }
    }

    /// The JSON body: `@odata.context`, `@odata.count`, `@odata.nextLink`, `value` — canonical
    /// JSON, so the link comes before the rows.
    public static func body(_ page: Page, setName: String, serviceRoot: String, nextLink: String?) -> [UInt8] {
        var out = head(count: page.count, setName: setName, serviceRoot: serviceRoot, nextLink: nextLink, reserving: page.rows.count)
        out += page.rows
        out += tail
        return out
    }

    /// A body up to its first row (`body` without its rows and `tail`): a response written a
    /// page at a time starts with it.
    public static func head(count: Int?, setName: String, serviceRoot: String, nextLink: String?, reserving: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(reserving + 1024)
        out += #"{"@odata.context":"#.utf8
        CanonicalJSON.encode(.string(serviceRoot + "/$metadata#" + setName), into: &out)
        if let count {
            out += #","@odata.count":"#.utf8
            CanonicalJSON.encode(.number(Double(count)), into: &out)
        }
        if let nextLink {
            out += #","@odata.nextLink":"#.utf8
            CanonicalJSON.encode(.string(nextLink), into: &out)
        }
        out += #","value":["#.utf8
        return out
    }

    /// What closes a body after its last row.
    public static let tail = Array("]}".utf8)

    /// The page, read and written at once (`plainPage` and `write`, or the general path).
    public func page(size: Int) throws -> Page {
        if let plain = try plainPage(size: size) { return try plain.write() }
        let (delivered, skip, limit) = window(size: size)
        var page = Page()
        if query.count { page.count = try count() }
        guard limit > 0 else { return page }
        let kept: [(row: JSONValue, position: SkipToken)]
        let more: Bool
        if query.orderBy.isEmpty {
            (kept, more) = try arrivalOrder(after: query.skipToken, skip: skip, limit: limit)
        } else {
            (kept, more) = try ordered(after: query.skipToken, skip: skip, limit: limit)
        }
        for (i, k) in kept.enumerated() {
            if i > 0 { page.rows.append(UInt8(ascii: ",")) }
            CanonicalJSON.encode(select(expanded(k.row, position: k.position)), into: &page.rows)
        }
        page.rowCount = kept.count
        finish(&page, last: kept.last?.position, more: more, delivered: delivered)
        return page
    }

    /// The rows already delivered (by earlier pages), the rows to skip, and how many this page may hold.
    func window(size: Int) -> (delivered: Int, skip: Int, limit: Int) {
        let delivered = query.skipToken?.delivered ?? 0
        return (delivered, query.skipToken == nil ? query.skip : 0, max(0, min(size, query.top.map { $0 - delivered } ?? Int.max)))
    }

    /// The next page's `$skiptoken`, after the row at `last`.
    func finish(_ page: inout Page, last: SkipToken?, more: Bool, delivered: Int) {
        // `$top` reached: the rows past it are not this query's.
        let topReached = query.top.map { delivered + page.rowCount >= $0 } ?? false
        if more, !topReached, let last {
            page.next = SkipToken(keys: last.keys, responseId: last.responseId, ordinal: last.ordinal, delivered: delivered + page.rowCount).encoded
        }
    }

    // MARK: - Reading rows

    /// Every row of the table for one response, in order, unexpanded (each with its answers object
    /// for a later `$expand`).
    func rows(_ stored: ExportedResponse) throws -> [(row: JSONValue, answers: [String: JSONValue], key: String)] {
        let r = try exportRow(stored)
        if table == 0 { return [(submission(r), r.answers, r.responseId)] }
        // The instances of each enclosing repeat, outermost first, down to this table's.
        var chain: [Int] = []
        var t = table
        while let p = model.tables[t].parent { chain.insert(t, at: 0); t = p }
        var level: [(key: String, id: String, answers: [String: JSONValue])] = [(r.responseId, r.clientSubmissionId, r.answers)]
        for c in chain.dropLast() { level = level.flatMap { instances(c, under: $0) } }
        return level.flatMap { parent in instances(table, under: parent).map { i in (repeatRow(table, i.key, parentId: parent.id, i.answers), i.answers, i.key) } }
    }

    func instances(_ table: Int, under parent: (key: String, id: String, answers: [String: JSONValue])) -> [(key: String, id: String, answers: [String: JSONValue])] {
        guard let id = model.tables[table].repeatId, let list = parent.answers[id]?.arrayValue else { return [] }
        return list.enumerated().map { n, instance in
            let key = RepeatTable.key(parent: parent.key, repeatId: id, number: n + 1)
            return (key, key, instance.objectValue ?? [:])
        }
    }

    func exportRow(_ s: ExportedResponse) throws -> ExportRow {
        let answers: [String: JSONValue]
        do { answers = try JSONParser.parse(Array(s.answers.utf8)).objectValue ?? [:] } catch {
            throw ApiError(.internalError, "A stored response's answers could not be read.")
        }
        var row = ExportRow(responseId: s.responseId, clientSubmissionId: s.clientSubmissionId, surveyVersionId: s.surveyVersionId,
                         versionNumber: source.versionNumber(of: s.surveyVersionId), submittedBy: s.submitter,
                         submitterName: source.submitterNames[s.submitter], receivedAt: s.receivedAt, capturedAt: s.capturedAt,
                         reviewState: s.reviewState.rawValue, revision: s.revision, fieldTaskId: s.fieldTaskId, answers: answers)
        row.edits = s.edits
        return row
    }

    func submission(_ r: ExportRow) -> JSONValue {
        let files = Self.fileAnswers(.object(r.answers))
        var o: [String: JSONValue] = [
            "__id": .string(r.clientSubmissionId),
            "__system": [
                "submissionDate": .string(Timestamp.format(r.receivedAt)),
                "submitterId": .string(naming.user(r.submittedBy)),
                "submitterName": r.submitterName.map(JSONValue.string) ?? .null,
                "reviewState": naming.reviewState(named: r.reviewState),
                "formVersion": .string(naming.formVersion(r.surveyVersionId, number: r.versionNumber)),
                // A resubmission replaces the answers under review; an edit (`PUT …/answers`) counts.
                "edits": .number(Double(r.edits)),
                // A response is accepted only with every file it names uploaded.
                "attachmentsPresent": .number(Double(files)),
                "attachmentsExpected": .number(Double(files)),
            ],
        ]
        properties(model.tables[0].nodes, r.answers, into: &o)
        return .object(o)
    }

    func repeatRow(_ table: Int, _ key: String, parentId: String, _ answers: [String: JSONValue]) -> JSONValue {
        let t = model.tables[table]
        var o: [String: JSONValue] = ["__id": .string(key), t.parentKey ?? "": .string(parentId)]
        properties(t.nodes, answers, into: &o)
        return .object(o)
    }

    static func fileAnswers(_ v: JSONValue) -> Int {
        switch v {
        case .object(let o): return o["clientUploadId"]?.stringValue != nil ? 1 : o.values.reduce(0) { $0 + fileAnswers($1) }
        case .array(let a): return a.reduce(0) { $0 + fileAnswers($1) }
        default: return 0
        }
    }

    func properties(_ nodes: [ODataModel.Node], _ answers: [String: JSONValue], into out: inout [String: JSONValue]) {
        for n in nodes {
            switch n {
            case .value(let name, let type, let q): out[name] = value(q, type, answers[q.id])
            case .group(let name, _, let children):
                var o: [String: JSONValue] = [:]
                properties(children, answers, into: &o)
                out[name] = .object(o)
            }
        }
    }

    /// A question's value: its export cells, typed as `$metadata` says.
    func value(_ q: Question, _ type: ODataModel.EdmType, _ stored: JSONValue?) -> JSONValue {
        let cells = model.columns.cells(of: q, stored)
        if type == .point {
            guard cells.count == 3, case .number(let lat) = cells[0], case .number(let lon) = cells[1] else { return .null }
            if query.wkt { return .string("POINT (\(CanonicalJSON.number(lon)) \(CanonicalJSON.number(lat)))") }
            var coordinates: [JSONValue] = [.number(lon), .number(lat)]
            if let altitude = stored?["altitude"]?.doubleValue { coordinates.append(.number(altitude)) }
            var point: [String: JSONValue] = ["type": "Point", "coordinates": .array(coordinates)]
            if case .number(let accuracy) = cells[2] { point["properties"] = ["accuracy": .number(accuracy)] }
            return .object(point)
        }
        switch cells.first ?? .empty {
        case .empty: return .null
        case .text(let s): return .string(s)
        case .number(let d): return type == .string ? .string(CanonicalJSON.number(d)) : .number(d)
        case .timestamp(let t): return .string(Timestamp.format(t))
        }
    }

    // MARK: - $expand and $select

    /// `row` with its repeats, as `$expand` asks.
    func expanded(_ row: JSONValue, position: SkipToken) -> JSONValue {
        guard query.expand != .none, case .object(var o) = row else { return row }
        let answers = expansionAnswers[position.responseId + "\u{0}" + String(position.ordinal)]
        guard let answers else { return row }
        let key = o["__id"]?.stringValue ?? ""
        // A response's instances are keyed under its response id (the CSV's KEY); its rows name it by `__id`.
        addChildren(table, key: table == 0 ? position.responseId : key, id: key, answers, all: query.expand == .all, only: query.expand, into: &o)
        return .object(o)
    }

    func addChildren(_ table: Int, key: String, id: String, _ answers: [String: JSONValue], all: Bool, only: ODataQuery.Expand,
                     into o: inout [String: JSONValue]) {
        for c in model.tables[table].children {
            if case .tables(let names) = only, !names.contains(c) { continue }
            o[model.tables[c].repeatId ?? ""] = .array(instances(c, under: (key, id, answers)).map { i in
                guard case .object(var child) = repeatRow(c, i.key, parentId: id, i.answers) else { return .null }
                if all { addChildren(c, key: i.key, id: i.key, i.answers, all: true, only: .all, into: &child) }
                return .object(child)
            })
        }
    }

    /// The answers objects of the rows kept for the page, for `$expand` (filled as rows are kept).
    private var expansionAnswers: [String: [String: JSONValue]] { expansion.answers }
    private let expansion = Expansion()

    final class Expansion: @unchecked Sendable {
        // @unchecked: one request's thread.
        var answers: [String: [String: JSONValue]] = [:]
    }

    func select(_ row: JSONValue) -> JSONValue {
        guard let paths = query.select, case .object(let o) = row else { return row }
        var out: [String: JSONValue] = [:]
        // The row's key, whatever is selected: a client relates and refreshes rows by it.
        if let key = o["__id"] { out["__id"] = key }
        for p in paths { Self.copy(p[...], from: o, into: &out) }
        for c in model.tables[table].children {
            if let name = model.tables[c].repeatId, let v = o[name] { out[name] = v }
        }
        return .object(out)
    }

    static func copy(_ path: ArraySlice<String>, from o: [String: JSONValue], into out: inout [String: JSONValue]) {
        guard let first = path.first, let v = o[first] else { return }
        if path.count == 1 { out[first] = v; return }
        guard case .object(let inner) = v else { return }
        var sub = out[first]?.objectValue ?? [:]
        copy(path.dropFirst(), from: inner, into: &sub)
        out[first] = .object(sub)
    }

    // MARK: - Order, skip, page

    func arrivalOrder(after token: SkipToken?, skip: Int, limit: Int) throws -> ([(row: JSONValue, position: SkipToken)], Bool) {
        let cursor = try source.responses(from: token?.responseId)
        var kept: [(row: JSONValue, position: SkipToken)] = []
        var skipLeft = skip
        while let stored = try cursor.next() {
            for (ordinal, r) in try rows(stored).enumerated() {
                if let token, stored.responseId == token.responseId, ordinal <= token.ordinal { continue }
                guard query.filter?.matches(r.row) ?? true else { continue }
                if skipLeft > 0 { skipLeft -= 1; continue }
                if kept.count == limit { return (kept, true) }
                let position = SkipToken(keys: [], responseId: stored.responseId, ordinal: ordinal, delivered: 0)
                expansion.answers[stored.responseId + "\u{0}" + String(ordinal)] = r.answers
                kept.append((r.row, position))
            }
        }
        return (kept, false)
    }

    func ordered(after token: SkipToken?, skip: Int, limit: Int) throws -> ([(row: JSONValue, position: SkipToken)], Bool) {
        let window = skip + limit + 1
        guard window <= Self.maxOrderedWindow else {
            throw ODataError.unsupported("$skip with $orderby reaches past \(Self.maxOrderedWindow) rows; page with @odata.nextLink instead.")
        }
        let cursor = try source.responses(from: nil)
        var best: [(row: JSONValue, answers: [String: JSONValue], position: SkipToken)] = []
        while let stored = try cursor.next() {
            for (ordinal, r) in try rows(stored).enumerated() {
                guard query.filter?.matches(r.row) ?? true else { continue }
                let keys = query.orderBy.map { ODataFilter.value(.path($0.path, $0.type), r.row) }
                let position = SkipToken(keys: keys, responseId: stored.responseId, ordinal: ordinal, delivered: 0)
                if let token, !precedes(token, position) { continue }
                if best.count == window, let last = best.last, !precedes(position, last.position) { continue }
                // Binary insertion keeps `best` in order; the window drops its last.
                var lo = 0, hi = best.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if precedes(best[mid].position, position) { lo = mid + 1 } else { hi = mid }
                }
                best.insert((r.row, r.answers, position), at: lo)
                if best.count > window { best.removeLast() }
            }
        }
        let page = best.dropFirst(skip).prefix(limit)
        for b in page { expansion.answers[b.position.responseId + "\u{0}" + String(b.position.ordinal)] = b.answers }
        return (page.map { ($0.row, $0.position) }, best.count > skip + limit)
    }

    /// Whether `a` comes before `b`: the `$orderby` keys (nulls first ascending), then response, then place.
    func precedes(_ a: SkipToken, _ b: SkipToken) -> Bool {
        for (i, order) in query.orderBy.enumerated() {
            let c = Self.order(a.keys[i], b.keys[i])
            if c != 0 { return order.descending ? c > 0 : c < 0 }
        }
        if a.responseId != b.responseId { return a.responseId < b.responseId }
        return a.ordinal < b.ordinal
    }

    static func order(_ a: ODataFilter.Value, _ b: ODataFilter.Value) -> Int {
        switch (a, b) {
        case (.null, .null): return 0
        case (.null, _): return -1
        case (_, .null): return 1
        default:
            if ODataFilter.compare(.eq, a, b) { return 0 }
            return ODataFilter.compare(.lt, a, b) ? -1 : 1
        }
    }

    /// Every matching row, whatever `$top`, `$skip` and the page.
    func count() throws -> Int {
        if query.filter == nil && table == 0 { return try source.count() }
        let cursor = try source.responses(from: nil)
        var n = 0
        while let stored = try cursor.next() {
            for r in try rows(stored) where query.filter?.matches(r.row) ?? true { n += 1 }
        }
        return n
    }
}
