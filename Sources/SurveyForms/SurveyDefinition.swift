import SurveyExpressions

/// A validated survey definition: `{"title": "...", "questions": [node, ...]}`, version 1 (a flat
/// list of questions) or version 2 (groups, repeats, notes, languages and logic, `Docs/forms.md`).
/// Only `parse` builds one, so every value of this type obeys the definition rules.
public struct SurveyDefinition: Sendable, Equatable {
    public let title: String
    /// Every question outside repeats, groups flattened, in order: the columns of a response.
    public let questions: [Question]
    /// The tree as written.
    public let nodes: [FormNode]
    public let defaultLanguage: String?
    /// The OpenRosa form id, when the definition names one.
    public let formId: String?
    /// Every language a label, hint or message names, in order of first appearance.
    public let languages: [String]
    let indexById: [String: Int]
    /// The rules of each of `questions`.
    let answerRules: [AnswerRules]
    /// Nil for a definition that a version-1 reading checks exactly (questions only, no logic).
    let structure: FormStructure?
    /// The RSA public key of an encrypted form (`encryption.publicKey`): its `nodes` are then the
    /// envelope ODK apps send in place of the answers (`EncryptedEnvelope`), not the form's.
    public let publicKey: String?

    init(title: String, nodes: [FormNode], defaultLanguage: String?, formId: String?, languages: [String], structure: FormStructure?,
         entities: [EntityDeclaration] = [], publicKey: String? = nil) {
        self.publicKey = publicKey
        self.title = title
        self.entities = entities
        self.nodes = nodes
        self.defaultLanguage = defaultLanguage
        self.formId = formId
        self.languages = languages
        self.structure = structure
        var flat: [Question] = [], everywhere: [String: Question] = [:]
        // Iterative: the tree's depth is bounded, but a walk need not rely on it.
        var stack: [(FormNode, insideRepeat: Bool)] = nodes.reversed().map { ($0, false) }
        while let (n, insideRepeat) = stack.popLast() {
            switch n.kind {
            case .question(let q):
                if !insideRepeat { flat.append(q) }
                if everywhere[q.id] == nil { everywhere[q.id] = q }
            case .group: stack += n.children.reversed().map { ($0, insideRepeat) }
            case .repeat: stack += n.children.reversed().map { ($0, true) }
            case .note: break
            }
        }
        self.questions = flat
        answerRules = flat.map(AnswerRules.init)
        self.questionById = everywhere
        var index: [String: Int] = [:]
        for (i, q) in flat.enumerated() where index[q.id] == nil { index[q.id] = i }
        self.indexById = index
    }

    /// Every question, inside repeats too.
    let questionById: [String: Question]
    /// What the form does to entity lists (`"entity"`, or `"entities"`), in document order: the
    /// one at the root first, then the groups' and repeats' as their nodes come.
    public let entities: [EntityDeclaration]

    /// A question by id, wherever it is in the tree (inside repeats too).
    public func question(id: String) -> Question? { questionById[id] }

    /// Every expression of the form as parsed, by the text it was written as: what writes the
    /// form out again (its XForm) reuses these instead of parsing the texts a second time.
    public var expressionsBySource: [String: Expression] {
        var out: [String: Expression] = [:]
        func add(_ logic: Logic?) { if let logic { out[logic.source] = logic.expression } }
        var stack = nodes
        while let node = stack.popLast() {
            add(node.relevant)
            switch node.kind {
            case .question(let q):
                add(q.logic.requiredWhen); add(q.logic.constraint); add(q.logic.readonly); add(q.logic.calculation); add(q.logic.choiceFilter)
            case .repeat(let counts): add(counts.repeatCount)
            case .note, .group: break
            }
            stack += node.children
        }
        return out
    }

    /// Checks a definition and reports every broken rule, with paths rooted at `definition`.
    /// Unknown properties are ignored (forward compatibility); a known property of the wrong
    /// type is an error. A property whose value is `null` counts as absent.
    public static func parse(_ json: JSONValue) throws(ValidationErrors) -> SurveyDefinition {
        var c = DefinitionChecker()
        let definition = c.definition(json, path: "definition")
        guard c.errors.isEmpty, let definition else { throw ValidationErrors(c.errors) }
        return definition
    }
}

