// Filled-in forms as ODK Collect, KoboCollect or Enketo send them (the `xml_submission_file` of
// an OpenRosa POST): libxml2's parse of untrusted bytes, the mapping onto answers by a roster's
// definition, then the answer check. Properties: never a trap; a refusal says why; what is read
// is an answers object the check runs on, and it survives its canonical JSON; the OpenRosa
// answer a collector would read is a document the same reader accepts.
// fuzz-sources: Sources/SurveyXForm/*.swift
import SurveyForms

// Parsed for each input: a definition kept in a global holds its expression trees in enum
// payloads LeakSanitizer cannot follow, and would be reported as leaked at exit.
func roster() -> SurveyDefinition {
    let json = try! JSONParser.parse(Array("""
    {"title": "Roster", "formId": "roster", "questions": [
      {"id": "size", "type": "integer", "label": "People", "required": true, "constraint": ". >= 1"},
      {"id": "where", "type": "geopoint", "label": "Where"},
      {"id": "path", "type": "geotrace", "label": "Path"},
      {"id": "assets", "type": "select_multiple", "label": "Assets", "choices": ["car", "bike"]},
      {"id": "photo", "type": "file", "label": "Photo", "accept": ["image/jpeg"]},
      {"id": "household", "type": "group", "label": "Household", "relevant": "${size} > 0", "children": [
        {"id": "income", "type": "decimal", "label": "Income"},
        {"id": "people", "type": "repeat", "label": "Person", "repeatCount": "${size}", "children": [
          {"id": "name", "type": "text", "label": "Name", "required": true},
          {"id": "visits", "type": "repeat", "label": "Visit", "children": [
            {"id": "when", "type": "date", "label": "When"}]}]}]},
      {"id": "note", "type": "note", "label": "Thanks"}]}
    """.utf8))
    return try! SurveyDefinition.parse(json)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let instance: SubmittedInstance
    do {
        instance = try SubmittedInstance(xml: bytes)
    } catch {
        guard !error.message.isEmpty else { fatalError("a refusal without a message") }
        let answer = OpenRosaDocuments.response(message: "The submission could not be read: \(error.message).")
        guard (try? XMLDocumentReader.parse(answer, document: "the answer")) != nil else { fatalError("an unreadable OpenRosa answer") }
        return 0
    }
    guard !instance.formId.isEmpty else { fatalError("a form id that is empty") }
    let roster = roster()
    let (answers, files, _) = instance.answers(for: roster) { "upload-" + String($0.utf8.count) }
    guard answers.objectValue != nil else { fatalError("answers that are not an object") }
    for file in files where roster.questions.first(where: { $0.id == file.questionId })?.type != .file {
        fatalError("a file named by \(file.questionId), which is no file question")
    }
    guard let again = try? JSONParser.parse(CanonicalJSON.encode(answers)), again == answers else {
        fatalError("the answers changed through their canonical JSON")
    }
    let check = roster.validate(answers: answers)
    let message = check.errors.map(\.description).joined(separator: "; ")
    guard (try? XMLDocumentReader.parse(OpenRosaDocuments.response(message: message), document: "the answer")) != nil else {
        fatalError("an unreadable OpenRosa answer for \(message)")
    }
    return 0
}
