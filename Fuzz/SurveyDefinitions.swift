// Survey definitions and answers as they arrive in request bodies: the input is a definition's
// JSON, optionally followed by a NUL byte and the answers' JSON. Properties: a refused
// definition says why under `definition`; an accepted one has unique valid ids that find their
// questions; every answer error sits under `answers`, one per question at most, and agrees with
// `Question.problem` (for a version-2 form: sits under `answers`, one per path); file answers
// name file questions with valid upload ids.
@testable import SurveyDomain
@testable import SurveyForms

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let split = bytes.firstIndex(of: 0) ?? size
    guard let json = try? JSONParser.parse(bytes[..<split]) else { return 0 }
    let definition: SurveyDefinition
    do {
        definition = try SurveyDefinition.parse(json)
    } catch {
        guard !error.errors.isEmpty, error.errors.allSatisfy({ $0.path.hasPrefix("definition") }) else {
            fatalError("refusal without a reason under definition: \(error.errors)")
        }
        return 0
    }
    check(definition)
    let answers = split < size ? (try? JSONParser.parse(bytes[(split + 1)...])) : json
    if let answers { check(definition.validate(answers: answers), of: answers, against: definition) }
    return 0
}

private func check(_ d: SurveyDefinition) {
    guard !d.nodes.isEmpty, !d.title.allSatisfy(\.isWhitespace) else { fatalError("accepted an empty definition") }
    var ids: Set<String> = []
    for q in d.questions {
        guard ids.insert(q.id).inserted, d.question(id: q.id) == q else { fatalError("question \(q.id) is not found by its id") }
        if let min = q.minimum, let max = q.maximum, min > max { fatalError("\(q.id): minimum above maximum") }
        if q.type == .file { _ = q.accepts(contentType: q.accept.first ?? "") }
    }
}

private func check(_ c: AnswerCheck, of answers: JSONValue, against d: SurveyDefinition) {
    guard let given = answers.objectValue else {
        guard c.errors == [FieldError(path: "answers", message: "must be an object")] else { fatalError("non-object answers: \(c.errors)") }
        return
    }
    guard Set(c.errors.map(\.path)).count == c.errors.count else { fatalError("two errors for one answer: \(c.errors)") }
    for f in c.fileAnswers {
        guard d.question(id: f.questionId)?.type == .file, ClientIdentifier.isValid(f.clientUploadId) else { fatalError("file answer \(f)") }
    }
    // A version-2 form (groups, repeats, logic): every error under `answers`, one per path.
    guard d.structure == nil else {
        guard c.errors.allSatisfy({ $0.path.hasPrefix("answers.") }) else { fatalError("error outside answers: \(c.errors)") }
        return
    }
    // A version-1 form: exactly the question-by-question reading.
    var expected: [FieldError] = []
    for q in d.questions {
        if let message = q.problem(with: given[q.id] ?? .null) { expected.append(FieldError(path: "answers.\(q.id)", message: message)) }
    }
    for key in given.keys.sorted() where d.question(id: key) == nil {
        expected.append(FieldError(path: "answers.\(key)", message: "unknown question"))
    }
    guard c.errors == expected else { fatalError("errors \(c.errors), expected \(expected)") }
}
