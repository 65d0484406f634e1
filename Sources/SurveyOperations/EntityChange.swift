import SurveyDomain
import SurveyStorage

/// What one submission does to an entity (Docs/entities.md): read from what it says it did (its
/// `entity` member — the JSON door's, or the OpenRosa door's `meta/entity` — and the answers the
/// form saves to properties), checked with the rest of the request (step 4), and applied in the
/// submission's own transaction, after the gate. The device evaluated the form's conditions; the
/// server takes their outcome as sent.
struct EntityChange: Sendable {
    let list: String
    let entityId: String
    let create: Bool
    let update: Bool
    /// nil or empty: an update keeps the label.
    let label: String?
    /// The version the phone's update was made from; nil: the entity's current one.
    let baseVersion: Int64?
    /// A phone's offline updates (Entities 2024.1): the server version its branch started from
    /// (nil for an entity the phone created), and the branch, whose updates apply in its order.
    let trunkVersion: Int64?
    let branchId: String?
    /// Property → value, from the answers the form saves (an unanswered question sets nothing).
    let properties: [String: String]

    /// The change a submission makes, or nil when it makes none (no `entity`, or neither create
    /// nor update is true). 422 / 1002 at `entity.…` (`path`: where it was sent, `entities[2]`
    /// for one of a group or repeat) for what no form's submission can say. `answers`: the
    /// answers of the place it is declared in (the form's, or one repeat instance's).
    init?(_ json: JSONValue?, declaration: EntityDeclaration?, answers: JSONValue, path: String = "entity") throws(ApiError) {
        guard let json, !json.isNull else { return nil }
        guard let declaration else {
            throw Self.invalid(path, "the survey version's form has no entity at its root; send no entity")
        }
        guard let o = json.objectValue else { throw Self.invalid(path, "must be an object") }
        if let d = o["dataset"], !d.isNull, d.stringValue != declaration.list {
            throw Self.invalid("\(path).dataset", "must be \(declaration.list), the entity list the form writes")
        }
        func flag(_ key: String) throws(ApiError) -> Bool {
            guard let v = o[key], !v.isNull else { return false }
            guard let b = v.boolValue else { throw Self.invalid("\(path).\(key)", "must be a boolean") }
            return b
        }
        create = try flag("create")
        update = try flag("update")
        guard create || update else { return nil }
        if create && declaration.create == .never { throw Self.invalid("\(path).create", "the form does not create entities") }
        if update && !create && declaration.update == .never { throw Self.invalid("\(path).update", "the form does not update entities") }
        guard let id = o["id"]?.stringValue, ClientIdentifier.isValid(id) else {
            throw Self.invalid("\(path).id", "must be the entity's id: 8–128 characters of A-Z a-z 0-9 _ - : . (a UUID)")
        }
        var label: String?
        if let l = o["label"], !l.isNull {
            guard let s = l.stringValue else { throw Self.invalid("\(path).label", "must be a string") }
            label = s
        }
        func version(_ key: String) throws(ApiError) -> Int64? {
            guard let v = o[key], !v.isNull else { return nil }
            guard let n = v.intValue, n >= 1, n <= Int(Int32.max) else { throw Self.invalid("\(path).\(key)", "must be a version: an integer of at least 1") }
            return Int64(n)
        }
        baseVersion = try version("baseVersion")
        trunkVersion = try version("trunkVersion")
        if let b = o["branchId"], !b.isNull, b.stringValue == nil { throw Self.invalid("\(path).branchId", "must be a string") }
        branchId = o["branchId"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        list = declaration.list
        entityId = id
        self.label = label
        var properties: [String: String] = [:]
        for s in declaration.saveTo {
            if let value = answers[s.questionId], let text = EntityDeclaration.propertyText(value) { properties[s.property] = text }
        }
        self.properties = properties
    }

    static func invalid(_ path: String, _ message: String) -> ApiError {
        ApiError(.validationFailed, "The submission's entity cannot be applied.", errors: [FieldError(path: path, message: message)])
    }

    /// What applying did, for the submission's caller and its tests.
    enum Outcome: Sendable, Equatable {
        case created(version: Int64)
        case updated(version: Int64, conflict: String?)
        /// Kept until what it follows arrives: the entity's create, or its predecessor in its branch.
        case waiting
        /// Nothing changed: a create of an entity that exists, an update the form does not make.
        case unchanged
    }

    /// Applies the change in the submission's transaction, then every update of the entity that
    /// was waiting for it. An update made from an older version than the entity's current one
    /// still applies (the latest word wins, as ODK Central does) and marks the entity's conflict:
    /// `hard` when a property or the label it changes changed since its base version, else
    /// `soft`; the mark only rises until an admin resolves it. An update of an entity that does
    /// not exist yet, or whose predecessor in its phone's branch has not arrived, waits.
    @discardableResult
    func apply(in tx: GatedTransaction, responseId: String, actor: String) throws -> Outcome {
        // The list gets the properties it lacks with the change that writes them (`insertEntity`,
        // `updateEntity`): a waiting update writes none yet.
        guard let outcome = try applyNow(in: tx, responseId: responseId, actor: actor) else {
            try tx.insertWaitingEntityChange(list: list, entityId: entityId, responseId: responseId, change: json, actor: actor)
            return .waiting
        }
        if outcome != .unchanged { try applyWaiting(in: tx) }
        return outcome
    }

    /// The change applied, or nil when it must wait. `overdue`: it has waited past the limit
    /// (`applyOverdue`) and applies without what it waited for, marking a `soft` conflict.
    private func applyNow(in tx: GatedTransaction, responseId: String, actor: String, overdue: Bool = false) throws -> Outcome? {
        let existing = try tx.lockedEntity(list: list, entityId: entityId)
        guard let existing else {
            guard create || overdue else { return nil }
            // An update whose create never came makes the entity from what it says, for an admin to check.
            let marked: String? = create ? nil : "soft"
            let e = EntityRecord(listName: list, entityId: entityId, label: label.flatMap { $0.isEmpty ? nil : $0 } ?? entityId, properties: properties,
                                 version: 1, conflict: marked, createdBy: actor, createdAt: tx.now, updatedAt: tx.now)
            // Created meanwhile by another transaction (PostgreSQL): it exists now, go on as for one that did.
            guard try tx.insertEntity(e, source: "submission", responseId: responseId, actor: actor) else {
                guard try tx.lockedEntity(list: list, entityId: entityId) != nil else { throw ApiError(.internalError) }
                return try applyNow(in: tx, responseId: responseId, actor: actor, overdue: overdue)
            }
            try Self.audit(tx, "entity.create", list: list, entityId: entityId, version: 1)
            if marked != nil { try Self.audit(tx, "entity.conflict", list: list, entityId: entityId, version: 1) }
            return .created(version: 1)
        }
        // A deleted entity takes no change until an admin restores it.
        guard update, existing.deletedAt == nil else { return .unchanged }
        // The version this update was made from, as the server numbers it.
        var base = baseVersion ?? existing.version
        var predecessorMissing = false
        if let branchId, let sent = baseVersion {
            // A branch's first update was made from its trunk (an entity the phone created: version 1);
            // a later one from what its predecessor in the branch produced here.
            if sent > (trunkVersion ?? 1) {
                if let produced = try tx.branchVersion(list: list, entityId: entityId, branchId: branchId, baseVersion: sent - 1) {
                    base = produced
                } else if overdue {
                    base = existing.version
                    predecessorMissing = true
                } else {
                    return nil
                }
            }
        }
        var values = existing.properties
        for (k, v) in properties { values[k] = v }
        let newLabel = label.flatMap { $0.isEmpty ? nil : $0 } ?? existing.label
        var marked: String? = predecessorMissing ? "soft" : nil
        if base != existing.version {
            marked = Self.higher(marked, try conflict(base: base, current: existing, in: tx))
        }
        let conflict = Self.higher(existing.conflict, marked)
        guard existing.version < Int64(Int32.max) else { return .unchanged }
        let next = EntityRecord(listName: list, entityId: entityId, label: newLabel, properties: values, version: existing.version + 1,
                                conflict: conflict, createdBy: existing.createdBy, createdAt: existing.createdAt, updatedAt: tx.now)
        try tx.updateEntity(next, expectedVersion: existing.version, baseVersion: baseVersion, trunkVersion: trunkVersion, branchId: branchId,
                            markedConflict: marked, source: "submission", responseId: responseId, actor: actor)
        try Self.audit(tx, "entity.update", list: list, entityId: entityId, version: next.version)
        if marked != nil { try Self.audit(tx, "entity.conflict", list: list, entityId: entityId, version: next.version) }
        return .updated(version: next.version, conflict: conflict)
    }

    /// The waiting updates of this entity that can apply now, each in turn (one may let the next
    /// apply), in the order they arrived.
    private func applyWaiting(in tx: GatedTransaction) throws {
        var progressed = true
        while progressed {
            progressed = false
            for w in try tx.waitingEntityChanges(list: list, entityId: entityId) {
                guard let change = Self(waiting: w.change, list: list, entityId: entityId),
                      try change.applyNow(in: tx, responseId: w.responseId, actor: w.actor) != nil else { continue }
                try tx.deleteWaitingEntityChange(responseId: w.responseId, list: list, entityId: entityId)
                progressed = true
                break
            }
        }
    }

    /// A waiting update that has waited past the limit, applied all the same in `tx` (the gate's):
    /// an update of an entity whose create never arrived makes the entity, one whose predecessor
    /// in its phone's branch never arrived applies to the current version; either marks a `soft`
    /// conflict for an admin to check. Then whatever was waiting for it applies in turn. False
    /// when it no longer waits (it applied meanwhile).
    static func applyOverdue(responseId: String, list: String, entityId: String, actor: String, in tx: GatedTransaction) throws -> Bool {
        guard let w = try tx.waitingEntityChanges(list: list, entityId: entityId).first(where: { $0.responseId == responseId }) else { return false }
        try tx.deleteWaitingEntityChange(responseId: responseId, list: list, entityId: entityId)
        // Its own entry: that the wait ran out, whatever the update then did (a deleted entity takes none).
        try tx.audit(action: "entity.waitEnded", targetType: "entity", targetId: list + "/" + entityId)
        guard let change = Self(waiting: w.change, list: list, entityId: entityId) else { return true }
        try tx.declareEntityList(name: list, properties: Array(change.properties.keys))
        if let outcome = try change.applyNow(in: tx, responseId: responseId, actor: w.actor, overdue: true), outcome != .unchanged {
            try change.applyWaiting(in: tx)
        }
        return true
    }

    /// What a waiting update keeps of itself.
    private var json: String {
        var o: [String: JSONValue] = ["create": .bool(create), "update": .bool(update),
                                      "properties": .object(properties.mapValues(JSONValue.string))]
        if let label { o["label"] = .string(label) }
        if let baseVersion { o["baseVersion"] = .number(Double(baseVersion)) }
        if let trunkVersion { o["trunkVersion"] = .number(Double(trunkVersion)) }
        if let branchId { o["branchId"] = .string(branchId) }
        return String(decoding: CanonicalJSON.encode(.object(o)), as: UTF8.self)
    }

    private init?(waiting text: String, list: String, entityId: String) {
        guard let o = (try? JSONParser.parse(Array(text.utf8)))?.objectValue else { return nil }
        self.list = list
        self.entityId = entityId
        create = o["create"]?.boolValue ?? false
        update = o["update"]?.boolValue ?? false
        label = o["label"]?.stringValue
        baseVersion = o["baseVersion"]?.intValue.map(Int64.init)
        trunkVersion = o["trunkVersion"]?.intValue.map(Int64.init)
        branchId = o["branchId"]?.stringValue
        properties = (o["properties"]?.objectValue ?? [:]).compactMapValues(\.stringValue)
    }

    /// The conflict a late update marks: what it changes (its values that differ from its base
    /// version's) against what changed since its base version. A base the server has not seen
    /// (a later one than the entity's) is `soft`.
    private func conflict(base: Int64, current: EntityRecord, in tx: GatedTransaction) throws -> String {
        guard base < current.version, let then = try tx.read.entityVersion(orgId: tx.orgId, list: list, entityId: entityId, version: base) else {
            return "soft"
        }
        var changes = Set(properties.filter { then.properties[$0.key] != $0.value }.map { "properties." + $0.key })
        if let label, !label.isEmpty, label != then.label { changes.insert("label") }
        var since = Set(current.properties.filter { then.properties[$0.key] != $0.value }.map { "properties." + $0.key })
        for k in then.properties.keys where current.properties[k] == nil { since.insert("properties." + k) }
        if current.label != then.label { since.insert("label") }
        return changes.isDisjoint(with: since) ? "soft" : "hard"
    }

    /// The audit entry of an entity's change (`entity.create`, `entity.update`, `entity.conflict`:
    /// webhook events), its revision the version the change made.
    static func audit(_ tx: GatedTransaction, _ action: String, list: String, entityId: String, version: Int64) throws {
        try tx.audit(action: action, targetType: "entity", targetId: list + "/" + entityId, revision: version)
    }

    /// null < soft < hard.
    static func higher(_ a: String?, _ b: String?) -> String? {
        func rank(_ c: String?) -> Int { c == "hard" ? 2 : c == "soft" ? 1 : 0 }
        return rank(a) >= rank(b) ? a : b
    }
}
