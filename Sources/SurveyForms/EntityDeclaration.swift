import SurveyExpressions

/// What a form does to an entity list (`"entity"` of a definition, or an item of `"entities"`,
/// `Docs/entities.md`): the list it creates or updates entities of, when, the label and which
/// answer is saved to which property, and the group or repeat it is declared in (Entities
/// 2025.1: one entity per repeat instance). The conditions and the label are kept for the devices, which evaluate them; the
/// server takes what a submission says it did (its `meta/entity`, or the JSON door's `entity`).
public struct EntityDeclaration: Sendable, Equatable {
    /// The entity list's name (an XLSForm `list_name`).
    public let list: String
    /// Whether the form may create an entity: always (`true`), by a condition, or never.
    public let create: Condition
    public let update: Condition
    /// How the device makes the entity's id (absent: a new UUID on create).
    public let id: String?
    /// How the device makes the entity's label.
    public let label: String?
    /// Question id → property name, sorted by question id.
    public let saveTo: [SaveTo]
    /// The ODK Entities specification version the XForm declares, as written there.
    public let specVersion: String?
    /// The id of the group or repeat whose `meta/entity` this is; nil: the form's root.
    public let container: String?

    /// An answer saved to a property.
    public struct SaveTo: Sendable, Equatable {
        public let questionId: String
        public let property: String
    }

    public enum Condition: Sendable, Equatable {
        case never
        case always
        case when(String)
    }

    /// The file a form names to read the list's entities (`select_one_from_file households.csv`).
    public var fileName: String { list + ".csv" }

    /// The properties the form writes, each once, sorted.
    public var properties: [String] { Array(Set(saveTo.map(\.property))).sorted() }

    /// An answer as an entity property holds it, as ODK apps write it (and the server and the sync
    /// library store it): a number as its shortest text, a point as `lat lon altitude accuracy`,
    /// several choices separated by spaces, a line or shape's points by `;`.
    public static func propertyText(_ value: JSONValue) -> String? {
        switch value {
        case .null: return nil
        case .string(let s): return s
        case .bool(let b): return b ? "true" : "false"
        case .number(let d): return CanonicalJSON.number(d)
        case .array(let items):
            return items.map { propertyText($0) ?? "" }.joined(separator: items.contains { $0.objectValue != nil } ? ";" : " ")
        case .object(let o):
            if let upload = o["clientUploadId"]?.stringValue { return upload }
            guard let lat = o["lat"]?.doubleValue, let lon = o["lon"]?.doubleValue else { return nil }
            return [lat, lon, o["altitude"]?.doubleValue ?? 0, o["accuracy"]?.doubleValue ?? 0].map(CanonicalJSON.number).joined(separator: " ")
        }
    }

    /// Names a property cannot have: the CSV's own columns, and ODK's reserved prefix.
    public static func isReservedProperty(_ name: String) -> Bool {
        name == "name" || name == "label" || name.hasPrefix("__")
    }

    /// An XML name without a colon (`[A-Za-z_][A-Za-z0-9._-]*`, at most 255 bytes): what ODK
    /// allows for a list's and a property's name. Non-ASCII letters are refused too, which keeps
    /// every name a plain CSV header and an OData identifier.
    public static func isName(_ s: String) -> Bool {
        let u = s.utf8
        guard let first = u.first, (1...255).contains(u.count) else { return false }
        func letter(_ b: UInt8) -> Bool { (b | 0x20) >= UInt8(ascii: "a") && (b | 0x20) <= UInt8(ascii: "z") }
        guard letter(first) || first == UInt8(ascii: "_") else { return false }
        return u.allSatisfy { b in
            letter(b) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
        }
    }

