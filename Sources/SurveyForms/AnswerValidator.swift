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
    /// The questions and groups outside repeats the form's logic hid (`answers.<id>`), for the
    /// response's `SummaryFacts`.
    public var hiddenOutsideRepeats: Set<String> = []

    public init(errors: [FieldError] = [], fileAnswers: [FileAnswer] = []) {
        self.errors = errors
        self.fileAnswers = fileAnswers
    }

    public var isValid: Bool { errors.isEmpty }
}

extension SurveyDefinition {
    /// Checks an `answers` object. Every error path is `answers.<questionId>`, inside a repeat
    /// `answers.<repeatId>[<index>].<questionId>` (or `answers` when it is not an object); at
    /// most one error is reported per answer, the first in the order of `Docs/forms.md`.
    public func validate(answers: JSONValue) -> AnswerCheck {
        if let structure { return FormCheck(structure, answers: answers).run() }
        return validateFlat(answers: answers)
    }

    /// The paths (as in `validate`'s errors) of the nodes that are not relevant with these
    /// answers: what a page laying out a response leaves out. Empty for a form without logic.
    public func notRelevant(in answers: JSONValue) -> Set<String> {
        structure.map { FormCheck($0, answers: answers).notRelevantPaths() } ?? []
    }

    /// A version-1 reading: questions only, no logic.
    private func validateFlat(answers: JSONValue) -> AnswerCheck {
        guard let given = answers.objectValue else {
            return AnswerCheck(errors: [FieldError(path: "answers", message: "must be an object")])
        }
        var check = AnswerCheck()
        var answered = 0
        // By index, with each question's rules: a copy of the question itself costs a retain per field.
        for (i, rules) in answerRules.enumerated() {
            let questionId = questions[i].id
            let found = given[questionId]
            if found != nil { answered += 1 }
            let value = found ?? .null
            if let message = rules.problem(with: value, required: questions[i].required) {
                check.errors.append(FieldError(path: "answers.\(questionId)", message: message))
            } else if rules.type == .file, let id = value["clientUploadId"]?.stringValue {
                check.fileAnswers.append(FileAnswer(questionId: questionId, clientUploadId: id))
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
    public func problem(with value: JSONValue) -> String? { problem(with: value, required: required) }

    /// The same, with `required` as the question's logic decided it for this submission.
    func problem(with value: JSONValue, required: Bool) -> String? {
        AnswerRules(self).problem(with: value, required: required)
    }

    /// A list of points: a line has two or more, a shape four or more with the last equal to the first.
    static func pointsProblem(_ value: JSONValue, shape: Bool) -> String? {
        let least = shape ? 4 : 2
        guard let points = value.arrayValue else { return "must be a list of points {lat, lon, altitude?, accuracy?}" }
        guard points.count >= least else { return "must have at least \(least) points" }
        for (i, p) in points.enumerated() {
            if let problem = geopointProblem(p) { return "point \(i): \(problem)" }
        }
        if shape, let first = points.first, let last = points.last, first["lat"]?.doubleValue != last["lat"]?.doubleValue || first["lon"]?.doubleValue != last["lon"]?.doubleValue {
            return "must end where it starts (a closed shape)"
        }
        return nil
    }

    /// `HH:MM`, `HH:MM:SS`, `HH:MM:SS.fff` (1-9 digits), then optionally `Z` or `±HH:MM`.
    static func isTime(_ s: String) -> Bool {
        let u = Array(s.utf8)
        func two(_ i: Int, _ max: Int) -> Bool {
            guard i + 1 < u.count, isDigit(u[i]), isDigit(u[i + 1]) else { return false }
            return Int(u[i] - 48) * 10 + Int(u[i + 1] - 48) <= max
        }
        func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }
        guard two(0, 23), u.count >= 5, u[2] == UInt8(ascii: ":"), two(3, 59) else { return false }
        var i = 5
        if i < u.count, u[i] == UInt8(ascii: ":") {
            guard two(i + 1, 59) else { return false }
            i += 3
            if i < u.count, u[i] == UInt8(ascii: ".") {
                let from = i + 1
                i += 1
                while i < u.count, isDigit(u[i]) { i += 1 }
                guard (1...9).contains(i - from) else { return false }
            }
        }
        if i == u.count { return true }
        if u[i] == UInt8(ascii: "Z") { return i + 1 == u.count }
        guard u[i] == UInt8(ascii: "+") || u[i] == UInt8(ascii: "-"), i + 6 == u.count, two(i + 1, 23), u[i + 3] == UInt8(ascii: ":"), two(i + 4, 59) else { return false }
        return true
    }

    static func geopointProblem(_ value: JSONValue) -> String? {
        guard let o = value.objectValue else { return "must be an object {lat, lon, accuracy?}" }
        guard let lat = o["lat"]?.doubleValue else { return "lat must be a number" }
        guard (-90...90).contains(lat) else { return "lat must be between -90 and 90" }
        guard let lon = o["lon"]?.doubleValue else { return "lon must be a number" }
        guard (-180...180).contains(lon) else { return "lon must be between -180 and 180" }
        if let accuracy = o["accuracy"], !accuracy.isNull {  // null: accuracy unknown
            guard let a = accuracy.doubleValue, a >= 0 else { return "accuracy must be a number >= 0" }
        }
        // A device's altitude is kept, never dropped.
        if let altitude = o["altitude"], !altitude.isNull, altitude.doubleValue == nil { return "altitude must be a number" }
        if let extra = o.keys.filter({ $0 != "lat" && $0 != "lon" && $0 != "accuracy" && $0 != "altitude" }).min() {
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
