import SurveyDomain
import SurveyHTTP
import SurveyOData
import SurveyOperations
import SurveyStorage

/// The door onto an entity list's OData feed (`/v1/orgs/{orgId}/entity-lists/{name}.svc`): the
/// service document, `$metadata` and `Entities`, admitted as a survey's feed is (a bearer token
/// or HTTP Basic; any member, as every read of entity lists). Reads only: never gated.
struct EntityListODataService {
    let services: Services

    static let root = "/v1/orgs/{orgId}/entity-lists/{listName}.svc"

    func register(into router: inout Router) {
        ODataService(services: services).addFeed(root: Self.root, serviceDocument: serviceDocument, metadata: metadata,
                                                  entitySet: entitySet, into: &router)
    }

    private func serviceRoot(_ request: HTTPRequest) -> String {
        request.origin + "/v1/orgs/\(request.parameter("orgId"))/entity-lists/\(request.parameter("listName")).svc"
    }

    /// The list, 404 when the caller's organization has none of that name.
    private func list(_ admission: Admission, _ request: HTTPRequest, in db: ReadContext) throws -> EntityListRecord {
        guard let list = try db.entityList(orgId: admission.orgId, name: request.parameter("listName")) else { throw ApiError.notFound() }
        return list
    }

    func serviceDocument(_ admission: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        _ = try services.database.read { try list(admission, request, in: $0) }
        return ODataService.answer(EntityListFeed.serviceDocument(serviceRoot: serviceRoot(request)), ODataService.jsonType)
    }

    func metadata(_ admission: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let feed = EntityListFeed(list: try services.database.read { try list(admission, request, in: $0) })
        return ODataService.answer(try feed.metadata(), "application/xml")
    }

    /// A page of `Entities` in id order, from one snapshot: the list, its rows and their count.
    /// A `$filter` or `$skip` reads the list in id order until the page is full (and, for
    /// `$count`, to its end): bounded by the list's size, never held whole.
    func entitySet(_ admission: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let name = request.parameter("table")
        guard name == EntityListFeed.setName else {
            if name.hasPrefix(EntityListFeed.setName + "(") {
                throw ODataError.unsupported("Addressing one entity by its key (\(name)) is not supported; use $filter=__id eq '…'.")
            }
            throw ApiError.notFound()
        }
        let (size, applied) = ODataService.pageSize(request.header("prefer"))
        let orgId = admission.orgId
        let (feed, rows, more, count) = try services.database.read { db in
            let feed = EntityListFeed(list: try list(admission, request, in: db))
            let query = try EntityListFeed.Query(request.query, feed: feed)
            let limit = min(size, query.top ?? Int.max)
            var rows: [JSONValue] = [], more = false, toSkip = query.skip
            // Until the page is full and one more match shows there is a next page.
            try Self.scan(feed, query, db, orgId, after: query.after) { row in
                if toSkip > 0 { toSkip -= 1; return true }
                if rows.count == limit { more = true; return false }
                rows.append(row)
                return true
            }
            var count: Int?
            if query.count {
                if query.filter == nil {
                    count = try db.entityCount(orgId: orgId, list: feed.list.name)
                } else {
                    var n = 0
                    try Self.scan(feed, query, db, orgId, after: nil) { _ in n += 1; return true }
                    count = n
                }
            }
            return (feed, rows, more && limit < (query.top ?? Int.max), count)
        }
        var next: String?
        if more, let last = rows.last?["__id"]?.stringValue {
            var q = request.query
            q["$skiptoken"] = last
            q["$skip"] = nil  // skipped on the first page
            if let top = Int(q["$top"] ?? "") { q["$top"] = String(top - rows.count) }
            next = serviceRoot(request) + "/" + name + "?" + ODataService.encode(q)
        }
        var response = ODataService.answer(feed.body(rows, count: count, serviceRoot: serviceRoot(request), nextLink: next), ODataService.jsonType)
        if applied { response.headers.append(("Preference-Applied", "odata.maxpagesize=\(size)")) }
        return response
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
