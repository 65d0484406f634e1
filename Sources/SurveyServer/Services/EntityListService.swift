import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The API's reads of entity lists and entities (`EntityLists`, Docs/entities.md); never gated.
struct EntityListService {
    let services: Services

    static let base = "/v1/orgs/{orgId}/entity-lists"

    func register(into router: inout Router) {
        services.route(&router, "GET", Self.base, .member(anyOf: []), lists)
        services.route(&router, "GET", Self.base + "/{name}", .member(anyOf: []), list)
        services.route(&router, "GET", Self.base + "/{name}/entities", .member(anyOf: []), entities)
        services.route(&router, "GET", Self.base + "/{name}/entities/{entityId}", .member(anyOf: []), entity)
        services.route(&router, "GET", Self.base + "/{name}/entities/{entityId}/versions", .member(anyOf: []), versions)
    }

    func lists(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let page = try Page(request)
        let rows = try services.operations.entityLists.lists(try context.member(), orgId: context.orgId, after: page.after, limit: page.limit)
        return .json(200, page.render(rows, id: \.name, item: \.document))
    }

    func list(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        .json(200, try services.operations.entityLists.list(try context.member(), orgId: context.orgId, name: request.parameter("name")).document)
    }

    func entities(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let page = try Page(request)
        let rows = try services.operations.entityLists.entities(try context.member(), orgId: context.orgId, list: request.parameter("name"),
                                                                after: page.after, limit: page.limit)
        return .json(200, page.render(rows, id: \.entityId, item: \.document))
    }

    func entity(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        .json(200, try services.operations.entityLists.entity(try context.member(), orgId: context.orgId, list: request.parameter("name"),
                                                               entityId: request.parameter("entityId")).document)
    }

    /// Oldest first; the cursor is the last version listed.
    func versions(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let page = try Page(request)
        guard let after = page.after.map({ Int64($0) }) ?? 0, after >= 0 else {
            throw ApiError(.validationFailed, "The query is not valid.", errors: [FieldError(path: "after", message: "is not a cursor of this list")])
        }
        let rows = try services.operations.entityLists.versions(try context.member(), orgId: context.orgId, list: request.parameter("name"),
                                                                entityId: request.parameter("entityId"), after: after, limit: page.limit)
        return .json(200, page.render(rows, id: { String($0.version.version) }, item: { $0.version.document(after: $0.previous) }))
    }
}
