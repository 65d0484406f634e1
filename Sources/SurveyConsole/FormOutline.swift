import SurveyDomain

/// A version's structure as the survey page shows it: an indented tree of its nodes, each with
/// its type, label and logic — relevance, required, constraint with its message, repeat counts,
/// choices and their filter, calculation — the expressions as they were written. Each node is
/// the `outline-node` template; only the nesting of lists is joined here (no text of its own).
struct FormOutline {
    let definition: SurveyDefinition
    let language: LanguageChoice
    let pages: Pages

    /// The most choices listed for one question; the rest are counted.
    static let choicesListed = 12

    /// Whether the definition is a flat list of questions with no logic and no languages — what
    /// a version-1 definition is; the survey page keeps its table of questions for those.
    static func isFlat(_ definition: SurveyDefinition) -> Bool {
        let versionOneTypes: Set<QuestionType> = [.text, .integer, .decimal, .selectOne, .selectMultiple, .date, .geopoint, .file]
        return definition.languages.isEmpty && definition.nodes.allSatisfy { node in
            guard let q = node.question else { return false }
            let l = q.logic
            return node.relevant == nil && versionOneTypes.contains(q.type) && q.hint == nil && q.appearance == nil
                && l.requiredWhen == nil && l.constraint == nil && l.readonly == nil && l.calculation == nil && l.choiceFilter == nil
                && l.defaultValue == nil && q.options.allSatisfy { $0.label == nil && $0.columns.isEmpty }
        }
    }

    func html() -> String { list(definition.nodes) }

    private func list(_ nodes: [FormNode]) -> String {
        var out = "<ol class=\"outline\">"
        for node in nodes {
            out += "<li class=\"node node-\(Self.kindClass(node))\">" + pages.fragment(.outlineNode, values(node))
            if !node.children.isEmpty { out += list(node.children) }
            out += "</li>"
        }
        return out + "</ol>"
    }

    /// Ours, never the definition's text: safe in a class attribute.
    private static func kindClass(_ node: FormNode) -> String {
        switch node.kind {
        case .question: "question"
        case .note: "note"
        case .group: "group"
        case .repeat: "repeat"
        }
    }

    private func values(_ node: FormNode) -> [String: TemplateValue] {
        var rules: [(name: String, code: String?, words: String?)] = []
        if let relevant = node.relevant { rules.append(("Shown when", relevant.source, nil)) }
        let kind: String
        switch node.kind {
        case .note: kind = "note"
        case .group: kind = "group"
        case .repeat(let counts):
            kind = "repeat"
            if let count = counts.repeatCount { rules.append(("Repeat count", count.source, nil)) }
            let bounds = [counts.minCount.map { "at least \($0)" }, counts.maxCount.map { "at most \($0)" }].compactMap { $0 }
            if !bounds.isEmpty { rules.append(("Instances", nil, bounds.joined(separator: ", "))) }
        case .question(let q):
            kind = q.type.rawValue
            rules += questionRules(q)
        }
        return [
            "label": .text(language.text(node.label) ?? ""), "kind": .text(kind), "id": .text(node.id), "hasRules": .flag(!rules.isEmpty),
            "rules": .list(rules.map { ["name": .text($0.name), "code": .text($0.code ?? ""), "words": .text($0.words ?? "")] }),
        ]
    }

    private func questionRules(_ q: Question) -> [(name: String, code: String?, words: String?)] {
        var rules: [(name: String, code: String?, words: String?)] = []
        let l = q.logic
        if q.required { rules.append(("Required", nil, nil)) }
        if let when = l.requiredWhen { rules.append(("Required when", when.source, nil)) }
        if let constraint = l.constraint {
            rules.append(("Constraint", constraint.source, language.text(l.constraintMessage).map { "— “\($0)”" }))
        }
        if let readonly = l.readonly { rules.append(("Read-only when", readonly.source, nil)) }
        if let calculation = l.calculation { rules.append(("Calculation", calculation.source, nil)) }
        if !q.options.isEmpty {
            let shown = q.options.prefix(Self.choicesListed).map { option in
                let label = language.text(option.label) ?? ""
                return label.isEmpty || label == option.name ? option.name : "\(option.name) (\(label))"
            }
            let more = q.options.count > Self.choicesListed ? ", and \(q.options.count - Self.choicesListed) more" : ""
            rules.append(("Choices", nil, shown.joined(separator: ", ") + more))
        }
        if let filter = l.choiceFilter { rules.append(("Choice filter", filter.source, nil)) }
        let range = [q.minimum.map { "from \(CanonicalJSON.number($0))" }, q.maximum.map { "to \(CanonicalJSON.number($0))" }].compactMap { $0 }
        if !range.isEmpty { rules.append(("Range", nil, range.joined(separator: " "))) }
        if let n = q.maxLength { rules.append(("Length", nil, "at most \(n) characters")) }
        if !q.accept.isEmpty { rules.append(("Accepts", nil, q.accept.joined(separator: ", "))) }
        if let n = q.maxBytes { rules.append(("Size", nil, "at most \(n) bytes")) }
        if let value = l.defaultValue { rules.append(("Default", value, nil)) }
        if let hint = language.text(q.hint) { rules.append(("Hint", nil, hint)) }
        return rules
    }
}
