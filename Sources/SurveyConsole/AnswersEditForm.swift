import Foundation
import SurveyDomain
import SurveyHTTP

/// The response page's edit form, laid out by the form's tree like the answers it shows: a
/// field per question (groups as fieldsets, each repeat instance the response has as a numbered
/// fieldset), named by the question's path in the answers (`answers.size`,
/// `answers.people[1].age`, as `errors[]` names it). Questions a field cannot hold — locations,
/// files, calculations — are shown and kept as they are. Reading the form back gives the answers
/// the edit operation checks; a number that is not one goes through as its text, so the form's
/// rules refuse it at its path like any other answer.
struct AnswersEditForm {
    let definition: SurveyDefinition
    let answers: [String: JSONValue]
    let language: LanguageChoice

    init(definition: SurveyDefinition, answers: [String: JSONValue], language: LanguageChoice) {
        self.definition = definition; self.answers = answers; self.language = language
        hidden = definition.notRelevant(in: .object(answers))
    }

    /// The types a field edits; any other answer is kept as stored.
    static let editable: Set<QuestionType> = [.text, .integer, .decimal, .selectOne, .selectMultiple, .date, .time, .datetime, .barcode]

    /// Every field's name starts so: nothing else of the form is read as an answer.
    static let prefix = "answers."

    /// The page shows what is relevant with the stored answers, as the answers' layout does (a
    /// question an edit makes relevant is filled in by the next edit).
    func html() -> String {
        fields(definition.nodes, in: answers, path: "answers", trail: [])
    }

    /// `answers.<id>`, `answers.<repeatId>[<i>].<id>`: the nodes not relevant, left off the page.
    private let hidden: Set<String>

    private func fields(_ nodes: [FormNode], in object: [String: JSONValue], path: String, trail: [String]) -> String {
        var out = ""
        for node in nodes {
            let at = "\(path).\(node.id)"
            guard !hidden.contains(at) else { continue }
            switch node.kind {
            case .note:
                continue
            case .question(let q):
                out += field(q, object[q.id] ?? .null, name: at)
            case .group:
                let inside = fields(node.children, in: object, path: path, trail: trail)
                if !inside.isEmpty { out += "<fieldset class=\"group\"><legend>" + HTML.escape(title(node)) + "</legend>" + inside + "</fieldset>" }
            case .repeat:
                let name = title(node)
                for (i, instance) in (object[node.id]?.arrayValue ?? []).enumerated() {
                    let here = trail + ["\(name) \(i + 1)"]
                    out += "<fieldset class=\"instance\"><legend>" + HTML.escape(here.joined(separator: " › ")) + "</legend>"
                    out += fields(node.children, in: instance.objectValue ?? [:], path: "\(at)[\(i)]", trail: here)
                    out += "</fieldset>"
                }
            }
        }
        return out
    }

    private func title(_ node: FormNode) -> String {
        let label = language.text(node.label) ?? ""
        return label.isEmpty ? node.id : label
    }

