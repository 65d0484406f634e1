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
        let routes: [(String, @Sendable (Admission, HTTPRequest) throws -> HTTPResponse)] = [
            (Self.root, serviceDocument), (Self.root + "/$metadata", metadata), (Self.root + "/{table}", entitySet),
        ]
        for (pattern, handler) in routes {
            let service = self
            router.add("GET", pattern, access: FeedReads.access, runs: .blocking, needsClientAddress: true) { request in
                do {
                    return try handler(try ODataService(services: service.services).admit(request.head), request)
                } catch let e as ODataError {
                    return ODataService.error(e)
                }
            }
        }
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
    func entitySet(_ admission: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let name = request.parameter("table")
        guard name == EntityListFeed.setName else {
            if name.hasPrefix(EntityListFeed.setName + "(") {
                throw ODataError.unsupported("Addressing one entity by its key (\(name)) is not supported; read the list's entity with GET …/entity-lists/{name}/entities/{id}.")
            }
            throw ApiError.notFound()
        }
        let query = try EntityListFeed.Query(request.query)
        let (size, applied) = ODataService.pageSize(request.header("prefer"))
        let limit = min(size, query.top ?? Int.max)
        let (feed, entities, count) = try services.database.read { db in
            let list = try list(admission, request, in: db)
            let rows = try db.entities(orgId: admission.orgId, list: list.name, after: query.after, limit: limit + 1)
            return (EntityListFeed(list: list), rows, query.count ? try db.entityCount(orgId: admission.orgId, list: list.name) : nil)
        }
        let page = Array(entities.prefix(limit))
        // More rows than the page holds, and `$top` (if any) not reached by it: a next page.
        var next: String?
        if entities.count > limit, limit < (query.top ?? Int.max) || query.top == nil, let last = page.last {
            var q = request.query
            q["$skiptoken"] = last.entityId
            if let top = query.top { q["$top"] = String(top - page.count) }
            next = serviceRoot(request) + "/" + name + "?" + ODataService.encode(q)
        }
        var response = ODataService.answer(feed.body(page, count: count, serviceRoot: serviceRoot(request), nextLink: next),
                                           ODataService.jsonType)
        if applied { response.headers.append(("Preference-Applied", "odata.maxpagesize=\(size)")) }
        return response
    }
}