/// One question. Type-specific properties are nil / empty for the types they do not apply to.
public struct Question: Sendable, Equatable {
    public let id: String
    public let type: QuestionType
    /// In the definition's default language.
    public let label: String
    public let labels: LocalizedText
    public let hint: LocalizedText?
    /// `required: true`; an expression is `logic.requiredWhen`.
    public let required: Bool
    /// `text`: the most Characters an answer may have.
    public let maxLength: Int?
    /// `integer` / `decimal`: inclusive bounds.
    public let minimum: Double?
    public let maximum: Double?
    /// `select_one` / `select_multiple`: the choices' names.
    public let choices: [String]
    /// The same choices with their labels and extra columns.
    public let options: [Choice]
    /// The choices by name, for a check that costs the same however many there are.
    public let choiceIndex: ChoiceIndex
    /// `file`: accepted MIME types, lowercased; `type/*` and `*/*` act as wildcards.
    public let accept: [String]
    /// `file`: the largest file this question takes (the server's own limit still applies).
    public let maxBytes: Int?
    public let logic: QuestionLogic
    /// Kept and passed through, never interpreted.
    public let appearance: String?

    /// Whether a declared upload type is in `accept` (case and parameters ignored).
    public func accepts(contentType: String) -> Bool {
        let type = FileSignature.normalizedType(contentType)
        guard let slash = type.firstIndex(of: "/") else { return false }
        let major = type[..<slash]
        // Sealed bytes are taken only where a question names their type itself.
        if type == FileSignature.sealedType { return accept.contains(type) }
        return accept.contains { pattern in
            pattern == type || pattern == "*/*"
                || (pattern.hasSuffix("/*") && pattern.dropLast(2) == major)
        }
    }
}

extension SurveyDefinition {
    /// A node's id: a letter followed by up to 63 letters, digits or underscores.
    public static func isValidId(_ s: String) -> Bool { DefinitionChecker.isValidQuestionId(s) }
}

/// Walks a definition collecting `FieldError`s rather than stopping at the first.
private struct DefinitionChecker {
    var errors: [FieldError] = []

    mutating func fail(_ path: String, _ message: String) {
        errors.append(FieldError(path: path, message: message))
    }

    /// A present, non-null property, or nil after recording "required".
    mutating func required(_ object: [String: JSONValue], _ key: String, _ path: String) -> JSONValue? {
        guard let v = object[key], !v.isNull else { fail("\(path).\(key)", "required"); return nil }
        return v
    }

    mutating func string(_ object: [String: JSONValue], _ key: String, _ path: String) -> String? {
        guard let v = required(object, key, path) else { return nil }
        guard let s = v.stringValue else { fail("\(path).\(key)", "must be a string"); return nil }
        return s
    }

    /// An optional positive integer; `.some(nil)` means absent, nil means invalid.
    mutating func positiveInt(_ object: [String: JSONValue], _ key: String, _ path: String) -> Int?? {
        guard let v = object[key], !v.isNull else { return .some(nil) }
        guard let n = v.intValue, n > 0 else { fail("\(path).\(key)", "must be a positive integer"); return nil }
        return .some(n)
    }

    /// Every id seen so far, anywhere in the tree: ids are unique across the whole definition.
    var seenIds: Set<String> = []
    var choiceLists: [String: [Choice]] = [:]
    var choiceIndexes: [String: ChoiceIndex] = [:]
    /// `lookupTables`: the CSV files `pulldata` reads, as columns and rows.
    var lookupTables: [String: (columns: [String], rows: [[String]])] = [:]
    var languages: [String] = []
    /// Whether any node needs the version-2 reading (structure or logic).
    var needsStructure = false
    /// Group and repeat nesting, bounded so that walking a tree never recurses without limit.
    var depth = 0
    static let maxDepth = 16
    static let maxNodes = 5_000
    /// The most entity declarations a form may make (one per group or repeat at most).
    static let maxEntities = 100
    var nodeCount = 0
    /// Read before the nodes: a question's `label` is its text in this language.
    var defaultLanguage: String?
    /// The files of the entity lists the form declares: a select naming one takes any entity's
    /// id, the list being served by the server rather than published with the version.
    var entityListFiles: Set<String> = []
    /// A draft's files not attached yet (`FormAttachments.pendingFilesKey`): a list read from
    /// one has no choices until it is.
    var pendingFiles: Set<String> = []

