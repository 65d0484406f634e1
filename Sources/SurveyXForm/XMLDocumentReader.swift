import CLibXML2
import SurveyExpressions
#if canImport(Glibc)
import Glibc
#endif

/// Parses untrusted XML with libxml2 into `XMLElement`s. The input never reaches the network or
/// the file system and never expands an entity: a document with a DOCTYPE is refused outright
/// (an XForm has none), the size is capped before parsing, and nesting is capped at `maxDepth`
/// while the tree is copied — before anything recurses over it — so every input costs bounded
/// time, memory and stack.
enum XMLDocumentReader {
    static let maxBytes = 10 * 1024 * 1024
    /// Elements copied out of one document; a 10 MB XForm holds far fewer.
    static let maxElements = 500_000
    /// Elements nested in elements. A form nests groups and repeats at most 16 deep (an XForm's
    /// body spends two levels on a repeat), so 64 holds every form surveyd publishes and every
    /// instance of one; what is deeper is refused here, because the readers after this one recurse
    /// once per level on the server's 512 KB thread stacks.
    public static let maxDepth = 64

    /// Initialises libxml2 once, before any thread parses.
    private static let initialized: Bool = {
        xmlInitParser()
        return true
    }()

    /// `document` names what is read in messages ("the XForm", "the submission").
    static func parse(_ bytes: [UInt8], document: String = "the XForm") throws(XFormRefusal) -> XMLElement {
        ParsingTally.countXMLDocument()
        guard bytes.count <= maxBytes else {
            throw XFormRefusal("\(document) is \(bytes.count) bytes; surveyd reads documents of at most \(maxBytes) bytes")
        }
        guard !bytes.isEmpty else { throw XFormRefusal("\(document) is empty") }
        // libxml2 also reads UTF-16 and UCS-4, in which a DOCTYPE would escape the byte scan below:
        // XForms and submissions are UTF-8, so anything else is refused.
        if contains(bytes, "\0") || bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
            throw XFormRefusal("\(document) is not UTF-8 text (it holds NUL bytes or a UTF-16 byte order mark)")
        }
        if let declared = declaredEncoding(bytes), !["utf-8", "utf8"].contains(declared.lowercased()) {
            throw XFormRefusal("\(document) declares encoding=\"\(declared)\", but surveyd reads documents as UTF-8 and apps read them as declared, so its text would differ: save it as UTF-8 and declare encoding=\"UTF-8\"")
        }
        if contains(bytes, "<!DOCTYPE") || contains(bytes, "<!ENTITY") {
            throw XFormRefusal("\(document) has a DOCTYPE (a DTD or entity declarations); XForms and submissions have none, and surveyd does not read them")
        }
        _ = initialized
        guard let context = xmlNewParserCtxt() else { throw XFormRefusal("the XML parser could not start (out of memory)") }
        defer { xmlFreeParserCtxt(context) }
        // NONET: no network; neither NOENT (substitution) nor DTDLOAD; NOERROR/NOWARNING: errors
        // come back here, not on stderr; no HUGE, so libxml2's depth and size limits hold.
        // COMPACT: a short text (most answers) is kept inside its node, one allocation fewer
        // each; the tree is only read, then freed.
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOBLANKS.rawValue | XML_PARSE_NOERROR.rawValue
            | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_COMPACT.rawValue)
        let parsed = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.flatMap { base in
                base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    xmlCtxtReadMemory(context, $0, Int32(buffer.count), "xform.xml", "UTF-8", options)
                }
            }
        }
        guard let tree = parsed else { throw XFormRefusal("\(document) is not well-formed XML: \(lastError(context))") }
        defer { xmlFreeDoc(tree) }
        if tree.pointee.intSubset != nil || tree.pointee.extSubset != nil {
            throw XFormRefusal("\(document) has a DOCTYPE (a DTD or entity declarations); XForms and submissions have none, and surveyd does not read them")
        }
        guard let root = xmlDocGetRootElement(tree) else { throw XFormRefusal("\(document) has no root element") }
        var copying = Copying(document: document)
        return try copy(root, depth: 1, &copying)
    }

    /// What a copy carries from element to element.
    private struct Copying {
        let document: String
        var count = 0
        /// The namespace URIs met so far: a document declares a handful, and its elements share them.
        var namespaces: [(ns: xmlNsPtr, uri: String?)] = []

        mutating func namespaceURI(_ ns: xmlNsPtr?) -> String? {
            guard let ns else { return nil }
            if let known = namespaces.first(where: { $0.ns == ns }) { return known.uri }
            let uri = ns.pointee.href.map { String(cString: $0) }
            if namespaces.count < 16 { namespaces.append((ns, uri)) }
            return uri
        }
    }

    /// Recursion is bounded by `maxDepth`, checked before each level is entered.
    private static func copy(_ node: xmlNodePtr, depth: Int, _ copying: inout Copying) throws(XFormRefusal) -> XMLElement {
        let document = copying.document
        guard depth <= maxDepth else {
            throw XFormRefusal("\(document) nests elements more than \(maxDepth) deep; forms nest groups and repeats at most 16 deep")
        }
        copying.count += 1
        guard copying.count <= maxElements else { throw XFormRefusal("\(document) has more than \(maxElements) elements") }
        var attributes: [XMLElement.Attribute] = []
        var attribute = node.pointee.properties
        while let a = attribute {
            var value = ""
            if let raw = cxml_attribute_value(a) {
                value = String(cString: raw)
                cxml_free(raw)
            }
            attributes.append(.init(name: string(a.pointee.name), namespace: copying.namespaceURI(a.pointee.ns), value: value))
            attribute = a.pointee.next
        }
        var children: [XMLElement] = []
        var text = ""
        // The text before the first child element and after each: mixed content (a label with an
        // <output>). Kept only once a child element is met, so a leaf (most of an instance) costs
        // no array of its own.
        var pieces: [String] = []
        var piece = ""
        var child = node.pointee.children
        while let c = child {
            switch c.pointee.type {
            case XML_ELEMENT_NODE:
                children.append(try copy(c, depth: depth + 1, &copying))
                pieces.append(piece)
                piece = ""
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                let content = string(c.pointee.content)
                text += content
                piece += content
            case XML_ENTITY_REF_NODE: throw XFormRefusal("\(document) refers to an entity (&\(string(c.pointee.name));); surveyd does not expand entities")
            default: break // comments and processing instructions carry nothing of the form
            }
            child = c.pointee.next
        }
        if !children.isEmpty { pieces.append(piece) }
        return XMLElement(name: string(node.pointee.name), namespace: copying.namespaceURI(node.pointee.ns),
                          attributes: attributes, children: children, text: text, pieces: pieces)
    }

    /// The `encoding` of the XML declaration the document starts with (after a UTF-8 byte order
    /// mark), or nil when it names none.
    static func declaredEncoding(_ bytes: [UInt8]) -> String? {
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        guard bytes.count >= start + 5, bytes[start..<start + 5].elementsEqual("<?xml".utf8) else { return nil }
        // The declaration ends at the first `?>`; it is short.
        let window = bytes[start..<min(bytes.count, start + 512)]
        guard let end = window.indices.first(where: { $0 + 1 < window.endIndex && window[$0] == UInt8(ascii: "?") && window[$0 + 1] == UInt8(ascii: ">") }) else {
            return nil
        }
        let declaration = Array(bytes[start..<end]), name = Array("encoding".utf8)
        guard let at = declaration.indices.first(where: { declaration[$0...].starts(with: name) }) else { return nil }
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        var rest = declaration[(at + name.count)...].drop(while: isSpace)
        guard rest.first == UInt8(ascii: "=") else { return nil }
        rest = rest.dropFirst().drop(while: isSpace)
        guard let quote = rest.first, quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else { return nil }
        return String(decoding: rest.dropFirst().prefix { $0 != quote }, as: UTF8.self)
    }

    private static func string(_ p: UnsafePointer<xmlChar>?) -> String { p.map { String(cString: $0) } ?? "" }
    private static func string(_ p: UnsafeMutablePointer<xmlChar>?) -> String { p.map { String(cString: $0) } ?? "" }

    private static func lastError(_ context: xmlParserCtxtPtr) -> String {
        let error = context.pointee.lastError
        let message = error.message.map { String(cString: $0) }?.trimmingWhitespace() ?? "unknown error"
        return error.line > 0 ? "\(message) (line \(error.line))" : message
    }

    /// `memchr` to each candidate, then `memcmp`: the scans run over every byte of every submission.
    static func contains(_ bytes: [UInt8], _ needle: StaticString) -> Bool {
        let n = needle.utf8CodeUnitCount
        return bytes.withUnsafeBytes { haystack in
            guard let base = haystack.baseAddress, n > 0, haystack.count >= n else { return false }
            let first = Int32(needle.utf8Start.pointee)
            var offset = 0
            while offset <= haystack.count - n, let hit = memchr(base + offset, first, haystack.count - n + 1 - offset) {
                if memcmp(hit, needle.utf8Start, n) == 0 { return true }
                offset = base.distance(to: UnsafeRawPointer(hit)) + 1
            }
            return false
        }
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        // Most text read (ids, versions, answers) has no space at either end: taken as it is,
        // without looking up each scalar's Unicode properties.
        let whole = String(self)
        if let first = whole.utf8.first, let last = whole.utf8.last, Self.isPlainByte(first), Self.isPlainByte(last) { return whole }
        let scalars = whole.unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let end = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[start...end])
    }

    /// An ASCII byte that is not white space: no string starting or ending with one needs trimming.
    private static func isPlainByte(_ b: UInt8) -> Bool { b > 0x20 && b < 0x7F }
}
