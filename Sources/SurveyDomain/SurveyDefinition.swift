/// A validated survey definition: `{"title": "...", "questions": [question, ...]}`.
/// Only `parse` builds one, so every value of this type obeys the definition rules.
public struct SurveyDefinition: Sendable, Equatable {
    public let title: String
    public let questions: [Question]
    let indexById: [String: Int]

    init(title: String, questions: [Question]) {
        self.title = title
        self.questions = questions
        var index: [String: Int] = [:]
        for (i, q) in questions.enumerated() where index[q.id] == nil { index[q.id] = i }
        self.indexById = index
    }

    public func question(id: String) -> Question? {
        indexById[id].map { questions[$0] }
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
    public let label: String
    public let required: Bool
    /// `text`: the most Characters an answer may have.
    public let maxLength: Int?
    /// `integer` / `decimal`: inclusive bounds.
    public let minimum: Double?
    public let maximum: Double?
    /// `select_one` / `select_multiple`.
    public let choices: [String]
    /// `file`: accepted MIME types, lowercased; `type/*` and `*/*` act as wildcards.
    public let accept: [String]
    /// `file`: the largest file this question takes (the server's own limit still applies).
    public let maxBytes: Int?

    /// Whether a declared upload type is in `accept` (case and parameters ignored).
    public func accepts(contentType: String) -> Bool {
        let type = FileSignature.normalizedType(contentType)
        guard let slash = type.firstIndex(of: "/") else { return false }
        let major = type[..<slash]
        return accept.contains { pattern in
            pattern == type || pattern == "*/*"
                || (pattern.hasSuffix("/*") && pattern.dropLast(2) == major)
        }
    }
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

    mutating func definition(_ json: JSONValue, path: String) -> SurveyDefinition? {
        guard let object = json.objectValue else { fail(path, "must be an object"); return nil }

        let title = string(object, "title", path)
        if let title, title.allSatisfy(\.isWhitespace) { fail("\(path).title", "must not be empty") }

        var questions: [Question] = []
        var allValid = true
        if let list = required(object, "questions", path) {
            if let items = list.arrayValue {
                if items.isEmpty { fail("\(path).questions", "must not be empty") }
                var seen: Set<String> = []
                for (i, item) in items.enumerated() {
                    let qPath = "\(path).questions[\(i)]"
                    if let q = question(item, path: qPath) { questions.append(q) } else { allValid = false }
                    // Checked on the raw id so a duplicate is reported even if either question
                    // has other problems.
                    if let id = item["id"]?.stringValue, Self.isValidQuestionId(id), !seen.insert(id).inserted {
                        fail("\(qPath).id", "duplicate id \"\(id)\"")
                    }
                }
            } else {
                fail("\(path).questions", "must be an array")
            }
        }
        guard errors.isEmpty, allValid, let title else { return nil }
        return SurveyDefinition(title: title, questions: questions)
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
                let names = QuestionType.allCases.map(\.rawValue).joined(separator: ", ")
                fail("\(path).type", "must be one of \(names)")
            }
        }
        let label = string(q, "label", path)
        var isRequired = false
        if let r = q["required"], !r.isNull {
            if let b = r.boolValue { isRequired = b } else { fail("\(path).required", "must be a boolean") }
        }

        var maxLength: Int?, minimum: Double?, maximum: Double?, maxBytes: Int?
        var choices: [String] = [], accept: [String] = []
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
            var seen: Set<String> = []
            choices = stringList(q, "choices", path) { choice in
                choice.isEmpty ? "must not be empty" : seen.insert(choice).inserted ? nil : "duplicate choice"
            }
        case .file:
            accept = stringList(q, "accept", path) { type in
                Self.isMIMEType(type) ? nil : "must be a MIME type such as image/jpeg"
            }.map { FileSignature.normalizedType($0) }
            maxBytes = positiveInt(q, "maxBytes", path) ?? nil
        case .date, .geopoint, nil:
            break
        }

        guard errors.count == before, let id, let type, let label else { return nil }
        return Question(id: id, type: type, label: label, required: isRequired, maxLength: maxLength,
                        minimum: minimum, maximum: maximum, choices: choices, accept: accept, maxBytes: maxBytes)
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