    mutating func definition(_ json: JSONValue, path: String) -> SurveyDefinition? {
        guard let object = json.objectValue else { fail(path, "must be an object"); return nil }

        let title = string(object, "title", path)
        if let title, title.allSatisfy(\.isWhitespace) { fail("\(path).title", "must not be empty") }
        defaultLanguage = optionalString(object, "defaultLanguage", path)
        let formId = optionalString(object, "formId", path)
        if let formId, formId.isEmpty || formId.utf8.count > 255 { fail("\(path).formId", "must be 1-255 characters") }
        if let lists = object["choiceLists"], !lists.isNull {
            if let o = lists.objectValue {
                for key in o.keys.sorted() {
                    let list = choices(o[key] ?? .null, "\(path).choiceLists.\(key)")
                    choiceLists[key] = list
                    choiceIndexes[key] = ChoiceIndex(list)
                }
            } else {
                fail("\(path).choiceLists", "must be an object of choice lists")
            }
            needsStructure = true
        }

        pendingFiles = Set(FormAttachments.pendingFiles(of: json))
        if let tables = object[FormAttachments.lookupTablesKey], !tables.isNull { lookupTables(tables, "\(path).\(FormAttachments.lookupTablesKey)") }
        // Read before the nodes: a select question may take its choices from a list's file.
        var entities: [EntityDeclaration] = [], entityPaths: [String] = []
        if let e = object["entity"], !e.isNull {
            if let d = EntityDeclaration.parse(e, path: "\(path).entity", errors: &errors) { entities.append(d); entityPaths.append("\(path).entity") }
        }
        if let e = object["entities"], !e.isNull {
            if object["entity"].map({ !$0.isNull }) == true {
                fail("\(path).entities", "give the entity at the root as an item of entities, or entities of groups and repeats only in entities: not both entity and entities")
            } else if let items = e.arrayValue, !items.isEmpty, items.count <= Self.maxEntities {
                for (i, item) in items.enumerated() {
                    let at = "\(path).entities[\(i)]"
                    if let d = EntityDeclaration.parse(item, path: at, inList: true, errors: &errors) { entities.append(d); entityPaths.append(at) }
                }
            } else {
                fail("\(path).entities", "must be an array of 1 to \(Self.maxEntities) entity declarations")
            }
        }
        entityListFiles = Set(entities.map(\.fileName))

        var nodes: [FormNode] = []
        var allValid = true
        if let list = required(object, "questions", path) {
            if let items = list.arrayValue {
                if items.isEmpty { fail("\(path).questions", "must not be empty") }
                (nodes, allValid) = self.nodes(items, path: "\(path).questions")
            } else {
                fail("\(path).questions", "must be an array")
            }
        }
        if let defaultLanguage, !languages.isEmpty, !languages.contains(defaultLanguage) {
            fail("\(path).defaultLanguage", "names no language of the labels (\(languages.joined(separator: ", ")))")
        }
        if !entities.isEmpty, allValid, errors.isEmpty {
            entities = EntityPlacement(nodes).place(entities, paths: entityPaths, errors: &errors)
        }
        guard errors.isEmpty, allValid, let title else { return nil }
        var structure: FormStructure?
        if needsStructure {
            let built = FormStructure.build(nodes, path: path, defaultLanguage: defaultLanguage, tables: boundTables(nodes))
            errors += built.errors
            guard errors.isEmpty else { return nil }
            structure = built.structure
        }
        if let encryption = object[EncryptedEnvelope.key], !encryption.isNull {
            // The form is checked as any other; its submissions are the envelope.
            guard let publicKey = publicKey(encryption, "\(path).\(EncryptedEnvelope.key)") else { return nil }
            guard entities.isEmpty else {
                fail("\(path).\(EncryptedEnvelope.key)", "an encrypted form cannot create or update entities: the server cannot read its sealed answers")
                return nil
            }
            guard let envelope = EncryptedEnvelope.parsed else { fail("\(path).\(EncryptedEnvelope.key)", "cannot be carried"); return nil }
            return SurveyDefinition(title: title, nodes: envelope.nodes, defaultLanguage: defaultLanguage, formId: formId,
                                    languages: languages, structure: envelope.structure, publicKey: publicKey)
        }
        return SurveyDefinition(title: title, nodes: nodes, defaultLanguage: defaultLanguage, formId: formId,
                                languages: languages, structure: structure, entities: entities)
    }

