import SurveyDomain

/// The language a page shows a form's labels in: the one asked for with `?lang=` when the form
/// has it, otherwise the form's default. A form in several languages gets a switch of links,
/// each keeping the language in its URL so that a reload or a shared link shows the same.
struct LanguageChoice: Sendable {
    /// Every language the form's text is written in, in the definition's order.
    let languages: [String]
    /// The language labels are read in; nil for a form without named languages.
    let chosen: String?
    /// Whether `chosen` was asked for (and is not simply the default).
    let isExplicit: Bool

    init(_ definition: SurveyDefinition?, requested: String?) {
        languages = definition?.languages ?? []
        let fallback = definition?.defaultLanguage ?? languages.first
        if let requested, languages.contains(requested) {
            chosen = requested
            isExplicit = requested != fallback
        } else {
            chosen = fallback
            isExplicit = false
        }
    }

    /// A label in the chosen language (the text's own fallback when it lacks that language).
    func text(_ label: LocalizedText?) -> String? {
        label.map { $0.text(in: chosen) }
    }

    /// The switch's links to `path`, one a language; empty when there is nothing to switch.
    func links(to path: String) -> [[String: TemplateValue]] {
        guard languages.count > 1 else { return [] }
        return languages.map { language in
            ["name": .text(language), "url": .text(path + "?lang=" + urlEncoded(language)), "current": .flag(language == chosen)]
        }
    }
}