    /// Reads `"entity"`, or an item of `"entities"` (`inList`: it may name its `container`).
    /// Where its questions are is checked with the nodes (`SurveyDefinition`). Errors are
    /// appended with paths under `path`.
    static func parse(_ json: JSONValue, path: String, inList: Bool = false, errors: inout [FieldError]) -> EntityDeclaration? {
        guard let o = json.objectValue else {
            errors.append(FieldError(path: path, message: "must be an object")); return nil
        }
        let before = errors.count
        func fail(_ at: String, _ message: String) { errors.append(FieldError(path: "\(path).\(at)", message: message)) }
        func expression(_ key: String) -> String? {
            guard let v = o[key], !v.isNull else { return nil }
            guard let s = v.stringValue, !s.isEmpty else { fail(key, "must be an expression"); return nil }
            do { _ = try Expression(s) } catch { fail(key, "is not an expression: \(error)") }
            return s
        }
        func condition(_ key: String) -> Condition {
            guard let v = o[key], !v.isNull else { return .never }
            if let b = v.boolValue { return b ? .always : .never }
            return expression(key).map(Condition.when) ?? .never
        }
        var list = ""
        if let l = o["list"]?.stringValue, isName(l) { list = l } else { fail("list", "must be an XML name (the entity list's name)") }
        let create = condition("create"), update = condition("update")
        if create == .never && update == .never { fail("create", "a form with an entity creates or updates it: give create or update") }
        let id = expression("id"), label = expression("label")
        var saveTo: [SaveTo] = []
        if let s = o["saveTo"], !s.isNull {
            if let m = s.objectValue {
                var seen: [String: String] = [:]
                for q in m.keys.sorted() {
                    guard let p = m[q]?.stringValue, isName(p), !isReservedProperty(p) else {
                        fail("saveTo.\(q)", "must be a property name: an XML name, not name, label or one starting with __"); continue
                    }
                    if let other = seen[p] { fail("saveTo.\(q)", "saves to \(p), which \(other) saves to already"); continue }
                    seen[p] = q
                    saveTo.append(SaveTo(questionId: q, property: p))
                }
            } else {
                fail("saveTo", "must be an object of question id to property name")
            }
        }
        var specVersion: String?
        if let v = o["specVersion"], !v.isNull {
            if let s = v.stringValue { specVersion = s } else { fail("specVersion", "must be a string") }
        }
        var container: String?
        if let c = o["container"], !c.isNull {
            if !inList {
                fail("container", "the entity of `entity` is the form's root's; an entity of a group or repeat goes in `entities`")
            } else if let s = c.stringValue, !s.isEmpty {
                container = s
            } else {
                fail("container", "must be the id of a group or repeat")
            }
        }
        guard errors.count == before else { return nil }
        return EntityDeclaration(list: list, create: create, update: update, id: id, label: label, saveTo: saveTo, specVersion: specVersion,
                                 container: container)
    }

    /// The declaration as the definition holds it.
    public var json: JSONValue {
        var o: [String: JSONValue] = ["list": .string(list)]
        func value(_ c: Condition) -> JSONValue? {
            switch c {
            case .always: return .bool(true)
            case .when(let s): return .string(s)
            case .never: return nil
            }
        }
        o["create"] = value(create)
        o["update"] = value(update)
        if let id { o["id"] = .string(id) }
        if let label { o["label"] = .string(label) }
        if !saveTo.isEmpty {
            var m: [String: JSONValue] = [:]
            for s in saveTo { m[s.questionId] = .string(s.property) }
            o["saveTo"] = .object(m)
        }
        if let specVersion { o["specVersion"] = .string(specVersion) }
        if let container { o["container"] = .string(container) }
        return .object(o)
    }
}

extension SurveyDefinition {
    /// Every list the form writes whose CSV a question reads (a select over `<list>.csv`), in
    /// declaration order, each once: served to phones with the form, from the list's entities.
    public var entityListsRead: [String] {
        let read = Set(questionById.values.compactMap { $0.choiceIndex.servedFile })
        var out: [String] = []
        for e in entities where read.contains(e.fileName) && !out.contains(e.list) { out.append(e.list) }
        return out
    }

    /// The repeat an entity's container is in (itself, when it is a repeat); nil for the root
    /// and for a group outside repeats: one entity per submission there.
    public func repeatHolding(_ container: String?) -> String? {
        container.flatMap { EntityPlacement(nodes).repeatHolding($0) }
    }

    /// The declaration at the form's root (`"entity"`), when there is one.
    public var entity: EntityDeclaration? { entities.first { $0.container == nil } }
}