    /// `{"publicKey": "<base64>"}`: the form's RSA public key as ODK apps read it (base64 of its
    /// DER encoding, 64 to 8,192 characters).
    mutating func publicKey(_ v: JSONValue, _ path: String) -> String? {
        guard let key = v["publicKey"]?.stringValue else { fail("\(path).publicKey", "must be the form's RSA public key in base64"); return nil }
        let isBase64 = key.utf8.allSatisfy { b in
            Self.isLetter(b) || Self.isDigit(b) || b == UInt8(ascii: "+") || b == UInt8(ascii: "/") || b == UInt8(ascii: "=")
        }
        guard isBase64, (64...8_192).contains(key.utf8.count) else {
            fail("\(path).publicKey", "must be the form's RSA public key in base64 (64 to 8192 characters of A-Z a-z 0-9 + / =)")
            return nil
        }
        return key
    }

    /// `{"villages.csv": {"columns": [...], "rows": [[...], ...]}}`: every row as wide as the columns.
    mutating func lookupTables(_ v: JSONValue, _ path: String) {
        guard let o = v.objectValue else { fail(path, "must be an object of tables"); return }
        needsStructure = true
        for name in o.keys.sorted() {
            let at = "\(path).\(name)"
            guard let columns = o[name]?["columns"]?.arrayValue?.compactMap(\.stringValue), !columns.isEmpty,
                  columns.count == o[name]?["columns"]?.arrayValue?.count else {
                fail("\(at).columns", "must be a non-empty array of column names"); continue
            }
            guard let rows = o[name]?["rows"]?.arrayValue else { fail("\(at).rows", "must be an array of rows"); continue }
            var table: [[String]] = []
            table.reserveCapacity(rows.count)
            for (r, row) in rows.enumerated() {
                guard let fields = row.arrayValue, fields.count == columns.count else {
                    fail("\(at).rows[\(r)]", "must be an array of \(columns.count) strings"); break
                }
                let texts = fields.compactMap(\.stringValue)
                guard texts.count == columns.count else { fail("\(at).rows[\(r)]", "must be an array of \(columns.count) strings"); break }
                table.append(texts)
            }
            lookupTables[name] = (columns, table)
        }
    }

    /// The tables the nodes' `pulldata` calls read, each indexed by the key columns they name.
    func boundTables(_ nodes: [FormNode]) -> [String: LookupTable] {
        guard !lookupTables.isEmpty else { return [:] }
        var keyColumns: [String: Set<String>] = [:]
        var stack = nodes
        while let n = stack.popLast() {
            for (_, logic, _) in FormStructure.logic(of: n) {
                for l in logic.expression.lookups { keyColumns[l.fileName, default: []].insert(l.keyColumn) }
            }
            stack += n.children
        }
        var out: [String: LookupTable] = [:]
        for (name, t) in lookupTables { out[name] = LookupTable(columns: t.columns, rows: t.rows, keyColumns: keyColumns[name] ?? []) }
        return out
    }

