import SurveyDomain
import SurveyStorage

/// A response's answers laid out by its form's tree: each run of questions is the `answers`
/// template (one `<dt>`/`<dd>` per question), a group a headed section, a repeat a heading with
/// its numbered instances. Nodes that are not relevant with these answers are left out, and so
/// are notes (they show text, they hold no answer). A version-1 form is one run of questions,
/// so its page is what it always was.
///
/// The template engine has no recursion, so the sections are joined here; the only text this
/// type writes itself is a heading, always through `HTML.escape`.
struct ResponseLayout {
    let definition: SurveyDefinition
    let answers: [String: JSONValue]
    let language: LanguageChoice
    let pages: Pages
    /// The upload a file answer names, when it is there and the reader may see it; and its URL.
    let upload: (_ clientUploadId: String) -> (record: UploadRecord, url: String)?
    /// `answers.<id>`, `answers.<repeatId>[<i>].<id>`: the nodes to leave out.
    private let hidden: Set<String>

    /// The most points of a line or shape listed; the rest are counted.
    static let pointsListed = 10
    static let inlineImageTypes: Set<String> = ["image/jpeg", "image/png", "image/gif", "image/webp"]

    init(definition: SurveyDefinition, answers: JSONValue, language: LanguageChoice, pages: Pages,
         upload: @escaping (String) -> (record: UploadRecord, url: String)?) {
        self.definition = definition
        self.answers = answers.objectValue ?? [:]
        self.language = language
        self.pages = pages
        self.upload = upload
        hidden = definition.notRelevant(in: answers)
    }

    /// The whole layout, as markup for the page.
    func html() -> String {
        render(definition.nodes, in: answers, path: "answers", depth: 0, instances: [])
    }

    /// `nodes` at one level of the answers (`object`); `instances` names the repeat instances
    /// this level sits in ("Member 2"), for the headings of nested ones.
    private func render(_ nodes: [FormNode], in object: [String: JSONValue], path: String, depth: Int, instances: [String]) -> String {
        var out = "", run: [[String: TemplateValue]] = []
        func endRun() {
            if !run.isEmpty { out += pages.fragment(.answers, ["answers": .list(run)]) }
            run = []
        }
        for node in nodes {
            let at = "\(path).\(node.id)"
            guard !hidden.contains(at) else { continue }
            switch node.kind {
            case .note:
                continue
            case .question(let q):
                run.append(item(q, object[q.id] ?? .null))
            case .group:
                let inside = render(node.children, in: object, path: path, depth: depth + 1, instances: instances)
                guard !inside.isEmpty else { continue }  // a group of notes, or of questions all left out
                endRun()
                out += "<section class=\"group\">" + Self.heading(title(node), depth: depth) + inside + "</section>"
            case .repeat:
                endRun()
                let name = title(node)
                let items = object[node.id]?.arrayValue ?? []
                out += "<section class=\"repeat\">" + Self.heading(name, depth: depth)
                out += "<p class=\"hint\">" + (items.isEmpty ? "No instances" : items.count == 1 ? "1 instance" : "\(items.count) instances") + "</p>"
                for (i, instance) in items.enumerated() {
                    let trail = instances + ["\(name) \(i + 1)"]
                    out += "<section class=\"instance\">" + Self.heading(trail.joined(separator: " › "), depth: depth + 1)
                    out += render(node.children, in: instance.objectValue ?? [:], path: "\(at)[\(i)]", depth: depth + 2, instances: trail)
                    out += "</section>"
                }
                out += "</section>"
            }
        }
        endRun()
        return out
    }

    /// A group's or repeat's name: its label, or its id when it has none.
    private func title(_ node: FormNode) -> String {
        let label = language.text(node.label) ?? ""
        return label.isEmpty ? node.id : label
    }

    /// `<h3>` under the page's "Answers", one level deeper a nesting, no deeper than `<h6>`.
    static func heading(_ text: String, depth: Int) -> String {
        let level = min(6, 3 + depth)
        return "<h\(level)>" + HTML.escape(text) + "</h\(level)>"
    }

    // MARK: one answer

