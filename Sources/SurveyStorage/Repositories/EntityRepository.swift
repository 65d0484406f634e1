import SurveyDomain

/// An entity list of an organization: its properties in the order forms added them, and its
/// revision, raised by every change of its entities or properties.
public struct EntityListRecord: Sendable, Equatable {
    public let name: String
    public let label: String
    public let properties: [String]
    public let revision: Int64
    public let createdAt: Int64
}

/// An entity as it is now. `properties` holds the properties ever set (a JSON object of strings).
public struct EntityRecord: Sendable, Equatable {
    public let listName: String
    public let entityId: String
    public let label: String
    public let properties: [String: String]
    public let version: Int64
    /// nil, `soft` or `hard` (`EntityConflict`).
    public let conflict: String?
    public let createdBy: String
    public let createdAt: Int64
    public let updatedAt: Int64
    public let deletedAt: Int64?

    public init(listName: String, entityId: String, label: String, properties: [String: String], version: Int64, conflict: String?,
                createdBy: String, createdAt: Int64, updatedAt: Int64, deletedAt: Int64? = nil) {
        self.listName = listName; self.entityId = entityId; self.label = label; self.properties = properties
        self.version = version; self.conflict = conflict; self.createdBy = createdBy; self.createdAt = createdAt
        self.updatedAt = updatedAt; self.deletedAt = deletedAt
    }
}

/// One version of an entity: its label and properties as that change left them, and what made it.
public struct EntityVersionRecord: Sendable, Equatable {
    public let version: Int64
    public let label: String
    public let properties: [String: String]
    /// The version the change was made from, when it names one (an update from a phone).
    public let baseVersion: Int64?
    /// The conflict this change marked, if any.
    public let conflict: String?
    /// `submission` or `api`.
    public let source: String
    public let responseId: String?
    /// The response's `clientSubmissionId` (an ODK app's instanceID), read with it.
    public let instanceID: String?
    public let actor: String
    public let createdAt: Int64

    public init(version: Int64, label: String, properties: [String: String], baseVersion: Int64?, conflict: String?, source: String,
                responseId: String?, instanceID: String? = nil, actor: String, createdAt: Int64) {
        self.version = version; self.label = label; self.properties = properties; self.baseVersion = baseVersion
        self.conflict = conflict; self.source = source; self.responseId = responseId; self.instanceID = instanceID
        self.actor = actor; self.createdAt = createdAt
    }
}

extension EntityListRecord {
    static let columns = "name, label, properties, revision, created_at"
    init(row: Row) throws {
        self.init(name: try row["name"], label: try row["label"], properties: EntityText.names(try row["properties"]),
                  revision: try row["revision"], createdAt: try row["created_at"])
    }
}

extension EntityRecord {
    static let columns = "list_name, entity_id, label, properties, version, conflict, created_by, created_at, updated_at, deleted_at"
    init(row: Row) throws {
        self.init(listName: try row["list_name"], entityId: try row["entity_id"], label: try row["label"],
                  properties: EntityText.values(try row["properties"]), version: try row["version"], conflict: try row["conflict"],
                  createdBy: try row["created_by"], createdAt: try row["created_at"], updatedAt: try row["updated_at"],
                  deletedAt: try row["deleted_at"])
    }
}

extension EntityVersionRecord {
    /// The versions as `v`, their responses as `r` (LEFT JOIN).
    static let columns = """
        v.version, v.label, v.properties, v.base_version, v.conflict, v.source, v.response_id, r.client_submission_id, v.actor, v.created_at
        """
    static let from = "entity_versions v LEFT JOIN responses r ON r.org_id = v.org_id AND r.response_id = v.response_id"
    init(row: Row) throws {
        self.init(version: try row["version"], label: try row["label"], properties: EntityText.values(try row["properties"]),
                  baseVersion: try row["base_version"], conflict: try row["conflict"], source: try row["source"],
                  responseId: try row["response_id"], instanceID: try row["client_submission_id"], actor: try row["actor"],
                  createdAt: try row["created_at"])
    }
}

/// What a listing of entities is narrowed to: a conflict mark, changes strictly after a time, a
/// text in the label (either case).
public struct EntityFilter: Sendable, Equatable {
    public var conflict: String?
    public var updatedAfter: Int64?
    public var search: String?
    public init(conflict: String? = nil, updatedAfter: Int64? = nil, search: String? = nil) {
        self.conflict = conflict; self.updatedAfter = updatedAfter; self.search = search
    }
}

/// The JSON text the tables keep properties in: canonical, so equal values are equal text.
enum EntityText {
    static func names(_ text: String) -> [String] {
        ((try? JSONParser.parse(Array(text.utf8)))?.arrayValue ?? []).compactMap(\.stringValue)
    }

