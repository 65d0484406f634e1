import SurveyDomain
import SurveyStorage

/// An admin's writes of entities through the API (Docs/entities.md): create, update (with the
/// version it was made from), delete and restore. Gated like every write, keyed by
/// `Idempotency-Key`, each with its audit entry; a refusal writes nothing.
public struct EntityWrites: Sendable {
    let operations: Operations

    public struct NewEntity: Sendable {
        public let id: String?
        public let label: String
        public let properties: [String: String]
        public init(id: String?, label: String, properties: [String: String]) { self.id = id; self.label = label; self.properties = properties }
    }

    public struct Change: Sendable {
        public let baseVersion: Int64?
        public let label: String?
        public let properties: [String: String]
        public let force: Bool
        public let resolve: Bool
        public init(baseVersion: Int64?, label: String?, properties: [String: String], force: Bool, resolve: Bool) {
            self.baseVersion = baseVersion; self.label = label; self.properties = properties; self.force = force; self.resolve = resolve
        }
    }

    public struct NewList: Sendable {
        public let name: String
        public let label: String?
        public let properties: [String]
        public init(name: String, label: String?, properties: [String]) { self.name = name; self.label = label; self.properties = properties }
    }

    /// A new entity list (forms that write to it create it too, when they are published). A name
    /// the organization has is 409 / 1004.
    public func createList(orgId: String, by user: UserRecord, key: IdempotencyKey<EntityListRecord>? = nil,
                           _ request: () throws -> NewList) throws -> KeyedOutcome<EntityListRecord> {
        let ops = operations
        try ops.member(user, of: orgId, withAnyOf: [.admin])
        return try ops.keyedWrite(orgId: orgId, caller: user.userId, target: "", key: key, prepare: { () throws -> NewList in
            let new = try request()
            var errors: [FieldError] = []
            if !EntityDeclaration.isName(new.name) { errors.append(FieldError(path: "name", message: "must be an XML name (letters, digits, _ - ., not starting with a digit)")) }
            if let label = new.label, label.isEmpty || label.count > 2000 { errors.append(FieldError(path: "label", message: "1 to 2000 characters")) }
            for (i, p) in new.properties.enumerated() where !EntityDeclaration.isName(p) || EntityDeclaration.isReservedProperty(p) {
                errors.append(FieldError(path: "properties[\(i)]", message: "must be a property name: an XML name, not name, label or one starting with __"))
            }
            if Set(new.properties).count != new.properties.count { errors.append(FieldError(path: "properties", message: "names a property twice")) }
            guard errors.isEmpty else { throw ApiError(.validationFailed, "The entity list is not valid.", errors: errors) }
            if try ops.database.read({ try $0.entityList(orgId: orgId, name: new.name) }) != nil { throw Self.listExists(new.name) }
            return new
        }, write: { new, tx in
            guard try tx.read.entityList(orgId: orgId, name: new.name) == nil else { throw Self.listExists(new.name) }
            try tx.createEntityList(name: new.name, label: new.label ?? new.name, properties: new.properties)
            try tx.audit(action: "entityList.create", targetType: "entityList", targetId: new.name)
            guard let stored = try tx.read.entityList(orgId: orgId, name: new.name) else { throw ApiError(.internalError) }
            return stored
        })
    }

    private static func listExists(_ name: String) -> ApiError {
        ApiError(.idempotencyConflict, "The organization already has an entity list \(name).")
    }

    public func create(orgId: String, list: String, by user: UserRecord, key: IdempotencyKey<EntityRecord>? = nil,
                       _ request: () throws -> NewEntity) throws -> KeyedOutcome<EntityRecord> {
        let ops = operations
        try ops.member(user, of: orgId, withAnyOf: [.admin])
        let record = try ops.database.read { try $0.entityList(orgId: orgId, name: list) }
        guard let record else { throw ApiError.notFound() }
        return try ops.keyedWrite(orgId: orgId, caller: user.userId, target: list, key: key, prepare: { () throws -> EntityRecord in
            let new = try request()
            if let id = new.id, !ClientIdentifier.isValid(id) {
                throw ApiError(.invalidIdentifier, "id must be 8–128 characters of A-Z a-z 0-9 _ - : . (a UUID).")
            }
            try Self.check(label: new.label, required: true, properties: new.properties, of: record)
            let id = new.id ?? Self.newId()
            if try ops.database.read({ try $0.entity(orgId: orgId, list: list, entityId: id) }) != nil { throw Self.exists(id) }
            let now = ops.clock.nowMillis()
            return EntityRecord(listName: list, entityId: id, label: new.label, properties: new.properties, version: 1, conflict: nil,
                                createdBy: user.userId, createdAt: now, updatedAt: now)
        }, write: { [actor = user.userId] e, tx in
            // Checked again in turn: a submission may have created it since.
            guard try tx.lockedEntity(list: list, entityId: e.entityId) == nil else { throw Self.exists(e.entityId) }
            guard try tx.insertEntity(e, source: "api", responseId: nil, actor: actor) else { throw Self.exists(e.entityId) }
            try EntityChange.audit(tx, "entity.create", list: list, entityId: e.entityId, version: 1)
            return try Self.stored(list, e.entityId, tx)
        })
    }

