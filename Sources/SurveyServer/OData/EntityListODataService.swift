import SurveyDomain
import SurveyHTTP
import SurveyOData
import SurveyOperations
import SurveyStorage

/// The door onto an entity list's OData feed (`/v1/orgs/{orgId}/entity-lists/{name}.svc`): the
/// service document, `$metadata` and `Entities`, admitted as a survey's feed is (a bearer token
/// or HTTP Basic; any member, as every read of entity lists). Reads only: never gated. ODK
/// Central's door serves the same feed at `…/datasets/{name}.svc` through the
/// `EntityFeedTarget` functions below.
struct EntityListODataService {
    let services: Services
    /// The survey feeds' door, whose admission and routes this one shares.
    let surveyFeeds: ODataService

    static let root = "/v1/orgs/{orgId}/entity-lists/{listName}.svc"

    func register(into router: inout Router) {
        surveyFeeds.addFeed(root: Self.root, serviceDocument: serviceDocument, metadata: metadata, entitySet: entitySet, into: &router)
    }

    /// The list the path names, in the admitted caller's organization, with surveyd's own names.
    private func target(_ admission: Admission, _ request: HTTPRequest) -> EntityFeedTarget {
        EntityFeedTarget(orgId: admission.orgId, listName: request.parameter("listName"),
                         serviceRoot: request.origin + "/v1/orgs/\(request.parameter("orgId"))/entity-lists/\(request.parameter("listName")).svc",
                         naming: { _ in .surveyd })
    }

    func serviceDocument(_ admission: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        try serviceDocument(target(admission, request))
    }

    func metadata(_ admission: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        try metadata(target(admission, request))
    }

    func entitySet(_ admission: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        try entitySet(target(admission, request), request, options: request.query, wholeUnlessPaged: false)
    }

    // MARK: - An entity list's feed, whichever door names it

    /// The list, 404 when the organization has none of that name.
    private func list(_ target: EntityFeedTarget, in db: ReadContext) throws -> EntityListRecord {
        guard let list = try db.entityList(orgId: target.orgId, name: target.listName) else { throw ApiError.notFound() }
        return list
    }

    func serviceDocument(_ target: EntityFeedTarget) throws -> HTTPResponse {
        _ = try services.database.read { try list(target, in: $0) }
        return ODataService.answer(EntityListFeed.serviceDocument(serviceRoot: target.serviceRoot), ODataService.jsonType)
    }

    func metadata(_ target: EntityFeedTarget) throws -> HTTPResponse {
        let feed = try services.database.read { db in EntityListFeed(list: try list(target, in: db), naming: try target.naming(db)) }
        return ODataService.answer(try feed.metadata(), "application/xml")
    }

    /// A page of `Entities`, with `@odata.nextLink` under the target's service root; with
    /// `wholeUnlessPaged` (ODK Central's door, as a survey's feed there) every row up to `$top`
    /// unless `Prefer: odata.maxpagesize` asks for pages, written a page at a time.
    func entitySet(_ target: EntityFeedTarget, _ request: HTTPRequest, options: [String: String], wholeUnlessPaged: Bool) throws -> HTTPResponse {
        let name = request.parameter("table")
        guard name == EntityListFeed.setName else {
            if name.hasPrefix(EntityListFeed.setName + "(") {
                throw ODataError.unsupported("Addressing one entity by its key (\(name)) is not supported; use $filter=__id eq '…'.")
            }
            throw ApiError.notFound()
        }
        let (size, applied) = ODataService.pageSize(request.header("prefer"))
        let first = try page(target, options, size: size)
        if wholeUnlessPaged && !applied {
            let head = ODataFeed.head(count: first.count, setName: name, serviceRoot: target.serviceRoot, nextLink: nil)
            let stream = ODataRowStream(head: head, first: first) { token, delivered in
                try page(target, Self.following(options, after: token, delivered: delivered, counted: true), size: size)
            }
            return .stream(stream, headers: ODataService.headers(ODataService.jsonType))
        }
        let next = first.next.map { token in
            target.serviceRoot + "/" + name + "?" + ODataService.encode(Self.following(options, after: token, delivered: first.rowCount, counted: false))
        }
        var response = ODataService.answer(ODataFeed.body(first, setName: name, serviceRoot: target.serviceRoot, nextLink: next), ODataService.jsonType)
        if applied { response.headers.append(("Preference-Applied", "odata.maxpagesize=\(size)")) }
        return response
    }

    /// The options of the page after the entity `token`: `$skip` was spent on the first page,
    /// `$top` counts down by the rows `delivered`; `counted`: `$count` was answered already.
    static func following(_ options: [String: String], after token: String, delivered: Int, counted: Bool) -> [String: String] {
        var q = options
        q["$skiptoken"] = token
        q["$skip"] = nil
        if counted { q["$count"] = nil }
        if let top = Int(q["$top"] ?? "") { q["$top"] = String(max(0, top - delivered)) }
        return q
    }

    /// A page of `Entities` in id order, from one snapshot: the list, its rows and their count;
    /// `next` is the page's last id when more rows follow. A `$filter` or `$skip` reads the list
    /// in id order until the page is full (and, for `$count`, to its end): bounded by the
    /// list's size, never held whole.
    private func page(_ target: EntityFeedTarget, _ options: [String: String], size: Int) throws -> ODataFeed.Page {
        let orgId = target.orgId
        return try services.database.read { db in
            let feed = EntityListFeed(list: try list(target, in: db), naming: try target.naming(db))
            let query = try EntityListFeed.Query(options, feed: feed)
            let limit = min(size, query.top ?? Int.max)
            var page = ODataFeed.Page(), more = false, toSkip = query.skip
            var last: String?
            // Until the page is full and one more match shows there is a next page.
            try Self.scan(feed, query, db, orgId, after: query.after) { row in
                if toSkip > 0 { toSkip -= 1; return true }
                if page.rowCount == limit { more = true; return false }
                if page.rowCount > 0 { page.rows.append(UInt8(ascii: ",")) }
                CanonicalJSON.encode(feed.select(row, query.select), into: &page.rows)
                page.rowCount += 1
                last = row["__id"]?.stringValue
                return true
            }
            if query.count {
                if query.filter == nil {
                    page.count = try db.entityCount(orgId: orgId, list: feed.list.name)
                } else {
                    var n = 0
                    try Self.scan(feed, query, db, orgId, after: nil) { _ in n += 1; return true }
                    page.count = n
                }
            }
            if more && limit < (query.top ?? Int.max) { page.next = last }
            return page
        }
    }

    /// Entities read a batch at a time.
    static let batch = 1_000

    /// The rows of the list's entities after `after` that match the query's filter, in id order,
    /// read a batch at a time, each handed to `visit` until it answers false.
    static func scan(_ feed: EntityListFeed, _ query: EntityListFeed.Query, _ db: ReadContext, _ orgId: String, after: String?,
                     _ visit: (JSONValue) -> Bool) throws {
        var after = after
        while true {
            let batch = try db.entities(orgId: orgId, list: feed.list.name, after: after, limit: Self.batch)
            for e in batch {
                let row = feed.row(e)
                if query.filter?.matches(row) ?? true, !visit(row) { return }
            }
            guard batch.count == Self.batch, let last = batch.last else { return }
            after = last.entityId
        }
    }
}