    static func values(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for (k, v) in (try? JSONParser.parse(Array(text.utf8)))?.objectValue ?? [:] { if let s = v.stringValue { out[k] = s } }
        return out
    }

    static func text(_ names: [String]) -> String {
        String(decoding: CanonicalJSON.encode(.array(names.map(JSONValue.string))), as: UTF8.self)
    }

    static func text(_ values: [String: String]) -> String {
        String(decoding: CanonicalJSON.encode(.object(values.mapValues(JSONValue.string))), as: UTF8.self)
    }
}

extension ReadContext {
    /// Updates of any organization that have waited since before `receivedBefore`, oldest first.
    public func overdueWaitingEntityChanges(receivedBefore: Int64, limit: Int)
        throws -> [(orgId: String, responseId: String, list: String, entityId: String, actor: String)] {
        try conn.query("""
            SELECT org_id, response_id, list_name, entity_id, actor FROM entity_waiting WHERE received_at < ?
            ORDER BY received_at, response_id LIMIT ?
            """, [.int(receivedBefore), .int(Int64(limit))]).map {
            (try $0.string("org_id"), try $0.string("response_id"), try $0.string("list_name"), try $0.string("entity_id"), try $0.string("actor"))
        }
    }

    /// A page of the organization's lists, in name order after `after`.
    public func entityLists(orgId: String, after: String? = nil, limit: Int = 500) throws -> [EntityListRecord] {
        try conn.query("SELECT \(EntityListRecord.columns) FROM entity_lists WHERE org_id = ? AND name > ? ORDER BY name LIMIT ?",
                       [.text(orgId), .text(after ?? ""), .int(Int64(max(0, limit)))]).map(EntityListRecord.init)
    }

    public func entityList(orgId: String, name: String) throws -> EntityListRecord? {
        try conn.query("SELECT \(EntityListRecord.columns) FROM entity_lists WHERE org_id = ? AND name = ?", [.text(orgId), .text(name)])
            .first.map(EntityListRecord.init)
    }

    /// An entity, deleted or not.
    public func entity(orgId: String, list: String, entityId: String) throws -> EntityRecord? {
        try conn.query("SELECT \(EntityRecord.columns) FROM entities WHERE org_id = ? AND list_name = ? AND entity_id = ?",
                       [.text(orgId), .text(list), .text(entityId)]).first.map(EntityRecord.init)
    }

    /// A page of a list's entities that are not deleted, in id order after `after`, narrowed by
    /// `filter`.
    public func entities(orgId: String, list: String, after: String?, limit: Int, filter: EntityFilter = EntityFilter()) throws -> [EntityRecord] {
        var sql = """
            SELECT \(EntityRecord.columns) FROM entities
            WHERE org_id = ? AND list_name = ? AND deleted_at IS NULL AND entity_id > ?
            """
        var args: [SQLValue] = [.text(orgId), .text(list), .text(after ?? "")]
        if let conflict = filter.conflict { sql += " AND conflict = ?"; args.append(.text(conflict)) }
        if let updatedAfter = filter.updatedAfter { sql += " AND updated_at > ?"; args.append(.int(updatedAfter)) }
        if let search = filter.search, !search.isEmpty {
            // A substring of the label, either case; `%`, `_` and `\` in it are themselves.
            var pattern = "%"
            for c in search.lowercased() {
                if c == "%" || c == "_" || c == "\\" { pattern.append("\\") }
                pattern.append(c)
            }
            sql += " AND lower(label) LIKE ? ESCAPE '\\'"
            args.append(.text(pattern + "%"))
        }
        sql += " ORDER BY entity_id LIMIT ?"
        args.append(.int(Int64(max(0, limit))))
        return try conn.query(sql, args).map(EntityRecord.init)
    }

    /// An entity's versions from `after` (exclusive), oldest first.
    public func entityVersions(orgId: String, list: String, entityId: String, after: Int64 = 0, limit: Int = 500) throws -> [EntityVersionRecord] {
        try conn.query("""
            SELECT \(EntityVersionRecord.columns) FROM \(EntityVersionRecord.from)
            WHERE v.org_id = ? AND v.list_name = ? AND v.entity_id = ? AND v.version > ? ORDER BY v.version LIMIT ?
            """, [.text(orgId), .text(list), .text(entityId), .int(after), .int(Int64(max(0, limit)))]).map(EntityVersionRecord.init)
    }

    public func entityVersion(orgId: String, list: String, entityId: String, version: Int64) throws -> EntityVersionRecord? {
        try conn.query("""
            SELECT \(EntityVersionRecord.columns) FROM \(EntityVersionRecord.from)
            WHERE v.org_id = ? AND v.list_name = ? AND v.entity_id = ? AND v.version = ?
            """, [.text(orgId), .text(list), .text(entityId), .int(version)]).first.map(EntityVersionRecord.init)
    }
}