    /// Several entities at once, in one transaction: all are created or none (ODK Central's batch
    /// create). Each gets a new id; keyed only by `Idempotency-Key`, when one is sent.
    public func createMany(orgId: String, list: String, by user: UserRecord, key: IdempotencyKey<Int>? = nil,
                           _ request: () throws -> [NewEntity]) throws -> KeyedOutcome<Int> {
        let ops = operations
        try ops.member(user, of: orgId, withAnyOf: [.admin])
        let record = try ops.database.read { try $0.entityList(orgId: orgId, name: list) }
        guard let record else { throw ApiError.notFound() }
        return try ops.keyedWrite(orgId: orgId, caller: user.userId, target: list, key: key, prepare: { () throws -> [EntityRecord] in
            let batch = try request()
            guard !batch.isEmpty else { throw ApiError(.validationFailed, "The batch is empty.", errors: [FieldError(path: "entities", message: "at least one entity")]) }
            guard batch.count <= 50_000 else {
                throw ApiError(.validationFailed, "The batch is too large.", errors: [FieldError(path: "entities", message: "at most 50,000 entities at once")])
            }
            let now = ops.clock.nowMillis()
            return try batch.enumerated().map { i, new in
                do { try Self.check(label: new.label, required: true, properties: new.properties, of: record) } catch let e as ApiError {
                    throw ApiError(e.code, e.detail, errors: e.errors.map { FieldError(path: "entities[\(i)].\($0.path)", message: $0.message) })
                }
                return EntityRecord(listName: list, entityId: Self.newId(), label: new.label, properties: new.properties, version: 1, conflict: nil,
                                    createdBy: user.userId, createdAt: now, updatedAt: now)
            }
        }, write: { [actor = user.userId] entities, tx in
            for e in entities {
                try tx.insertEntity(e, source: "api", responseId: nil, actor: actor)
                try EntityChange.audit(tx, "entity.create", list: list, entityId: e.entityId, version: 1)
            }
            return entities.count
        })
    }

    /// A property added to a list (an XML name, not `name`, `label` or one starting with `__`);
    /// one it has already is the same answer and changes nothing.
    public func addProperty(orgId: String, list: String, name: String, by user: UserRecord) throws -> EntityListRecord {
        let ops = operations
        try ops.member(user, of: orgId, withAnyOf: [.admin])
        guard let record = try ops.database.read({ try $0.entityList(orgId: orgId, name: list) }) else { throw ApiError.notFound() }
        guard EntityDeclaration.isName(name), !EntityDeclaration.isReservedProperty(name) else {
            throw ApiError(.validationFailed, "The property name is not valid.",
                           errors: [FieldError(path: "name", message: "must be a property name: an XML name, not name, label or one starting with __")])
        }
        if record.properties.contains(name) { return record }
        let outcome = try ops.keyedWrite(orgId: orgId, caller: user.userId, target: list, key: nil, prepare: { () }, write: { _, tx in
            let stored = try tx.declareEntityList(name: list, properties: [name])
            try tx.audit(action: "entityList.update", targetType: "entityList", targetId: list)
            return stored
        })
        guard case .written(let stored) = outcome else { return record }
        return stored
    }

