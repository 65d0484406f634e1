/// What an answer to a question must be, apart from its logic: its type, bounds and choices. A
/// form's check keeps these for each question rather than the question, whose copy (labels,
/// options, logic) would cost a retain and a release per field at each answer.
struct AnswerRules: Sendable, Equatable {
    let type: QuestionType
    let maxLength: Int?
    let minimum: Double?
    let maximum: Double?
    let choices: ChoiceIndex

    init(_ question: Question) {
        type = question.type
        maxLength = question.maxLength
        minimum = question.minimum
        maximum = question.maximum
        choices = question.choiceIndex
    }

    /// Why `value` is not an acceptable answer with `required` as the question's logic decided
    /// it for this submission, or nil if it is. `null` means unanswered.
    func problem(with value: JSONValue, required: Bool) -> String? {
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
            guard let s = value.stringValue, let valid = Question.isCalendarDate(s) else {
                return "must be a date YYYY-MM-DD"
            }
            if !valid { return "\(s) is not a calendar date" }
        case .geopoint:
            return Question.geopointProblem(value)
        case .geotrace, .geoshape:
            return Question.pointsProblem(value, shape: type == .geoshape)
        case .time:
            guard let t = value.stringValue, Question.isTime(t) else { return "must be a time HH:MM[:SS[.fff]] with an optional offset" }
        case .datetime:
            guard let t = value.stringValue, Timestamp.parse(t) != nil else { return "must be a date and time (RFC 3339)" }
        case .barcode:
            guard let t = value.stringValue else { return "must be a string" }
            if required && t.isEmpty { return "required" }
        case .calculate:
            // Taken as the device computed it: any string, number or boolean.
            guard value.stringValue != nil || value.doubleValue != nil || value.boolValue != nil else { return "must be a string, a number or a boolean" }
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

}