extension GatedTransaction {
    /// A new list with its label and properties, in the order given.
    public func createEntityList(name: String, label: String, properties: [String]) throws {
        try context.conn.run("""
            INSERT INTO entity_lists(org_id, name, label, properties, revision, created_at) VALUES (?, ?, ?, ?, 1, ?)
            """, [.text(orgId), .text(name), .text(label), .text(EntityText.text(properties)), .int(now)])
    }

    /// The list with `properties` added where it lacks them (created when it is new); its
    /// revision rises when it changes, so phones fetch its CSV (a new column) again.
    @discardableResult
    public func declareEntityList(name: String, properties: [String]) throws -> EntityListRecord {
        let conn = context.conn
        guard let list = try read.entityList(orgId: orgId, name: name) else {
            let names = Array(Set(properties)).sorted()
            try conn.run("""
                INSERT INTO entity_lists(org_id, name, label, properties, revision, created_at) VALUES (?, ?, ?, ?, 1, ?)
                """, [.text(orgId), .text(name), .text(name), .text(EntityText.text(names)), .int(now)])
            return EntityListRecord(name: name, label: name, properties: names, revision: 1, createdAt: now)
        }
        let new = Array(Set(properties).subtracting(list.properties)).sorted()
        guard !new.isEmpty else { return list }
        let names = list.properties + new
        try conn.run("UPDATE entity_lists SET properties = ?, revision = revision + 1 WHERE org_id = ? AND name = ?",
                     [.text(EntityText.text(names)), .text(orgId), .text(name)])
        return EntityListRecord(name: name, label: list.label, properties: names, revision: list.revision + 1, createdAt: list.createdAt)
    }

    /// An entity read to be changed in this transaction: on PostgreSQL its row stays locked until
    /// the commit, so two processes' changes of one entity apply one after the other (SQLite has
    /// one writer).
    public func lockedEntity(list: String, entityId: String) throws -> EntityRecord? {
        let lock = context.conn.dialect == .postgres ? " FOR UPDATE" : ""
        return try context.conn.query(
            "SELECT \(EntityRecord.columns) FROM entities WHERE org_id = ? AND list_name = ? AND entity_id = ?" + lock,
            [.text(orgId), .text(list), .text(entityId)]).first.map(EntityRecord.init)
    }

    /// A new entity at version 1, with its first version.
    /// False, writing nothing, when the entity exists: on PostgreSQL another transaction may have
    /// created it since this one looked (the insert waits for it to commit, then does nothing).
    @discardableResult
    public func insertEntity(_ e: EntityRecord, source: String, responseId: String?, actor: String) throws -> Bool {
        let inserted = try context.conn.query("""
            INSERT INTO entities(org_id, list_name, entity_id, label, properties, version, conflict, created_by, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?) ON CONFLICT (org_id, list_name, entity_id) DO NOTHING RETURNING entity_id
            """, [.text(orgId), .text(e.listName), .text(e.entityId), .text(e.label), .text(EntityText.text(e.properties)),
                  e.conflict.map { .text($0) } ?? .null, .text(e.createdBy), .int(now), .int(now)])
        guard !inserted.isEmpty else { return false }
        try insertVersion(e, baseVersion: nil, conflict: e.conflict, source: source, responseId: responseId, actor: actor)
        try touchList(e.listName, declaring: Array(e.properties.keys))
        return true
    }

    /// The entity's next version: `e` as it is after the change (its `version` one more than
    /// `expectedVersion`, the one read in this transaction), and the version row saying what made it.
    public func updateEntity(_ e: EntityRecord, expectedVersion: Int64, baseVersion: Int64?, trunkVersion: Int64? = nil, branchId: String? = nil,
                             markedConflict: String?, source: String, responseId: String?, actor: String) throws {
        let properties = EntityText.text(e.properties)
        try context.conn.run("""
            UPDATE entities SET label = ?, properties = ?, version = ?, conflict = ?, updated_at = ?
            WHERE org_id = ? AND list_name = ? AND entity_id = ? AND version = ?
            """, [.text(e.label), .text(properties), .int(e.version), .optional(e.conflict), .int(now),
                  .text(orgId), .text(e.listName), .text(e.entityId), .int(expectedVersion)])
        // The row was read locked (`lockedEntity`): anything else is a bug, and nothing is kept.
        guard context.conn.changes == 1 else {
            throw ApiError(.internalError, "The entity \(e.entityId) changed while a change of it was applied; nothing was written.")
        }
        try insertVersion(e, properties: properties, baseVersion: baseVersion, trunkVersion: trunkVersion, branchId: branchId,
                          conflict: markedConflict, source: source, responseId: responseId, actor: actor)
        try touchList(e.listName, declaring: Array(e.properties.keys))
    }