    /// Given properties replace their values, the others are kept. A `baseVersion` that is not
    /// the entity's version is 409 / 1021 with the current entity, unless `force`; `resolve`
    /// clears the conflict. `source`: the door the version records (`api`, `console`).
    public func update(orgId: String, list: String, entityId: String, by user: UserRecord, key: IdempotencyKey<EntityRecord>? = nil,
                       source: String = "api", _ request: () throws -> Change) throws -> KeyedOutcome<EntityRecord> {
        let ops = operations
        try ops.member(user, of: orgId, withAnyOf: [.admin])
        let (record, found) = try ops.database.read { db in
            (try db.entityList(orgId: orgId, name: list), try db.entity(orgId: orgId, list: list, entityId: entityId))
        }
        guard let record, let found, found.deletedAt == nil else { throw ApiError.notFound() }
        return try ops.keyedWrite(orgId: orgId, caller: user.userId, target: list + "/" + entityId, key: key, prepare: { () throws -> Change in
            let change = try request()
            guard change.baseVersion != nil || change.force || change.resolve else {
                throw ApiError.malformed("baseVersion is required (the version the change was made from), unless force or resolve is true.")
            }
            try Self.check(label: change.label, required: false, properties: change.properties, of: record)
            // Step 4: a stale version is reported as itself, never as 1001.
            try Self.checkVersion(change, found)
            return change
        }, write: { [actor = user.userId] change, tx in
            guard let current = try tx.lockedEntity(list: list, entityId: entityId), current.deletedAt == nil else { throw ApiError.notFound() }
            try Self.checkVersion(change, current)
            var values = current.properties
            for (k, v) in change.properties { values[k] = v }
            let next = EntityRecord(listName: list, entityId: entityId, label: change.label ?? current.label, properties: values,
                                    version: current.version + 1, conflict: change.resolve ? nil : current.conflict, createdBy: current.createdBy,
                                    createdAt: current.createdAt, updatedAt: tx.now)
            try tx.updateEntity(next, expectedVersion: current.version, baseVersion: change.baseVersion, markedConflict: nil, source: source,
                                responseId: nil, actor: actor)
            try EntityChange.audit(tx, "entity.update", list: list, entityId: entityId, version: next.version)
            return try Self.stored(list, entityId, tx)
        })
    }

    /// A soft delete (`deleted: true`: the entity leaves the list, its CSV and reads) or a restore.
    /// Done twice, the second is the same answer and changes nothing more.
    public func setDeleted(_ deleted: Bool, orgId: String, list: String, entityId: String, by user: UserRecord,
                           key: IdempotencyKey<EntityRecord>? = nil) throws -> KeyedOutcome<EntityRecord> {
        let ops = operations
        try ops.member(user, of: orgId, withAnyOf: [.admin])
        guard try ops.database.read({ try $0.entity(orgId: orgId, list: list, entityId: entityId) }) != nil else { throw ApiError.notFound() }
        return try ops.keyedWrite(orgId: orgId, caller: user.userId, target: list + "/" + entityId, key: key, prepare: { () }, write: { _, tx in
            guard try tx.lockedEntity(list: list, entityId: entityId) != nil else { throw ApiError.notFound() }
            try tx.setEntityDeleted(list: list, entityId: entityId, at: deleted ? tx.now : nil)
            // Audited even when it was already so: a key kept for it belongs to a write with its entry (`surveyd check`).
            try tx.audit(action: deleted ? "entity.delete" : "entity.restore", targetType: "entity", targetId: list + "/" + entityId)
            return try Self.stored(list, entityId, tx)
        })
    }

    /// A version-4 UUID, as phones make entity ids.
    static func newId() -> String {
        var b = Digest.randomBytes(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        let u = Array(Hex.encode(b).utf8)
        func s(_ r: Range<Int>) -> String { String(decoding: u[r], as: UTF8.self) }
        return "\(s(0..<8))-\(s(8..<12))-\(s(12..<16))-\(s(16..<20))-\(s(20..<32))"
    }

    private static func stored(_ list: String, _ entityId: String, _ tx: GatedTransaction) throws -> EntityRecord {
        guard let e = try tx.read.entity(orgId: tx.orgId, list: list, entityId: entityId) else { throw ApiError(.internalError) }
        return e
    }

    private static func exists(_ id: String) -> ApiError {
        ApiError(.idempotencyConflict, "The list already has an entity \(id); update it instead.")
    }

    private static func checkVersion(_ change: Change, _ current: EntityRecord) throws {
        guard !change.force, let base = change.baseVersion, base != current.version else { return }
        throw ApiError(.staleRevision, "The entity is at version \(current.version), not \(base): read it again and make the change from there.",
                       extra: ["current": current.document])
    }

    /// A label (1–2,000 characters; required on create) and properties the list has.
    private static func check(label: String?, required: Bool, properties: [String: String], of list: EntityListRecord) throws {
        var errors: [FieldError] = []
        if let label {
            if label.isEmpty || label.count > 2000 { errors.append(FieldError(path: "label", message: "1 to 2000 characters")) }
        } else if required {
            errors.append(FieldError(path: "label", message: "required"))
        }
        let known = Set(list.properties)
        for name in properties.keys.sorted() where !known.contains(name) {
            errors.append(FieldError(path: "properties.\(name)", message: "the list \(list.name) has no property \(name)"))
        }
        guard errors.isEmpty else { throw ApiError(.validationFailed, "The entity is not valid.", errors: errors) }
    }
}

extension Operations {
    public var entityWrites: EntityWrites { EntityWrites(operations: self) }
}