    /// A list of nodes; false when one of them is unusable.
    mutating func nodes(_ items: [JSONValue], path: String) -> ([FormNode], Bool) {
        var out: [FormNode] = []
        var allValid = true
        var siblingNames: [String: (index: Int, explicit: Bool)] = [:]
        for (i, item) in items.enumerated() {
            let nodePath = "\(path)[\(i)]"
            nodeCount += 1
            if nodeCount == Self.maxNodes + 1 { fail(nodePath, "a definition holds at most \(Self.maxNodes) nodes") }
            if let n = node(item, path: nodePath) { out.append(n) } else { allValid = false }
            // Checked on the raw id so a duplicate is reported even if either node has other problems.
            if let id = item["id"]?.stringValue, Self.isValidQuestionId(id), !seenIds.insert(id).inserted {
                fail("\(nodePath).id", "duplicate id \"\(id)\"")
            }
            // Siblings are sibling elements of an XForm instance: a name given in place of the id
            // must not repeat one of theirs (the same id twice is reported above).
            let explicit = item["name"]?.stringValue
            if let name = explicit ?? item["id"]?.stringValue {
                if let other = siblingNames[name], explicit != nil || other.explicit {
                    fail("\(nodePath).name", "names the element \(name), as \(path)[\(other.index)] does; two nodes in one group need different names")
                } else if siblingNames[name] == nil {
                    siblingNames[name] = (i, explicit != nil)
                }
            }
        }
        return (out, allValid)
    }

    mutating func node(_ json: JSONValue, path: String) -> FormNode? {
        guard let o = json.objectValue else { fail(path, "must be an object"); return nil }
        let mediaValid = media(o, path)
        let (name, nameValid) = elementName(o, path)
        switch o["type"]?.stringValue {
        case "group", "repeat", "note":
            let node = structural(o, name: name, path: path)
            return mediaValid && nameValid ? node : nil
        default:
            guard let q = question(json, path: path), mediaValid, nameValid else { return nil }
            let relevant = logic(o, "relevant", path)
            return FormNode(id: q.id, name: name, kind: .question(q), label: q.labels, relevant: relevant ?? nil, children: [])
        }
    }

    /// `name`: the element an XForm names the node by, where it is not the id (two nodes of one
    /// name in different groups).
    mutating func elementName(_ o: [String: JSONValue], _ path: String) -> (String?, Bool) {
        guard let v = o["name"], !v.isNull else { return (nil, true) }
        guard let name = v.stringValue, Self.isElementName(name) else {
            fail("\(path).name", "must be an XML name: a letter or _, then up to 254 letters, digits, _, - or .")
            return (nil, false)
        }
        return (name, true)
    }

    /// An element name as ODK forms write them (`label-test`, `q1.2`): no namespace prefix.
    static func isElementName(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, (1...255).contains(s.unicodeScalars.count),
              first.properties.isAlphabetic || first == "_" else { return false }
        return s.unicodeScalars.allSatisfy { c in
            c.properties.isAlphabetic || c.properties.numericType != nil || c == "_" || c == "-" || c == "." || c.properties.isDiacritic
        }
    }

    /// A group, a repeat or a note.
    mutating func structural(_ o: [String: JSONValue], name: String?, path: String) -> FormNode? {
        needsStructure = true
        let before = errors.count
        let type = o["type"]?.stringValue ?? ""
        let id = string(o, "id", path)
        if let id, !Self.isValidQuestionId(id) {
            fail("\(path).id", "must be a letter followed by up to 63 letters, digits or underscores")
        }
        let label = type == "note" ? localized(o, "label", path, required: true) : localized(o, "label", path, required: false)
        let relevant = logic(o, "relevant", path)
        var children: [FormNode] = []
        var kind = FormNode.Kind.note
        if type == "group" || type == "repeat" {
            if depth >= Self.maxDepth {
                fail("\(path).children", "groups and repeats nest at most \(Self.maxDepth) deep")
            } else if let list = required(o, "children", path) {
                if let items = list.arrayValue, !items.isEmpty {
                    depth += 1
                    let (nodes, valid) = self.nodes(items, path: "\(path).children")
                    depth -= 1
                    if !valid, errors.count == before { fail("\(path).children", "has unusable nodes") }
                    children = nodes
                } else {
                    fail("\(path).children", "must be a non-empty array of nodes")
                }
            }
            kind = .group
        }
        if type == "repeat" {
            let minCount = count(o, "minCount", path), maxCount = count(o, "maxCount", path)
            if let minCount, let maxCount, minCount > maxCount { fail("\(path).maxCount", "must not be less than minCount") }
            kind = .repeat(RepeatCounts(minCount: minCount, maxCount: maxCount, repeatCount: logic(o, "repeatCount", path) ?? nil))
        }
        guard errors.count == before, let id else { return nil }
        return FormNode(id: id, name: name, kind: kind, label: label ?? nil, relevant: relevant ?? nil, children: children)
    }

