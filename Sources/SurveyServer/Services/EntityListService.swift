import Foundation
import SurveyConsole
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage
import SurveyExports

/// The API's reads of entity lists and entities (`EntityLists`, Docs/entities.md); never gated.
struct EntityListService {
    let services: Services

    static let base = "/v1/orgs/{orgId}/entity-lists"

    func register(into router: inout Router) {
        services.route(&router, "GET", Self.base, .member(anyOf: []), lists)
        services.route(&router, "GET", Self.base + "/{name}", .member(anyOf: []), list)
        services.route(&router, "GET", Self.base + "/{name}/entities", .member(anyOf: []), entities)
        services.route(&router, "GET", Self.base + "/{name}/entities.csv", .member(anyOf: []), csv)
        // Blocking: the workbook is built on disk before its first byte is sent.
        services.route(&router, "GET", Self.base + "/{name}/entities.xlsx", .member(anyOf: []), runs: .blocking, xlsx)
        services.route(&router, "GET", Self.base + "/{name}/entities/{entityId}", .member(anyOf: []), entity)
        services.route(&router, "GET", Self.base + "/{name}/entities/{entityId}/versions", .member(anyOf: []), versions)
        registerWrites(into: &router)
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
                                                                after: page.after, limit: page.limit, filter: try Self.filter(request))
        return .json(200, page.render(rows, id: \.entityId, item: \.document))
    }

    /// `conflict=soft|hard`, `updatedAfter=<RFC 3339>` (strictly after), `search=<text>`.
    static func filter(_ request: HTTPRequest) throws -> EntityFilter {
        var filter = EntityFilter()
        var errors: [FieldError] = []
        // Given, each must be what it says (empty too).
        if let c = request.query["conflict"] {
            if c == "soft" || c == "hard" { filter.conflict = c } else { errors.append(FieldError(path: "conflict", message: "must be soft or hard")) }
        }
        if let t = request.query["updatedAfter"] {
            if let ms = Timestamp.parse(t) { filter.updatedAfter = ms } else {
                errors.append(FieldError(path: "updatedAfter", message: "must be a date and time (RFC 3339)"))
            }
        }
        if let q = request.query["search"], !q.isEmpty { filter.search = q }  // as long as a request line may be
        guard errors.isEmpty else { throw ApiError(.validationFailed, "The query is not valid.", errors: errors) }
        return filter
    }

    /// The CSV phones get, streamed from one snapshot. Its `ETag` is the manifest's hash of the
    /// list's revision, read in the same snapshot, so a device that holds the copy asks with
    /// `If-None-Match` and gets a bodiless 304 until an entity or property changes.
    func csv(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let list = try services.operations.entityLists.list(try context.member(), orgId: context.orgId, name: request.parameter("name"))
        let snapshot = try services.database.snapshot()
        let producer: EntityListCSV
        let etag: String
        do {
            let current = try snapshot.read.entityList(orgId: context.orgId, name: list.name) ?? list
            etag = "\"md5:" + OpenRosaForms.entityListMD5(orgId: context.orgId, current) + "\""
            if Self.matches(request.header("If-None-Match"), etag) {
                snapshot.close()
                return HTTPResponse(status: 304, headers: [("ETag", etag)])
            }
            producer = try EntityListCSV(snapshot: snapshot, orgId: context.orgId, list: list.name)
        } catch { snapshot.close(); throw error }
        return .stream(ExportStream(producer), headers: [("Content-Type", "text/csv; charset=utf-8"), ("ETag", etag),
                                                        ("Content-Disposition", "attachment; filename=\"\(list.name).csv\"")])
    }

    /// `If-None-Match` (RFC 9110): `*`, or a comma-separated list of tags, weak ones (`W/`) compared
    /// by their opaque part.
    static func matches(_ ifNoneMatch: String?, _ etag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        return ifNoneMatch.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == "*" || tag == etag
        }
    }

    /// The same rows as a workbook (`EntityListXLSX`), built from one snapshot in a temp file, then sent.
    func xlsx(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let list = try services.operations.entityLists.list(try context.member(), orgId: context.orgId, name: request.parameter("name"))
        let temp = services.blobs.layout.temp
        let path = temp + "/entities-" + UUID().uuidString + ".xlsx"
        defer { unlink(path) }  // the open descriptor keeps the bytes until they are sent
        let snapshot = try services.database.snapshot()
        defer { snapshot.close() }
        _ = try EntityListXLSX.write(snapshot: snapshot, orgId: context.orgId, list: list.name, to: path, tempDirectory: temp)
        let headers = [("Content-Type", ExportService.Format.xlsx.contentType),
                       ("Content-Disposition", "attachment; filename=\"\(list.name).xlsx\""), ("Cache-Control", "private, no-store")]
        guard let file = HTTPResponse.file(path: path, headers: headers) else { throw ApiError(.storageUnavailable, "The spreadsheet cannot be read.") }
        return file
    }

    /// The console's download buttons (`…/entity-lists/{name}/download?format=csv|xlsx`): the
    /// API's CSV and workbook for the signed-in member.
    func registerConsoleDownload(into router: inout Router, console: Console) {
        let service = self
        console.page(&router, "GET", "/console/orgs/{orgId}/entity-lists/{name}/download", .member(anyOf: []), runs: .blocking) { visit, request in
            switch request.query["format"] {
            case "csv": return try service.csv(visit.admission, request)
            case "xlsx": return try service.xlsx(visit.admission, request)
            default: throw ApiError.malformed("Choose a format: csv or xlsx.")
            }
        }
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

/// The API's writes of entities (`EntityWrites`): admins only, gated, keyed by `Idempotency-Key`.
extension EntityListService {
    func registerWrites(into router: inout Router) {
        let admins = Access.member(anyOf: [.admin])
        services.route(&router, "POST", Self.base, admins, createList)
        services.route(&router, "POST", Self.base + "/{name}/entities", admins, create)
        services.route(&router, "PATCH", Self.base + "/{name}/entities/{entityId}", admins, update)
        services.route(&router, "DELETE", Self.base + "/{name}/entities/{entityId}", admins, delete)
        services.route(&router, "POST", Self.base + "/{name}/entities/{entityId}/restore", admins, restore)
    }

    func createList(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId
        let keyed = KeyedAnswer(request) { (l: EntityListRecord) in HTTPResponse.created("/v1/orgs/\(orgId)/entity-lists/\(l.name)", l.document) }
        let outcome = try services.operations.entityWrites.createList(orgId: orgId, by: try context.member(), key: keyed.key) {
            let body = try JSONBody(request.body)
            var properties: [String] = []
            if let v = body.fields["properties"], !v.isNull {
                guard let items = v.arrayValue, items.allSatisfy({ $0.stringValue != nil }) else {
                    throw ApiError.malformed("properties must be an array of property names.")
                }
                properties = items.compactMap(\.stringValue)
            }
            return EntityWrites.NewList(name: try body.string("name"), label: try body.optionalString("label"), properties: properties)
        }
        return try keyed.answer(outcome)
    }

    func create(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId, list = request.parameter("name")
        let render: @Sendable (EntityRecord) -> HTTPResponse = {
            HTTPResponse.created("/v1/orgs/\(orgId)/entity-lists/\(list)/entities/\($0.entityId)", $0.document)
        }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.entityWrites.create(orgId: orgId, list: list, by: try context.member(), key: keyed.key) {
            let body = try JSONBody(request.body)
            return EntityWrites.NewEntity(id: try body.optionalString("id"), label: try body.string("label"),
                                          properties: try Self.properties(body))
        }
        return try keyed.answer(outcome)
    }

    func update(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request) { (e: EntityRecord) in HTTPResponse.json(200, e.document) }
        let outcome = try services.operations.entityWrites.update(orgId: context.orgId, list: request.parameter("name"),
                                                                  entityId: request.parameter("entityId"), by: try context.member(), key: keyed.key) {
            let body = try JSONBody(request.body)
            var baseVersion: Int64?
            if let v = body.fields["baseVersion"], !v.isNull {
                guard let n = v.intValue, n >= 1, n <= Int(Int32.max) else {
                    throw ApiError.malformed("baseVersion must be a version: an integer from 1 to 2147483647.")
                }
                baseVersion = Int64(n)
            }
            return EntityWrites.Change(baseVersion: baseVersion, label: try body.optionalString("label"), properties: try Self.properties(body),
                                       force: try Self.flag(body, "force"), resolve: try Self.flag(body, "resolve"))
        }
        return try keyed.answer(outcome)
    }

    func delete(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request) { (_: EntityRecord) in HTTPResponse(status: 204) }
        return try keyed.answer(try services.operations.entityWrites.setDeleted(true, orgId: context.orgId, list: request.parameter("name"),
                                                                               entityId: request.parameter("entityId"), by: try context.member(),
                                                                               key: keyed.key))
    }

    func restore(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request) { (e: EntityRecord) in HTTPResponse.json(200, e.document) }
        return try keyed.answer(try services.operations.entityWrites.setDeleted(false, orgId: context.orgId, list: request.parameter("name"),
                                                                               entityId: request.parameter("entityId"), by: try context.member(),
                                                                               key: keyed.key))
    }

    /// `properties`: an object of strings (a number is its text, as ODK Central takes it).
    static func properties(_ body: JSONBody) throws -> [String: String] {
        guard let v = body.fields["properties"], !v.isNull else { return [:] }
        guard let o = v.objectValue else { throw ApiError.malformed("properties must be an object of property names to strings.") }
        var out: [String: String] = [:]
        for (k, value) in o {
            switch value {
            case .string(let s): out[k] = s
            case .number(let d): out[k] = CanonicalJSON.number(d)
            default: throw ApiError.malformed("properties.\(k) must be a string.")
            }
        }
        return out
    }

    static func flag(_ body: JSONBody, _ key: String) throws -> Bool {
        guard let v = body.fields[key], !v.isNull else { return false }
        guard let b = v.boolValue else { throw ApiError.malformed("\(key) must be a boolean.") }
        return b
    }
}
