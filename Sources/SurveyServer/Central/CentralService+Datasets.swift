import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// ODK Central's entity lists (`datasets`) and entities, mapped onto surveyd's entity list
/// operations (Docs/entities.md) with Central's names: `uuid` is the entity's id, `data` its
/// properties. Reads are any member's and never gated; writes are an admin's, through the same
/// operations, gate and transaction as `/v1/orgs/{orgId}/entity-lists`.
extension CentralService {
    static let datasets = "/v1/projects/{projectId}/datasets"

    func registerDatasets(into router: inout Router) {
        let readers = Access.member(anyOf: []), admins = Access.member(anyOf: [.admin])
        let base = Self.datasets
        router.add("GET", base, access: readers) { request in CentralRefusal.answer { try datasets(request) } }
        router.add("POST", base, access: admins) { request in CentralRefusal.answer { try createDataset(request) } }
        router.add("GET", base + "/{name}", access: readers) { request in CentralRefusal.answer { try dataset(request) } }
        router.add("POST", base + "/{name}/properties", access: admins) { request in CentralRefusal.answer { try addProperty(request) } }
        router.add("GET", base + "/{name}/entities", access: readers) { request in CentralRefusal.answer { try entities(request) } }
        router.add("POST", base + "/{name}/entities", access: admins) { request in
            CentralRefusal.answer { try Self.inCentralNames { try createEntities(request) } }
        }
        router.add("GET", base + "/{name}/entities/{uuid}", access: readers) { request in CentralRefusal.answer { try entity(request) } }
        router.add("PATCH", base + "/{name}/entities/{uuid}", access: admins) { request in
            CentralRefusal.answer { try Self.inCentralNames { try updateEntity(request) } }
        }
        router.add("DELETE", base + "/{name}/entities/{uuid}", access: admins) { request in CentralRefusal.answer { try deleteEntity(request) } }
    }

    // MARK: - Entity lists