    /// `media` of a node or a choice: files keyed by image, big-image, audio or video, each a
    /// name or names keyed by language. False when it is there and not of that shape.
    mutating func media(_ o: [String: JSONValue], _ path: String) -> Bool {
        guard let v = o["media"], !v.isNull else { return true }
        guard let forms = v.objectValue else {
            fail("\(path).media", "must be an object naming a file for image, big-image, audio or video"); return false
        }
        let before = errors.count
        func fileName(_ value: JSONValue?, _ at: String) {
            guard let name = value?.stringValue, (1...255).contains(name.unicodeScalars.count) else {
                fail(at, "must be a file name of 1 to 255 characters"); return
            }
        }
        for form in forms.keys.sorted() {
            let at = "\(path).media.\(form)"
            guard FormAttachments.mediaForms.contains(form) else { fail(at, "is not image, big-image, audio or video"); continue }
            if let byLanguage = forms[form]?.objectValue {
                for language in byLanguage.keys.sorted() { fileName(byLanguage[language], "\(at).\(language)") }
            } else {
                fileName(forms[form], at)
            }
        }
        return errors.count == before
    }

    /// An optional count >= 0.
    mutating func count(_ o: [String: JSONValue], _ key: String, _ path: String) -> Int? {
        guard let v = o[key], !v.isNull else { return nil }
        guard let n = v.intValue, n >= 0, n <= 1_000_000 else { fail("\(path).\(key)", "must be an integer from 0 to 1000000"); return nil }
        return n
    }

    mutating func optionalString(_ o: [String: JSONValue], _ key: String, _ path: String) -> String? {
        guard let v = o[key], !v.isNull else { return nil }
        guard let s = v.stringValue else { fail("\(path).\(key)", "must be a string"); return nil }
        return s
    }

    /// A string, or an object of strings keyed by language name. `.some(nil)`: absent.
    mutating func localized(_ o: [String: JSONValue], _ key: String, _ path: String, required: Bool) -> LocalizedText?? {
        guard let v = o[key], !v.isNull else {
            if required { fail("\(path).\(key)", "required") }
            return .some(nil)
        }
        if let s = v.stringValue { return LocalizedText(s) }
        guard let byLanguage = v.objectValue else { fail("\(path).\(key)", "must be a string"); return nil }
        guard !byLanguage.isEmpty else { fail("\(path).\(key)", "must name at least one language"); return nil }
        needsStructure = true
        var entries: [(language: String?, text: String)] = []
        // Sorted: the JSON object's order is not kept, and the choice of a fallback must not vary.
        for language in byLanguage.keys.sorted() {
            guard let text = byLanguage[language]?.stringValue else { fail("\(path).\(key).\(language)", "must be a string"); return nil }
            entries.append((language, text))
            if !languages.contains(language) { languages.append(language) }
        }
        return LocalizedText(entries: entries)
    }

    /// An expression property; `.some(nil)` when absent, nil when it does not parse.
    mutating func logic(_ o: [String: JSONValue], _ key: String, _ path: String) -> Logic?? {
        guard let v = o[key], !v.isNull else { return .some(nil) }
        guard let source = v.stringValue else { fail("\(path).\(key)", "must be an expression (a string)"); return nil }
        needsStructure = true
        do {
            return Logic(try Expression(source))
        } catch {
            fail("\(path).\(key)", "does not parse: \(error.message)"); return nil
        }
    }

