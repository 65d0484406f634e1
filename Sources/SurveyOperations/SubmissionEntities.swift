import SurveyDomain
import SurveyForms

/// Every entity change one submission makes (Docs/entities.md): its `entity` (the form's root)
/// and each item of its `entities` (a group's, or one repeat instance's: Entities 2025.1), read
/// in step 4 with the rest of the request and applied in its transaction in document order.
/// 422 / 1002 at the member's path for what the form does not declare.
enum SubmissionEntities {
    /// The most items `entities` may hold: one per repeat instance, bounded like the answers.
    static let maxItems = 10_000

    static func changes(entity: JSONValue?, entities: JSONValue?, definition: SurveyDefinition, answers: JSONValue) throws(ApiError) -> [EntityChange] {
        var out: [EntityChange] = []
        if let c = try EntityChange(entity, declaration: definition.entity, answers: answers) { out.append(c) }
        if let entities {
            guard let items = entities.arrayValue, items.count <= maxItems else {
                throw EntityChange.invalid("entities", "must be an array of at most \(maxItems) entity changes, each {container, index?, id, create or update, …}")
            }
            var seen: Set<String> = []
            // Each container's repeat, found once (a walk of the form's nodes), not once per item.
            var repeats: [String: String] = [:]
            for c in definition.entities.compactMap(\.container) { repeats[c] = definition.repeatHolding(c) }
            for (i, item) in items.enumerated() {
                let at = "entities[\(i)]"
                guard let container = item["container"]?.stringValue,
                      let declaration = definition.entities.first(where: { $0.container == container }) else {
                    let known = definition.entities.compactMap(\.container)
                    throw EntityChange.invalid("\(at).container", known.isEmpty
                        ? "the survey version's form declares no entity of a group or repeat"
                        : "must name a group or repeat the form declares an entity in: \(known.joined(separator: ", "))")
                }
                // A repeat's entity reads the answers of its instance; a group's outside repeats, the form's.
                var scope = answers
                let index = item["index"].flatMap { $0.isNull ? nil : $0 }
                if let repeatId = repeats[container] {
                    guard let n = index?.intValue, n >= 0 else {
                        throw EntityChange.invalid("\(at).index", "must be the instance of \(repeatId) it is in, counted from 0")
                    }
                    guard let instances = answers[repeatId]?.arrayValue, n < instances.count else {
                        throw EntityChange.invalid("\(at).index", "names no instance of \(repeatId) among the answers")
                    }
                    scope = instances[n]
                } else if index != nil {
                    throw EntityChange.invalid("\(at).index", "\(container) is in no repeat: send no index")
                }
                guard seen.insert(container + "#" + String(index?.intValue ?? -1)).inserted else {
                    throw EntityChange.invalid(at, "another item names the same \(container)\(index.map { " instance \($0.intValue ?? 0)" } ?? "")")
                }
                if let c = try EntityChange(item, declaration: declaration, answers: scope, path: at) { out.append(c) }
            }
        }
        // One change per entity: a submission saying two things of one entity says neither clearly.
        var named: Set<String> = []
        for c in out where !named.insert(c.list + "/" + c.entityId).inserted {
            throw EntityChange.invalid("entities", "names the entity \(c.entityId) of \(c.list) twice: a submission changes an entity once")
        }
        return out
    }
}
