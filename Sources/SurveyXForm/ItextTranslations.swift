import SurveyForms

/// The form's `itext` block: texts by id in each language, read into the definition's label
/// objects keyed by language name, and the media a label shows (image, big-image, audio, video)
/// into its `media`. Guidance hints and other forms have no place in a definition, so a text
/// that has one is refused when something uses it. A block whose one translation is pyxform's
/// `default` (an XLSForm without languages whose labels show media) reads as plain text.
struct ItextTranslations {
    struct Entry {
        /// The text's own `<value>` (without a `form`): its text, with the answers it shows
        /// (`<output value="…"/>`) in place.
        var plain: XMLElement?
        /// `form` attribute → value, e.g. image → jr://images/face.png.
        var forms: [(form: String, value: String)] = []
    }

    /// How an `<output value="…"/>` inside a text is written in the definition (`${name}`).
    typealias OutputRenderer = (XMLElement) throws(XFormRefusal) -> String

    /// The forms of a text an app shows and the server has no use for: a guidance hint (shown on
    /// demand or when the form is printed), kept in the XForm only.
    static let deviceForms: Set<String> = ["guidance"]

    /// In document order.
    private(set) var languages: [String] = []
    private(set) var defaultLanguage: String?
    /// Text id → language → entry.
    private var texts: [String: [String: Entry]] = [:]

    init(_ itext: XMLElement?) throws(XFormRefusal) {
        guard let itext else { return }
        for element in itext.children {
            guard element.name == "translation", element.namespace == XMLNamespace.xforms else {
                throw XFormRefusal("the itext block holds <\(element.displayName)>, which surveyd does not read")
            }
            guard let language = element.attribute("lang"), !language.isEmpty else {
                throw XFormRefusal("an itext translation has no lang")
            }
            guard !languages.contains(language) else { throw XFormRefusal("the itext block names the language \(language) twice") }
            languages.append(language)
            if element.attribute("default")?.trimmingWhitespace() == "true()" && defaultLanguage == nil { defaultLanguage = language }
            for text in element.children {
                guard text.name == "text", text.namespace == XMLNamespace.xforms, let id = text.attribute("id") else {
                    throw XFormRefusal("the \(language) translation holds <\(text.displayName)> without an id, which surveyd does not read")
                }
                var entry = Entry()
                for value in text.children {
                    guard value.name == "value", value.namespace == XMLNamespace.xforms else {
                        throw XFormRefusal("the text \(id) holds <\(value.displayName)>, which surveyd does not read")
                    }
                    if let form = value.attribute("form") {
                        guard !Self.deviceForms.contains(form) else { continue }
                        guard value.children.isEmpty else {
                            throw XFormRefusal("the text \(id) shows an answer in its \(form) (<output>); surveyd reads a file name there")
                        }
                        entry.forms.append((form, value.text.trimmingWhitespace()))
                    } else {
                        entry.plain = value
                    }
                }
                texts[id, default: [:]][language] = entry
            }
        }
        if defaultLanguage == nil { defaultLanguage = languages.first }
        if isPlain { defaultLanguage = nil }
    }

    /// One translation, pyxform's `default`: the form has no languages.
    var isPlain: Bool { languages == ["default"] }

    /// The label object of a text id, keyed by language; `what` names its user in a refusal.
    /// `render` writes an answer the text shows (`<output>`); without it such a text is refused.
    func text(id: String, what: String, allowsMedia: Bool = false, render: OutputRenderer? = nil) throws(XFormRefusal) -> JSONValue {
        guard let byLanguage = texts[id] else { throw XFormRefusal("\(what) names the text \(id), which no itext translation has") }
        var object: [String: JSONValue] = [:]
        for language in languages {
            guard let entry = byLanguage[language] else { continue }
            if let media = entry.forms.first(where: { !allowsMedia || !FormAttachments.mediaForms.contains($0.form) }) {
                let kind = FormAttachments.mediaForms.contains(media.form) ? "media (\(media.form): \(media.value))" : "a \(media.form) text"
                throw XFormRefusal("\(what) has \(kind); surveyd shows media with labels only")
            }
            if let plain = entry.plain { object[language] = .string(try Self.text(of: plain, what: what, render: render)) }
        }
        guard !object.isEmpty else {
            // A text that only shows media (a choice shown as a picture) or only guidance: no words.
            let shows = byLanguage.values.contains { !$0.forms.isEmpty } || byLanguage.values.contains { $0.plain == nil }
            guard shows else { throw XFormRefusal("\(what) names the text \(id), which has no text in any language") }
            return .string("")
        }
        if isPlain, let plain = object["default"] { return plain }
        return .object(object)
    }

    /// The media a label's text shows, as the definition's `media`: each form's file, or files
    /// keyed by language when the form has languages; nil when it shows none.
    func media(id: String, what: String) throws(XFormRefusal) -> JSONValue? {
        guard let byLanguage = texts[id] else { return nil }
        var media: [String: [String: JSONValue]] = [:]
        for language in languages {
            for (form, value) in byLanguage[language]?.forms ?? [] where FormAttachments.mediaForms.contains(form) {
                guard let file = Self.fileName(value) else {
                    throw XFormRefusal("\(what) shows \(value) as its \(form); surveyd reads media files the form carries (jr://images/…, jr://audio/…, jr://video/…)")
                }
                media[form, default: [:]][language] = .string(file)
            }
        }
        guard !media.isEmpty else { return nil }
        var out: [String: JSONValue] = [:]
        for (form, files) in media { out[form] = isPlain ? (files["default"] ?? .null) : .object(files) }
        return .object(out)
    }

    /// An element's text, each `<output>` in it written by `render`; any other element is refused.
    static func text(of element: XMLElement, what: String, render: OutputRenderer?) throws(XFormRefusal) -> String {
        try element.value { (child: XMLElement) throws(XFormRefusal) -> String in
            guard child.name == "output", child.namespace == XMLNamespace.xforms else {
                throw XFormRefusal("\(what) holds <\(child.displayName)>, which surveyd does not read")
            }
            guard let render else {
                throw XFormRefusal("\(what) shows an answer inside its text (<output>), which surveyd does not carry there")
            }
            return try render(child)
        }
    }

    /// `jr://images/face.png` → `face.png`.
    static func fileName(_ uri: String) -> String? {
        for prefix in ["jr://images/", "jr://audio/", "jr://video/", "jr://file/"] where uri.hasPrefix(prefix) {
            let name = String(uri.dropFirst(prefix.count))
            return FormAttachments.isValidFileName(name) ? name : nil
        }
        return nil
    }

    /// A text that is the same in every language, read as the plain string it was written as
    /// (`XFormWriter`'s `surveyd:choice="plain"`): its text in the default language.
    func plainText(id: String, what: String, render: OutputRenderer? = nil) throws(XFormRefusal) -> JSONValue {
        let byLanguage = try text(id: id, what: what, render: render).objectValue ?? [:]
        let language = defaultLanguage.flatMap { byLanguage[$0] != nil ? $0 : nil } ?? languages.first { byLanguage[$0] != nil }
        return language.flatMap { byLanguage[$0] } ?? .string("")
    }

    /// `jr:itext('id')` → id.
    static func reference(_ ref: String) -> String? {
        let r = ref.trimmingWhitespace()
        guard r.hasPrefix("jr:itext("), r.hasSuffix(")") else { return nil }
        let inner = r.dropFirst("jr:itext(".count).dropLast().trimmingWhitespace()
        guard inner.count >= 2, let quote = inner.first, quote == "'" || quote == "\"", inner.last == quote else { return nil }
        return String(inner.dropFirst().dropLast())
    }
}
