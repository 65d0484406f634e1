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
    /// entity this response made at the form's root. An edit that changes an answer saved to an
    /// entity of a group or repeat is refused (422 / 1002 at that answer): which of the response's
    /// entities it would change is not carried through an edit yet.
    static func plan(definition: SurveyDefinition, responseId: String, orgId: String, stored: String, edited: JSONValue,
                     in db: ReadContext) throws -> EntityEdit? {
        let before = (try? JSONParser.parse(Array(stored.utf8))) ?? .object([:])
        for declaration in definition.entities {
            guard let container = declaration.container else { continue }
            let repeatId = definition.repeatHolding(container)
            for s in declaration.saveTo {
                // The question's property text in each instance of its repeat (or once, in a group).
                func texts(_ answers: JSONValue) -> [String?] {
                    let instances = repeatId.map { answers[$0]?.arrayValue ?? [] } ?? [answers]
                    return instances.map { $0[s.questionId].flatMap(EntityDeclaration.propertyText) }
                }
                guard texts(before) == texts(edited) else {
                    let at = repeatId.map { "answers.\($0)" } ?? "answers.\(s.questionId)"
                    throw ApiError(.validationFailed, "The edit changes an answer saved to an entity of \(container), which an edit does not change yet.",
                                   errors: [FieldError(path: at, message: "\(s.questionId) is saved to the \(declaration.list) entity of \(container): keep its answers as they are, and correct the entity itself")])
                }
            }
        }
        guard let declaration = definition.entity, !declaration.saveTo.isEmpty else { return nil }
        var changed: [String: String] = [:]
        for s in declaration.saveTo {
            guard let now = edited[s.questionId].flatMap(EntityDeclaration.propertyText) else { continue }
            if before[s.questionId].flatMap(EntityDeclaration.propertyText) != now { changed[s.property] = now }
        }
        guard !changed.isEmpty else { return nil }
        // The root's entity: the one entity of its list the response made (with several, the
        // container entities of the same list make it ambiguous, and none is changed).
        let made = Set(try db.entityVersions(orgId: orgId, responseId: responseId).filter { $0.list == declaration.list }.map(\.entityId))
        guard made.count == 1, let entityId = made.first else { return nil }
        return EntityEdit(list: declaration.list, entityId: entityId, properties: changed)
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
