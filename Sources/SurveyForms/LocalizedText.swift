/// Text a person reads — a label, a hint, a constraint message — in one language or several:
/// `"Age"`, or `{"English (en)": "Age", "Français (fr)": "Âge"}` keyed by language name.
public struct LocalizedText: Sendable, Equatable {
    /// Language name and text, in the order the definition lists them; a plain string is one
    /// entry whose language is nil.
    public let entries: [(language: String?, text: String)]

    public init(_ text: String) { entries = [(nil, text)] }

    init(entries: [(language: String?, text: String)]) { self.entries = entries }

    /// The languages named, in order (none for a plain string).
    public var languages: [String] { entries.compactMap(\.language) }

    /// The text in `language`; otherwise the plain text, then the first entry.
    public func text(in language: String?) -> String {
        if let language, let hit = entries.first(where: { $0.language == language }) { return hit.text }
        return (entries.first { $0.language == nil } ?? entries.first)?.text ?? ""
    }

    public static func == (a: LocalizedText, b: LocalizedText) -> Bool {
        a.entries.count == b.entries.count && zip(a.entries, b.entries).allSatisfy { $0.language == $1.language && $0.text == $1.text }
    }
}