    /// A list of choices: strings, or `{name, label, ...columns}` objects. A name comes back only
    /// with other columns than every choice of that name before it (cascading selects, where
    /// pyxform's `allow_choice_duplicates` puts the same village name under two districts, and the
    /// filter tells them apart).
    mutating func choices(_ v: JSONValue, _ path: String) -> [Choice] {
        guard let items = v.arrayValue else { fail(path, "must be an array"); return [] }
        if items.isEmpty { fail(path, "must not be empty") }
        var out: [Choice] = []
        var seen: [String: [[String: String]]] = [:]
        for (j, item) in items.enumerated() {
            let itemPath = "\(path)[\(j)]"
            var choice: Choice?
            if let name = item.stringValue {
                choice = Choice(name: name, label: nil, columns: [:])
            } else if let o = item.objectValue {
                needsStructure = true
                guard let name = o["name"]?.stringValue else { fail("\(itemPath).name", "required"); continue }
                let label = localized(o, "label", itemPath, required: false)
                _ = media(o, itemPath)
                var columns: [String: String] = [:]
                for (k, value) in o where k != "name" && k != "label" {
                    if let s = value.stringValue { columns[k] = s } else if let d = value.doubleValue { columns[k] = CanonicalJSON.number(d) }
                }
                choice = Choice(name: name, label: label ?? nil, columns: columns)
            } else {
                fail(itemPath, "must be a string"); continue
            }
            guard let choice else { continue }
            if choice.name.isEmpty { fail(item.stringValue != nil ? itemPath : "\(itemPath).name", "must not be empty") }
            else if let before = seen[choice.name], choice.columns.isEmpty || before.contains(choice.columns) {
                fail(item.stringValue != nil ? itemPath : "\(itemPath).name", "duplicate choice")
            } else {
                seen[choice.name, default: []].append(choice.columns)
            }
            out.append(choice)
        }
        return out
    }

    mutating func question(_ json: JSONValue, path: String) -> Question? {
        guard let q = json.objectValue else { fail(path, "must be an object"); return nil }
        let before = errors.count

        let id = string(q, "id", path)
        if let id, !Self.isValidQuestionId(id) {
            fail("\(path).id", "must be a letter followed by up to 63 letters, digits or underscores")
        }
        var type: QuestionType?
        if let name = string(q, "type", path) {
            type = QuestionType(rawValue: name)
            if type == nil {
                let names = (QuestionType.allCases.map(\.rawValue) + ["note", "group", "repeat"]).joined(separator: ", ")
                fail("\(path).type", "must be one of \(names)")
            }
        }
        let labels = localized(q, "label", path, required: true)
        let hint = localized(q, "hint", path, required: false)
        var isRequired = false
        var logic = QuestionLogic.none
        if let r = q["required"], !r.isNull {
            if let b = r.boolValue { isRequired = b } else if r.stringValue != nil {
                logic.requiredWhen = self.logic(q, "required", path) ?? nil
            } else { fail("\(path).required", "must be a boolean or an expression") }
        }
        logic.constraint = self.logic(q, "constraint", path) ?? nil
        logic.constraintMessage = localized(q, "constraintMessage", path, required: false) ?? nil
        logic.readonly = self.logic(q, "readonly", path) ?? nil
        logic.calculation = self.logic(q, "calculation", path) ?? nil
        logic.choiceFilter = self.logic(q, "choiceFilter", path) ?? nil
        if let d = q["default"], !d.isNull {
            if let s = d.stringValue { logic.defaultValue = s; needsStructure = true } else { fail("\(path).default", "must be a string") }
        }
        let appearance = optionalString(q, "appearance", path)
        if logic.calculation != nil && type != .calculate { fail("\(path).calculation", "only a calculate question has a calculation") }
        if logic.choiceFilter != nil && type != .selectOne && type != .selectMultiple { fail("\(path).choiceFilter", "only a select question has a choice filter") }

        var maxLength: Int?, minimum: Double?, maximum: Double?, maxBytes: Int?
        var options: [Choice] = [], accept: [String] = []
        var index: ChoiceIndex?
        switch type {
        case .text:
            maxLength = positiveInt(q, "maxLength", path) ?? nil
        case .integer, .decimal:
            minimum = bound(q, "minimum", path, integral: type == .integer)
            maximum = bound(q, "maximum", path, integral: type == .integer)
            if let minimum, let maximum, minimum > maximum {
                fail("\(path).maximum", "must not be less than minimum")
            }
        case .selectOne, .selectMultiple:
            if let listName = q["choiceList"], !listName.isNull {
                needsStructure = true
                if let name = listName.stringValue, let list = choiceLists[name] {
                    options = list
                    index = choiceIndexes[name]
                } else if let name = listName.stringValue, entityListFiles.contains(name) {
                    index = ChoiceIndex.anyName(of: name)
                } else if let name = listName.stringValue, pendingFiles.contains(name) {
                    // A draft's list whose file is still to come: no choice is taken meanwhile.
                    options = []
                } else if let name = listName.stringValue, FormAttachments.isCSVName(name) {
                    fail("\(path).choiceList", "names the file \(name), whose choices are read when it is attached to the version")
                } else {
                    fail("\(path).choiceList", "names no list of choiceLists")
                }
            } else if let v = required(q, "choices", path) {
                options = choices(v, "\(path).choices")
            }
        case .file:
            accept = stringList(q, "accept", path) { type in
                Self.isMIMEType(type) ? nil : "must be a MIME type such as image/jpeg"
            }.map { FileSignature.normalizedType($0) }
            maxBytes = positiveInt(q, "maxBytes", path) ?? nil
        case .time, .datetime, .geotrace, .geoshape, .barcode, .calculate:
            needsStructure = true
        case .date, .geopoint, nil:
            break
        }

        guard errors.count == before, let id, let type, let labels = labels ?? nil else { return nil }
        return Question(id: id, type: type, label: labels.text(in: defaultLanguage), labels: labels, hint: hint ?? nil, required: isRequired,
                        maxLength: maxLength, minimum: minimum, maximum: maximum, choices: options.map(\.name), options: options,
                        choiceIndex: index ?? ChoiceIndex(options), accept: accept, maxBytes: maxBytes, logic: logic, appearance: appearance)
    }