    private func field(_ q: Question, _ value: JSONValue, name: String) -> String {
        let label = language.text(q.labels) ?? q.label
        let id = "edit-" + name.map { $0.isLetter || $0.isNumber ? String($0) : "-" }.joined()
        let caption = HTML.escape(label.isEmpty ? q.id : label) + " <span class=\"hint mono\">" + HTML.escape(q.id) + "</span>"
        guard Self.editable.contains(q.type) else {
            return "<p class=\"kept\">" + caption + ": <span class=\"mono\">" + HTML.escape(value.isNull ? "no answer" : CanonicalJSON.string(value))
                + "</span> <span class=\"hint\">(kept as it is)</span></p>"
        }
        let text = value.stringValue ?? (value.isNull ? "" : CanonicalJSON.string(value))
        let n = HTML.escape(name)
        switch q.type {
        case .selectOne where !q.options.isEmpty:
            var out = "<label for=\"\(id)\">\(caption)</label><select id=\"\(id)\" name=\"\(n)\"><option value=\"\">(no answer)</option>"
            for c in q.options {
                let shown = language.text(c.label).flatMap { $0.isEmpty ? nil : $0 } ?? c.name
                out += "<option value=\"" + HTML.escape(c.name) + "\"" + (c.name == text ? " selected" : "") + ">" + HTML.escape(shown) + "</option>"
            }
            return out + "</select>"
        case .selectMultiple where !q.options.isEmpty:
            let chosen = Set(value.arrayValue?.compactMap(\.stringValue) ?? [])
            var out = "<fieldset class=\"choices\"><legend>\(caption)</legend>"
            for (k, c) in q.options.enumerated() {
                let shown = language.text(c.label).flatMap { $0.isEmpty ? nil : $0 } ?? c.name
                out += "<label for=\"\(id)-\(k)\"><input type=\"checkbox\" id=\"\(id)-\(k)\" name=\"\(n)\" value=\"" + HTML.escape(c.name) + "\""
                    + (chosen.contains(c.name) ? " checked" : "") + "> " + HTML.escape(shown) + "</label>"
            }
            // Present even when nothing is checked, so that unchecking every choice clears the answer.
            return out + "<input type=\"hidden\" name=\"\(n)\" value=\"\"></fieldset>"
        case .selectMultiple:
            let words = value.arrayValue?.compactMap(\.stringValue).joined(separator: " ") ?? text
            return "<label for=\"\(id)\">\(caption) <span class=\"hint\">(choices separated by spaces)</span></label>"
                + "<input id=\"\(id)\" name=\"\(n)\" value=\"" + HTML.escape(words) + "\">"
        default:
            let type = q.type == .date ? "date" : "text"
            let mode = q.type == .integer ? " inputmode=\"numeric\"" : q.type == .decimal ? " inputmode=\"decimal\"" : ""
            return "<label for=\"\(id)\">\(caption)</label><input id=\"\(id)\" type=\"\(type)\"\(mode) name=\"\(n)\" value=\"" + HTML.escape(text) + "\">"
        }
    }

    // MARK: reading it back

    /// The answers the form says: the stored ones, each editable question's replaced by its
    /// field (an empty field: no answer). Repeats keep the instances the response has.
    func answers(from form: FormFields) -> JSONValue {
        .object(read(definition.nodes, object: answers, path: "answers", form: form))
    }

    private func read(_ nodes: [FormNode], object: [String: JSONValue], path: String, form: FormFields) -> [String: JSONValue] {
        var out = object
        for node in nodes {
            let at = "\(path).\(node.id)"
            switch node.kind {
            case .note:
                continue
            case .question(let q):
                guard Self.editable.contains(q.type) else { continue }
                let sent = form.all(at)
                guard !sent.isEmpty else { continue }  // not on the page: unchanged
                if let v = Self.value(q, sent) { out[q.id] = v } else { out.removeValue(forKey: q.id) }
            case .group:
                out = read(node.children, object: out, path: path, form: form)
            case .repeat:
                guard let items = object[node.id]?.arrayValue else { continue }
                out[node.id] = .array(items.enumerated().map { i, instance in
                    .object(read(node.children, object: instance.objectValue ?? [:], path: "\(at)[\(i)]", form: form))
                })
            }
        }
        return out
    }

    /// A field's value as the answer's JSON type; nil for no answer.
    static func value(_ q: Question, _ sent: [String]) -> JSONValue? {
        if q.type == .selectMultiple {
            let chosen = sent.flatMap { $0.split(whereSeparator: { $0 == " " }).map(String.init) }.filter { !$0.isEmpty }
            return chosen.isEmpty ? nil : .array(chosen.map(JSONValue.string))
        }
        let text = (sent.first ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return nil }
        switch q.type {
        case .integer: return Int(text).map { .number(Double($0)) } ?? .string(text)
        case .decimal: return Double(text).map(JSONValue.number) ?? .string(text)
        default: return .string(text)
        }
    }
}