    private func insertVersion(_ e: EntityRecord, properties: String? = nil, baseVersion: Int64?, trunkVersion: Int64? = nil, branchId: String? = nil,
                               conflict: String?, source: String, responseId: String?, actor: String) throws {
        try context.conn.run("""
            INSERT INTO entity_versions(org_id, list_name, entity_id, version, label, properties, base_version, trunk_version, branch_id,
                                        conflict, source, response_id, actor, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(orgId), .text(e.listName), .text(e.entityId), .int(e.version), .text(e.label), .text(properties ?? EntityText.text(e.properties)),
                  .optional(baseVersion), .optional(trunkVersion), .optional(branchId), .optional(conflict), .text(source), .optional(responseId),
                  .text(actor), .int(now)])
    }

    /// The version the update of a phone's branch that was made from `baseVersion` produced here, if it has arrived.
    public func branchVersion(list: String, entityId: String, branchId: String, baseVersion: Int64) throws -> Int64? {
        try context.conn.query("""
            SELECT version FROM entity_versions WHERE org_id = ? AND list_name = ? AND entity_id = ? AND branch_id = ? AND base_version = ?
            ORDER BY version LIMIT 1
            """, [.text(orgId), .text(list), .text(entityId), .text(branchId), .int(baseVersion)]).first?.int("version")
    }

    /// An update kept until what it follows arrives (`change`: its JSON), in the submission's transaction.
    public func insertWaitingEntityChange(list: String, entityId: String, responseId: String, change: String, actor: String) throws {
        try context.conn.run("""
            INSERT INTO entity_waiting(org_id, response_id, list_name, entity_id, change, actor, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.text(orgId), .text(responseId), .text(list), .text(entityId), .text(change), .text(actor), .int(now)])
    }

    /// The updates waiting for an entity, oldest first: (response id, change JSON, actor).
    public func waitingEntityChanges(list: String, entityId: String) throws -> [(responseId: String, change: String, actor: String)] {
        try context.conn.query("""
            SELECT response_id, change, actor FROM entity_waiting WHERE org_id = ? AND list_name = ? AND entity_id = ?
            ORDER BY received_at, response_id
            """, [.text(orgId), .text(list), .text(entityId)]).map { (try $0.string("response_id"), try $0.string("change"), try $0.string("actor")) }
    }

    /// A response's waiting update of one entity (a response may name several entities).
    public func deleteWaitingEntityChange(responseId: String, list: String, entityId: String) throws {
        try context.conn.run("DELETE FROM entity_waiting WHERE org_id = ? AND response_id = ? AND list_name = ? AND entity_id = ?",
                             [.text(orgId), .text(responseId), .text(list), .text(entityId)])
    }

    /// Deletes (a time) or restores (nil) an entity; it leaves or rejoins its list's CSV, so the
    /// list's revision rises. False when it was already so.
    @discardableResult
    public func setEntityDeleted(list: String, entityId: String, at deletedAt: Int64?) throws -> Bool {
        let was = deletedAt == nil ? "deleted_at IS NOT NULL" : "deleted_at IS NULL"
        try context.conn.run("""
            UPDATE entities SET deleted_at = ?, updated_at = ? WHERE org_id = ? AND list_name = ? AND entity_id = ? AND \(was)
            """, [.optional(deletedAt), .int(now), .text(orgId), .text(list), .text(entityId)])
        guard context.conn.changes == 1 else { return false }
        try touchList(list)
        return true
    }

    /// Raises the list's revision (its CSV changed, so does the manifest hash). `declaring`: the
    /// properties the change wrote, added where the list lacks them (created when it is new) —
    /// read back from the same statement, so a submission's change reads the list no more.
    private func touchList(_ name: String, declaring properties: [String] = []) throws {
        let rows = try context.conn.query("UPDATE entity_lists SET revision = revision + 1 WHERE org_id = ? AND name = ? RETURNING properties",
                                          [.text(orgId), .text(name)])
        guard let row = rows.first else {
            if !properties.isEmpty { try declareEntityList(name: name, properties: properties) }
            return
        }
        guard !properties.isEmpty else { return }
        let known = EntityText.names(try row.string("properties"))
        let new = Array(Set(properties).subtracting(known)).sorted()
        guard !new.isEmpty else { return }
        try context.conn.run("UPDATE entity_lists SET properties = ? WHERE org_id = ? AND name = ?",
                             [.text(EntityText.text(known + new)), .text(orgId), .text(name)])
    }
}
