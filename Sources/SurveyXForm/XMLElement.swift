/// An element of a parsed XML document, copied out of libxml2's tree so the tree can be freed at
/// once: names with their namespace URI (prefixes vary between producers, URIs do not).
struct XMLElement: Sendable {
    struct Attribute: Sendable {
        let name: String
        let namespace: String?
        let value: String

        /// `prefix:name` as a producer would usually write it, for messages.
        var displayName: String { XMLNamespace.prefix(of: namespace).map { "\($0):\(name)" } ?? name }
    }

    let name: String
    let namespace: String?
    let attributes: [Attribute]
    let children: [XMLElement]
    /// The element's own text (text and CDATA children, in order), not its descendants'.
    let text: String
    /// With child elements (mixed content): the text before the first child and after each, so
    /// `pieces.count == children.count + 1`; empty for an element without children.
    var pieces: [String] = []

    var displayName: String { XMLNamespace.prefix(of: namespace).map { "\($0):\(name)" } ?? name }

    /// The element's text as a value: trimmed (a hand-indented XForm's labels), unless the
    /// element says `xml:space="preserve"`, as `XFormWriter` does for text with white space at an end.
    var value: String {
        attribute("space", namespace: XMLNamespace.xml) == "preserve" ? text : text.trimmingWhitespace()
    }

    /// Mixed content read as one text: each child element rendered by `render` in its place,
    /// trimmed as `value` is.
    func value<E: Error>(rendering render: (XMLElement) throws(E) -> String) throws(E) -> String {
        guard !children.isEmpty, pieces.count == children.count + 1 else { return value }
        var out = pieces[0]
        for (i, child) in children.enumerated() { out += try render(child) + pieces[i + 1] }
        return attribute("space", namespace: XMLNamespace.xml) == "preserve" ? out : out.trimmingWhitespace()
    }

    func attribute(_ name: String, namespace: String? = nil) -> String? {
        attributes.first { $0.name == name && $0.namespace == namespace }?.value
    }

    func child(_ name: String, namespace: String? = XMLNamespace.xforms) -> XMLElement? {
        children.first { $0.name == name && $0.namespace == namespace }
    }

    func children(_ name: String, namespace: String? = XMLNamespace.xforms) -> [XMLElement] {
        children.filter { $0.name == name && $0.namespace == namespace }
    }
}