    func datasets(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request)
        var all: [EntityListRecord] = [], after: String?
        while true {
            let page = try operations.entityLists.lists(user, orgId: org.orgId, after: after, limit: 500)
            all += page
            guard page.count == 500, let last = page.last else { break }
            after = last.name
        }
        return .json(200, .array(all.map { CentralJSON.dataset($0, projectId: org.projectId, withProperties: false) }))
    }

    /// `{name, approvalRequired}`: a list that needs approval before its entities exist is not
    /// something surveyd has (a submission's entity is made in its own transaction).
    func createDataset(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request, .member(anyOf: [.admin]))
        let keyed = KeyedAnswer(request) { (l: EntityListRecord) in HTTPResponse.json(200, CentralJSON.dataset(l, projectId: org.projectId, withProperties: true)) }
        let outcome = try operations.entityWrites.createList(orgId: org.orgId, by: user, key: keyed.key) {
            let body = try JSONBody(request.body)
            let required = body.fields["approvalRequired"] ?? .null
            guard required.isNull || required.boolValue != nil else { throw ApiError.malformed("approvalRequired must be true or false.") }
            if required.boolValue == true {
                throw ApiError(.notOffered, "surveyd does not hold a submission's entity for approval: an entity is made in its submission's own transaction. Send approvalRequired false.")
            }
            return EntityWrites.NewList(name: try body.string("name"), label: nil, properties: [])
        }
        return try keyed.answer(outcome)
    }

    func dataset(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request)
        let list = try operations.entityLists.list(user, orgId: org.orgId, name: request.parameter("name"))
        return .json(200, CentralJSON.dataset(list, projectId: org.projectId, withProperties: true))
    }

    /// `{name}`: a property added to the list; one it has is the same answer.
    func addProperty(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request, .member(anyOf: [.admin]))
        let name = try JSONBody(request.body).string("name")
        _ = try operations.entityWrites.addProperty(orgId: org.orgId, list: request.parameter("name"), name: name, by: user)
        return .json(200, ["success": .bool(true)])
    }

    // MARK: - Entities

    func entities(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request)
        let list = request.parameter("name")
        var all: [EntityRecord] = [], after: String?
        while true {
            let page = try operations.entityLists.entities(user, orgId: org.orgId, list: list, after: after, limit: 1000)
            all += page
            guard page.count == 1000, let last = page.last else { break }
            after = last.entityId
        }
        let described = try describe(all, orgId: org.orgId)
        return .json(200, .array(all.map { described($0) }))
    }

    func entity(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request)
        let e = try operations.entityLists.entity(user, orgId: org.orgId, list: request.parameter("name"), entityId: request.parameter("uuid"))
        return .json(200, try describe([e], orgId: org.orgId)(e))
    }

    /// `{uuid, label, data}` creates one entity; `{entities: [{label, data}], source}` creates
    /// them all in one transaction, or none. The same uuid, label and data from the same caller
    /// again is the entity stored the first time (200); anything else under that uuid is 409.3.
    func createEntities(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request, .member(anyOf: [.admin]))
        let list = request.parameter("name")
        let body = try JSONBody(request.body)
        if let batch = body.fields["entities"] {
            let keyed = KeyedAnswer(request) { (_: Int) in HTTPResponse.json(200, ["success": .bool(true)]) }
            let outcome = try operations.entityWrites.createMany(orgId: org.orgId, list: list, by: user, key: keyed.key) {
                guard let items = batch.arrayValue else { throw ApiError.malformed("entities must be an array of {label, data}.") }
                return try items.enumerated().map { i, item in
                    guard let label = item["label"]?.stringValue else { throw ApiError.malformed("entities[\(i)] must be an object {label, data} with a label.") }
                    return EntityWrites.NewEntity(id: nil, label: label, properties: try Self.data(item["data"], at: "entities[\(i)].data"))
                }
            }
            return try keyed.answer(outcome)
        }
        let id = try body.optionalString("uuid"), label = try body.string("label"), data = try Self.data(body.fields["data"], at: "data")
        let actor = user.actorId
        let keyed = KeyedAnswer(request) { (e: EntityRecord) in
            HTTPResponse.json(200, CentralJSON.entity(e, creatorId: actor, versionCreatorId: actor, baseVersion: nil))
        }
        do {
            let outcome = try operations.entityWrites.create(orgId: org.orgId, list: list, by: user, key: keyed.key) {
                EntityWrites.NewEntity(id: id, label: label, properties: data)
            }
            return try keyed.answer(outcome)
        } catch let e as ApiError where e.code == .idempotencyConflict {
            // The same create again (pyodk retried it): the entity it made.
            guard let id, let stored = try services.database.read({ try $0.entity(orgId: org.orgId, list: list, entityId: id) }),
                  stored.deletedAt == nil, stored.createdBy == user.userId, stored.label == label, stored.properties == data else { throw e }
            return .json(200, try describe([stored], orgId: org.orgId)(stored))
        }
    }

    /// `?baseVersion=k` (stale: 409.15 with the current entity) or `?force=true`; `{label?, data?}`.
    /// The same PATCH again once it applied answers the entity it made (200, no new version).
    func updateEntity(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request, .member(anyOf: [.admin]))
        let list = request.parameter("name"), uuid = request.parameter("uuid")
        let force: Bool = try request.query["force"].map { raw in
            guard raw == "true" || raw == "false" else { throw ApiError.malformed("force must be true or false.") }
            return raw == "true"
        } ?? false
        let baseVersion: Int64? = try request.query["baseVersion"].map { raw in
            guard raw.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), raw.first != "0", let n = Int64(raw), n >= 1, n <= Int64(Int32.max) else {
                throw ApiError.malformed("baseVersion must be a version: an integer from 1 to 2147483647.")
            }
            return n
        }
        guard baseVersion != nil || force else { throw ApiError.malformed("Send baseVersion (the version the change was made from) or force=true.") }
        let body = try JSONBody(request.body)
        let label = try body.optionalString("label"), data = try Self.data(body.fields["data"], at: "data")
        // The creator does not change: read before the write, so a kept answer needs no read.
        let creator = try services.database.read { db -> Int64 in
            guard let e = try db.entity(orgId: org.orgId, list: list, entityId: uuid) else { return 0 }
            return try db.user(e.createdBy)?.actorId ?? 0
        }
        let actor = user.actorId
        let keyed = KeyedAnswer(request) { (e: EntityRecord) in
            HTTPResponse.json(200, CentralJSON.entity(e, creatorId: creator, versionCreatorId: actor, baseVersion: baseVersion))
        }
        do {
            let outcome = try operations.entityWrites.update(orgId: org.orgId, list: list, entityId: uuid, by: user, key: keyed.key) {
                EntityWrites.Change(baseVersion: baseVersion, label: label, properties: data, force: force, resolve: false)
            }
            return try keyed.answer(outcome)
        } catch let e as ApiError where e.code == .staleRevision {
            // This very change, made from `baseVersion` by this caller, is the entity's current version.
            guard let base = baseVersion, let (current, made) = try services.database.read({ db -> (EntityRecord, EntityVersionRecord)? in
                guard let c = try db.entity(orgId: org.orgId, list: list, entityId: uuid),
                      let v = try db.entityVersion(orgId: org.orgId, list: list, entityId: uuid, version: c.version) else { return nil }
                return (c, v)
            }), made.version == base + 1, made.baseVersion == base, made.actor == user.userId, made.source == "api",
                  label.map({ $0 == current.label }) ?? true, data.allSatisfy({ current.properties[$0.key] == $0.value }) else {
                // Central's code for a stale entity version.
                var stale = e
                stale.extra["code"] = .number(409.15)
                throw stale
            }
            return .json(200, CentralJSON.entity(current, creatorId: creator, versionCreatorId: actor, baseVersion: base))
        }
    }

    func deleteEntity(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request, .member(anyOf: [.admin]))
        let keyed = KeyedAnswer(request) { (_: EntityRecord) in HTTPResponse.json(200, ["success": .bool(true)]) }
        return try keyed.answer(try operations.entityWrites.setDeleted(true, orgId: org.orgId, list: request.parameter("name"),
                                                                      entityId: request.parameter("uuid"), by: user, key: keyed.key))
    }

    /// A refusal at surveyd's `properties.<name>` said at Central's `data.<name>`.
    static func inCentralNames(_ handler: () throws -> HTTPResponse) throws -> HTTPResponse {
        do { return try handler() } catch let e as ApiError where e.code == .validationFailed && e.errors.contains(where: { $0.path.contains("properties") }) {
            var named = e
            named.errors = e.errors.map { f in
                FieldError(path: f.path.hasPrefix("properties.") ? "data." + f.path.dropFirst("properties.".count)
                           : f.path.replacingOccurrences(of: "].properties.", with: "].data."), message: f.message)
            }
            throw named
        }
    }

    /// `data`: an object whose values are strings, numbers (their text, as Central stores them)
    /// or booleans; anything else is 422 at its key.
    static func data(_ value: JSONValue?, at path: String) throws -> [String: String] {
        guard let value, !value.isNull else { return [:] }
        guard let o = value.objectValue else {
            throw ApiError(.validationFailed, "The entity's data is not valid.", errors: [FieldError(path: path, message: "must be an object of property values")])
        }
        var out: [String: String] = [:]
        for (k, v) in o {
            switch v {
            case .string(let s): out[k] = s
            case .number(let d): out[k] = CanonicalJSON.number(d)
            case .bool(let b): out[k] = b ? "true" : "false"
            default:
                throw ApiError(.validationFailed, "The entity's data is not valid.", errors: [FieldError(path: "\(path).\(k)", message: "must be a string")])
            }
        }
        return out
    }

    /// Each entity in Central's shape: who made it and its current version, read in one snapshot.
    private func describe(_ entities: [EntityRecord], orgId: String) throws -> (EntityRecord) -> JSONValue {
        let (versions, actors) = try services.database.read { db -> ([String: EntityVersionRecord], [String: Int64]) in
            var versions: [String: EntityVersionRecord] = [:], actors: [String: Int64] = [:]
            for e in entities {
                if let v = try db.entityVersion(orgId: orgId, list: e.listName, entityId: e.entityId, version: e.version) { versions[e.entityId] = v }
                for id in [e.createdBy, versions[e.entityId]?.actor].compactMap({ $0 }) where actors[id] == nil {
                    actors[id] = try db.user(id)?.actorId ?? 0
                }
            }
            return (versions, actors)
        }
        return { e in
            let v = versions[e.entityId]
            return CentralJSON.entity(e, creatorId: actors[e.createdBy] ?? 0, versionCreatorId: v.flatMap { actors[$0.actor] } ?? actors[e.createdBy] ?? 0,
                                      baseVersion: v?.baseVersion)
        }
    }
}
