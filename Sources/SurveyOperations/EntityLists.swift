import SurveyDomain
import SurveyStorage

/// Reading entity lists and their entities (Docs/entities.md): any member of the organization,
/// never gated. A list or entity that does not exist (or is deleted) is the 404 of nothing.
public struct EntityLists: Sendable {
    let operations: Operations

    public func lists(_ user: UserRecord, orgId: String, after: String?, limit: Int) throws -> [EntityListRecord] {
        try operations.member(user, of: orgId)
        return try operations.database.read { try $0.entityLists(orgId: orgId, after: after, limit: limit) }
    }

    public func list(_ user: UserRecord, orgId: String, name: String) throws -> EntityListRecord {
        try operations.member(user, of: orgId)
        guard let list = try operations.database.read({ try $0.entityList(orgId: orgId, name: name) }) else { throw ApiError.notFound() }
        return list
    }

    public func entities(_ user: UserRecord, orgId: String, list: String, after: String?, limit: Int,
                         filter: EntityFilter = EntityFilter()) throws -> [EntityRecord] {
        try operations.member(user, of: orgId)
        return try operations.database.read { db in
            guard try db.entityList(orgId: orgId, name: list) != nil else { throw ApiError.notFound() }
            return try db.entities(orgId: orgId, list: list, after: after, limit: limit, filter: filter)
        }
    }

    public func entity(_ user: UserRecord, orgId: String, list: String, entityId: String) throws -> EntityRecord {
        try operations.member(user, of: orgId)
        guard let e = try operations.database.read({ try $0.entity(orgId: orgId, list: list, entityId: entityId) }), e.deletedAt == nil else {
            throw ApiError.notFound()
        }
        return e
    }

    /// The console's page of a list's entities: conflicts first, narrowed by `search` (label or
    /// properties), from `cursor`; `partial`: a search that stopped at its budget before the page was full.
    public func page(_ user: UserRecord, orgId: String, list: String, search: String?, from cursor: EntityPageCursor?, limit: Int)
        throws -> (list: EntityListRecord, rows: [EntityRecord], next: EntityPageCursor?, partial: Bool) {
        try operations.member(user, of: orgId)
        return try operations.database.read { db in
            guard let record = try db.entityList(orgId: orgId, name: list) else { throw ApiError.notFound() }
            let page = try db.entityPage(orgId: orgId, list: list, search: search, from: cursor, limit: limit)
            return (record, page.rows, page.next, page.partial)
        }
    }

    /// The entity versions a response's submission made, for whoever may see that response.
    public func versions(_ user: UserRecord, orgId: String, responseId: String) throws
        -> [(list: String, entityId: String, version: EntityVersionRecord)] {
        _ = try operations.visibleResponse(user, orgId: orgId, responseId: responseId)
        return try operations.database.read { try $0.entityVersions(orgId: orgId, responseId: responseId) }
    }

    /// A page of an entity's versions after version `after`, each with the one before it (for its diff).
    public func versions(_ user: UserRecord, orgId: String, list: String, entityId: String, after: Int64, limit: Int)
        throws -> [(version: EntityVersionRecord, previous: EntityVersionRecord?)] {
        try operations.member(user, of: orgId)
        return try operations.database.read { db in
            guard let e = try db.entity(orgId: orgId, list: list, entityId: entityId), e.deletedAt == nil else { throw ApiError.notFound() }
            let page = try db.entityVersions(orgId: orgId, list: list, entityId: entityId, after: after, limit: limit)
            var previous = after > 0 ? try db.entityVersion(orgId: orgId, list: list, entityId: entityId, version: after) : nil
            return page.map { v in
                defer { previous = v }
                return (v, previous)
            }
        }
    }
}

extension Operations {
    public var entityLists: EntityLists { EntityLists(operations: self) }
}