    mutating func bound(_ q: [String: JSONValue], _ key: String, _ path: String, integral: Bool) -> Double? {
        guard let v = q[key], !v.isNull else { return nil }
        guard let d = v.doubleValue else { fail("\(path).\(key)", "must be a number"); return nil }
        if integral && v.intValue == nil { fail("\(path).\(key)", "must be an integer"); return nil }
        return d
    }

    /// A required, non-empty array of strings; `check` returns a message for a bad element.
    mutating func stringList(_ q: [String: JSONValue], _ key: String, _ path: String,
                             check: (String) -> String?) -> [String] {
        guard let v = required(q, key, path) else { return [] }
        guard let items = v.arrayValue else { fail("\(path).\(key)", "must be an array"); return [] }
        if items.isEmpty { fail("\(path).\(key)", "must not be empty") }
        var out: [String] = []
        for (j, item) in items.enumerated() {
            guard let s = item.stringValue else { fail("\(path).\(key)[\(j)]", "must be a string"); continue }
            if let message = check(s) { fail("\(path).\(key)[\(j)]", message) }
            out.append(s)
        }
        return out
    }

    /// `[A-Za-z][A-Za-z0-9_]{0,63}`
    static func isValidQuestionId(_ s: String) -> Bool {
        let u = s.utf8
        guard let first = u.first, (1...64).contains(u.count), isLetter(first) else { return false }
        return u.allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") }
    }

    /// `type/subtype`, each an RFC 9110 token; no parameters.
    static func isMIMEType(_ s: String) -> Bool {
        let parts = s.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(isTokenChar) }
    }

    static func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= UInt8(ascii: "a") && (b | 0x20) <= UInt8(ascii: "z") }
    static func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
    static func isTokenChar(_ b: UInt8) -> Bool {
        isLetter(b) || isDigit(b) || "!#$%&'*+-.^_`|~".utf8.contains(b)
    }
}