    /// What the `answers` template shows for one question.
    private func item(_ q: Question, _ value: JSONValue) -> [String: TemplateValue] {
        let label = language.text(q.labels) ?? q.label
        var item: [String: TemplateValue] = ["id": .text(q.id), "label": .text(label)]
        guard !value.isNull else { item["missing"] = .text("No answer"); return item }
        switch q.type {
        case .selectOne:
            let name = value.stringValue ?? CanonicalJSON.string(value)
            if let chosen = choiceLabel(q, name) {
                item["choiceLabel"] = .text(chosen)
                item["choiceName"] = .text(name)
            } else {
                item["text"] = .text(name)
            }
        case .selectMultiple:
            let chosen = value.arrayValue?.compactMap(\.stringValue) ?? []
            item["hasChoices"] = .flag(true)
            item["choices"] = .list(chosen.map { ["choice": .text($0), "optionLabel": .text(choiceLabel(q, $0) ?? "")] })
        case .geopoint:
            if let point = Self.point(value) {
                item["point"] = .text(point.text + (value["accuracy"]?.doubleValue.map { " (± \(CanonicalJSON.number($0)) m)" } ?? ""))
                item["mapUrl"] = .text(point.mapUrl)
            } else {
                item["text"] = .text(CanonicalJSON.string(value))
            }
        case .geotrace, .geoshape:
            let points = (value.arrayValue ?? []).compactMap(Self.point)
            guard let first = points.first else { item["text"] = .text(CanonicalJSON.string(value)); return item }
            let kind = q.type == .geoshape ? "A shape" : "A line"
            item["hasPoints"] = .flag(true)
            item["pointsSummary"] = .text("\(kind) of \(points.count) points")
            item["mapUrl"] = .text(first.mapUrl)
            item["points"] = .list(points.prefix(Self.pointsListed).map { ["coordinates": .text($0.text)] })
            if points.count > Self.pointsListed { item["morePoints"] = .text("and \(points.count - Self.pointsListed) more") }
        case .file:
            let id = value["clientUploadId"]?.stringValue ?? ""
            if let found = upload(id) {
                if Self.inlineImageTypes.contains(found.record.contentType) {
                    item["image"] = .text(found.url)
                    item["alt"] = .text("\(label): photo \(id)")
                } else {
                    item["download"] = .text(found.url)
                    item["fileName"] = .text("\(id) (\(found.record.contentType), \(found.record.size) bytes)")
                }
            } else {
                item["missing"] = .text("File \(id) has not been uploaded yet")
            }
        case .datetime:
            item["text"] = .text(Self.readableDateTime(value.stringValue ?? CanonicalJSON.string(value)))
        case .barcode:
            item["code"] = .text(value.stringValue ?? CanonicalJSON.string(value))
        case .calculate:
            item["text"] = .text(value.stringValue ?? CanonicalJSON.string(value))
            item["aside"] = .text("calculated on the device")
        case .text, .integer, .decimal, .date, .time:
            item["text"] = .text(value.stringValue ?? CanonicalJSON.string(value))
        }
        return item
    }

    /// A choice's label in the chosen language, when it has one that says more than its name.
    private func choiceLabel(_ q: Question, _ name: String) -> String? {
        guard let option = q.options.first(where: { $0.name == name }), let label = language.text(option.label),
              !label.isEmpty, label != name else { return nil }
        return label
    }

    /// A point's coordinates as text, and an OpenStreetMap link to it.
    static func point(_ value: JSONValue) -> (text: String, mapUrl: String)? {
        guard let lat = value["lat"]?.doubleValue, let lon = value["lon"]?.doubleValue else { return nil }
        return ("\(CanonicalJSON.number(lat)), \(CanonicalJSON.number(lon))",
                "https://www.openstreetmap.org/?mlat=\(lat)&mlon=\(lon)#map=17/\(lat)/\(lon)")
    }

    /// `2026-12-02T10:00:00Z` as `2026-12-02 10:00:00 UTC` (an offset is kept as written).
    static func readableDateTime(_ s: String) -> String {
        guard s.count > 11, let t = s.firstIndex(where: { $0 == "T" || $0 == "t" }) else { return s }
        var rest = String(s[s.index(after: t)...])
        if rest.hasSuffix("Z") || rest.hasSuffix("z") { rest = String(rest.dropLast()) + " UTC" }
        else if let sign = rest.lastIndex(where: { $0 == "+" || $0 == "-" }) { rest.insert(" ", at: sign) }
        return s[..<t] + " " + rest
    }
}
