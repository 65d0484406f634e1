import SurveyDomain
import SurveyStorage

/// What an edit of a response's answers does to the entity the response created or updated: the
/// properties its form saves whose answers the edit changed are set on the entity, as a new
/// version of it (`source` `submission`, this response), in the edit's own transaction. An
/// answer the edit removes sets nothing (as an unanswered question sets nothing); an entity
/// deleted since takes no change; a response that made no entity changes none.
struct EntityEdit: Sendable {
    let list: String
    let entityId: String
    let properties: [String: String]

    /// Read with the edit's checks (step 4); nil when the edit changes no saved property of an
    /// entity this response made.
    static func plan(definition: SurveyDefinition, responseId: String, orgId: String, stored: String, edited: JSONValue,
                     in db: ReadContext) throws -> EntityEdit? {
        guard let declaration = definition.entity, !declaration.saveTo.isEmpty else { return nil }
        let before = (try? JSONParser.parse(Array(stored.utf8))) ?? .object([:])
        var changed: [String: String] = [:]
        for s in declaration.saveTo {
            guard let now = edited[s.questionId].flatMap(EntityChange.text) else { continue }
            if before[s.questionId].flatMap(EntityChange.text) != now { changed[s.property] = now }
        }
        guard !changed.isEmpty, let made = try db.entityMade(orgId: orgId, byResponse: responseId), made.list == declaration.list else { return nil }
        return EntityEdit(list: made.list, entityId: made.entityId, properties: changed)
    }

    /// In the edit's transaction, after the gate.
    func apply(in tx: GatedTransaction, responseId: String, actor: String) throws {
        guard let existing = try tx.lockedEntity(list: list, entityId: entityId), existing.deletedAt == nil,
              existing.version < Int64(Int32.max) else { return }
        var values = existing.properties
        for (k, v) in properties { values[k] = v }
        guard values != existing.properties else { return }
        let next = EntityRecord(listName: list, entityId: entityId, label: existing.label, properties: values, version: existing.version + 1,
                                conflict: existing.conflict, createdBy: existing.createdBy, createdAt: existing.createdAt, updatedAt: tx.now)
        try tx.updateEntity(next, expectedVersion: existing.version, baseVersion: existing.version, markedConflict: nil,
                            source: "submission", responseId: responseId, actor: actor)
        try EntityChange.audit(tx, "entity.update", list: list, entityId: entityId, version: next.version)
    }
}
