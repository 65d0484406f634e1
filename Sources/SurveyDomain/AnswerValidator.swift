/// A file answer `{"clientUploadId": "..."}`; the server checks the upload exists (1014).
public struct FileAnswer: Sendable, Equatable, Hashable {
    public let questionId: String
    public let clientUploadId: String

    public init(questionId: String, clientUploadId: String) {
        self.questionId = questionId
        self.clientUploadId = clientUploadId
    }
}

/// The outcome of checking `answers` against a definition.
public struct AnswerCheck: Sendable, Equatable {
    /// Every broken rule (1002), in question order, then unknown keys sorted.
    public var errors: [FieldError]
    /// File answers that passed the format check, in question order.
    public var fileAnswers: [FileAnswer]

    public init(errors: [FieldError] = [], fileAnswers: [FileAnswer] = []) {
        self.errors = errors
        self.fileAnswers = fileAnswers
    }

    public var isValid: Bool { errors.isEmpty }
}

extension SurveyDefinition {
    /// Checks an `answers` object. Every error path is `answers.<questionId>` (or `answers`
    /// when it is not an object); at most one error is reported per answer.
    public func validate(answers: JSONValue) -> AnswerCheck {
        guard let given = answers.objectValue else {
            return AnswerCheck(errors: [FieldError(path: "answers", message: "must be an object")])
        }
        var check = AnswerCheck()
        var answered = 0
        for q in questions {
            let found = given[q.id]
            if found != nil { answered += 1 }
            let value = found ?? .null
            if let message = q.problem(with: value) {
                check.errors.append(FieldError(path: "answers.\(q.id)", message: message))
            } else if q.type == .file, let id = value["clientUploadId"]?.stringValue {
                check.fileAnswers.append(FileAnswer(questionId: q.id, clientUploadId: id))
            }
        }
        // Question ids are unique (`parse` refuses duplicates), so when every key was matched by
        // a question there is no unknown key to look for — the usual case, spared a second
        // look-up per answer. Only the unknown keys are sorted.
        if answered < given.count || indexById.count != questions.count {
            for key in given.keys.filter({ indexById[$0] == nil }).sorted() {
                check.errors.append(FieldError(path: "answers.\(key)", message: "unknown question"))
            }
        }
        return check
    }
}

extension Question {
    /// Why `value` is not an acceptable answer, or nil if it is. `null` means unanswered.
    public func problem(with value: JSONValue) -> String? {
        if value.isNull { return required ? "required" : nil }
        switch type {
        case .text:
            guard let s = value.stringValue else { return "must be a string" }
            // An empty text does not satisfy a required question.
            if required && s.isEmpty { return "required" }
            // Characters never outnumber UTF-8 bytes: counting them (grapheme breaking) is only
            // needed when the bytes alone could be over the limit.
            if let maxLength, s.utf8.count > maxLength, s.count > maxLength { return "must be at most \(maxLength) characters" }
        case .integer:
            guard let n = value.intValue else { return "must be an integer" }
            return boundsProblem(Double(n))
        case .decimal:
            guard let d = value.doubleValue else { return "must be a number" }
            return boundsProblem(d)
        case .selectOne:
            guard let s = value.stringValue else { return "must be a string" }
            if !choices.contains(s) { return "\"\(s)\" is not one of the choices" }
        case .selectMultiple:
            guard let items = value.arrayValue else { return "must be an array of choices" }
            if required && items.isEmpty { return "required" }
            // Duplicates by pairwise comparison, no Set to build and hash: every item before a
            // duplicate is a distinct choice, so the scans stay within the choices' count squared.
            for (k, item) in items.enumerated() {
                guard let s = item.stringValue else { return "must be an array of choices" }
                if !choices.contains(s) { return "\"\(s)\" is not one of the choices" }
                if items[..<k].contains(where: { $0.stringValue == s }) { return "\"\(s)\" is chosen more than once" }
            }
        case .date:
            guard let s = value.stringValue, let valid = Self.isCalendarDate(s) else {
                return "must be a date YYYY-MM-DD"
            }
            if !valid { return "\(s) is not a calendar date" }
        case .geopoint:
            return Self.geopointProblem(value)
        case .file:
            guard let o = value.objectValue, let id = o["clientUploadId"]?.stringValue, o.count == 1 else {
                return "must be {\"clientUploadId\": \"...\"}"
            }
            if !ClientIdentifier.isValid(id) {
                return "clientUploadId must be 8-128 characters of A-Z a-z 0-9 _ - : ."
            }
        }
        return nil
    }

    private func boundsProblem(_ d: Double) -> String? {
        if let minimum, d < minimum { return "must be at least \(CanonicalJSON.number(minimum))" }
        if let maximum, d > maximum { return "must be at most \(CanonicalJSON.number(maximum))" }
        return nil
    }

    private static func geopointProblem(_ value: JSONValue) -> String? {
        guard let o = value.objectValue else { return "must be an object {lat, lon, accuracy?}" }
        guard let lat = o["lat"]?.doubleValue else { return "lat must be a number" }
        guard (-90...90).contains(lat) else { return "lat must be between -90 and 90" }
        guard let lon = o["lon"]?.doubleValue else { return "lon must be a number" }
        guard (-180...180).contains(lon) else { return "lon must be between -180 and 180" }
        if let accuracy = o["accuracy"], !accuracy.isNull {  // null: accuracy unknown
            guard let a = accuracy.doubleValue, a >= 0 else { return "accuracy must be a number >= 0" }
        }
        if let extra = o.keys.filter({ $0 != "lat" && $0 != "lon" && $0 != "accuracy" }).min() {
            return "unexpected key \"\(extra)\""
        }
        return nil
    }

    /// nil when `s` is not shaped `YYYY-MM-DD`; otherwise whether that day exists
    /// (proleptic Gregorian calendar, years 0000–9999).
    static func isCalendarDate(_ s: String) -> Bool? {
        let u = Array(s.utf8)
        guard u.count == 10, u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-") else { return nil }
        func number(_ r: Range<Int>) -> Int? {
            var n = 0
            for b in u[r] {
                guard b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") else { return nil }
                n = n * 10 + Int(b - UInt8(ascii: "0"))
            }
            return n
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10) else { return nil }
        guard (1...12).contains(month) else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (1...days).contains(day)
    }
}
