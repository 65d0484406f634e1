import SurveyDomain

// The JSON documents of entity lists, entities and their versions (Docs/entities.md).

extension EntityListRecord {
    public var document: JSONValue {
        ["name": .string(name), "label": .string(label), "properties": .array(properties.map(JSONValue.string)),
         "createdAt": .string(Timestamp.format(createdAt))]
    }
}

extension EntityRecord {
    public var document: JSONValue {
        ["id": .string(entityId), "label": .string(label), "properties": .object(properties.mapValues(JSONValue.string)),
         "version": .number(Double(version)), "conflict": conflict.map(JSONValue.string) ?? .null,
         "createdAt": .string(Timestamp.format(createdAt)), "updatedAt": .string(Timestamp.format(updatedAt)),
         "createdBy": .string(createdBy), "deletedAt": deletedAt.map { .string(Timestamp.format($0)) } ?? .null]
    }
}

extension EntityVersionRecord {
    /// The version with what made it and what it changed since `previous` (`[{path, old, new}]`,
    /// `path` = `label` or `properties.<name>`; the first version's diff lists what it set).
    public func document(after previous: EntityVersionRecord?) -> JSONValue {
        var source: [String: JSONValue] = ["type": .string(self.source), "userId": .string(actor)]
        if let responseId { source["responseId"] = .string(responseId) }
        if let instanceID { source["instanceID"] = .string(instanceID) }
        var diff: [JSONValue] = []
        func change(_ path: String, _ old: String?, _ new: String?) {
            guard old != new else { return }
            diff.append(["path": .string(path), "old": old.map(JSONValue.string) ?? .null, "new": new.map(JSONValue.string) ?? .null])
        }
        change("label", previous?.label, label)
        for name in Set(properties.keys).union(previous?.properties.keys ?? [:].keys).sorted() {
            change("properties." + name, previous?.properties[name], properties[name])
        }
        return ["version": .number(Double(version)), "label": .string(label), "properties": .object(properties.mapValues(JSONValue.string)),
                "baseVersion": baseVersion.map { .number(Double($0)) } ?? .null, "conflict": conflict.map(JSONValue.string) ?? .null,
                "source": .object(source), "diff": .array(diff), "createdAt": .string(Timestamp.format(createdAt))]
    }
}
