import CLibXML2

/// An XML document written through libxml2's `xmlTextWriter` into memory: libxml2 escapes every
/// text and attribute value (`<`, `&`, quotes, and the line breaks and tabs an attribute would
/// otherwise lose), so no markup is ever put together by hand. Indented two spaces, as pyxform
/// writes. Text that XML 1.0 cannot hold (control characters, U+FFFE/U+FFFF) is refused before
/// it reaches libxml2, which would write it as it is.
public final class XMLTextWriter {
    public struct Failure: Error {
        public let message: String
    }

    private let buffer: xmlBufferPtr
    private let writer: xmlTextWriterPtr

    /// libxml2 initialised once, before any thread uses it (the reader does the same).
    private static let initialized: Bool = {
        xmlInitParser()
        return true
    }()

    public init() throws(Failure) {
        _ = Self.initialized
        guard let buffer = xmlBufferCreate() else { throw Failure(message: "out of memory") }
        guard let writer = xmlNewTextWriterMemory(buffer, 0) else {
            xmlBufferFree(buffer)
            throw Failure(message: "out of memory")
        }
        self.buffer = buffer
        self.writer = writer
        xmlTextWriterSetIndent(writer, 1)
        _ = Self.withXMLString("  ") { xmlTextWriterSetIndentString(writer, $0) }
    }

    deinit {
        xmlFreeTextWriter(writer)
        xmlBufferFree(buffer)
    }

    public func startDocument() throws(Failure) {
        try check(xmlTextWriterStartDocument(writer, "1.0", "UTF-8", nil), "the document")
    }

    public func startElement(_ name: String) throws(Failure) {
        try check(Self.withXMLString(name) { xmlTextWriterStartElement(writer, $0) }, "<\(name)>")
    }

    /// `name` as written (`jr:count`, `xmlns:h`): every prefix is declared on the root.
    public func attribute(_ name: String, _ value: String) throws(Failure) {
        try Self.checkCharacters(value, "the attribute \(name)")
        try check(Self.withXMLString(name) { n in Self.withXMLString(value) { xmlTextWriterWriteAttribute(writer, n, $0) } }, name)
    }

    public func text(_ value: String) throws(Failure) {
        try Self.checkCharacters(value, "a text")
        try check(Self.withXMLString(value) { xmlTextWriterWriteString(writer, $0) }, "a text")
    }

    public func endElement() throws(Failure) {
        try check(xmlTextWriterEndElement(writer), "an end tag")
    }

    /// An element holding only `text` (none: an empty element), with its attributes.
    public func element(_ name: String, _ attributes: [(String, String)] = [], text: String? = nil) throws(Failure) {
        try startElement(name)
        for (n, v) in attributes { try attribute(n, v) }
        if let text, !text.isEmpty { try self.text(text) }
        try endElement()
    }

    /// Ends the document and hands its bytes over.
    public func finish() throws(Failure) -> [UInt8] {
        try check(xmlTextWriterEndDocument(writer), "the end of the document")
        try check(xmlTextWriterFlush(writer), "the document")
        guard let content = xmlBufferContent(buffer) else { return [] }
        return Array(UnsafeBufferPointer(start: content, count: Int(xmlBufferLength(buffer))))
    }

    private func check(_ result: Int32, _ what: String) throws(Failure) {
        guard result >= 0 else { throw Failure(message: "libxml2 could not write \(what)") }
    }

    /// XML 1.0's Char: tab, line feed, carriage return, and U+0020 up, without U+FFFE and U+FFFF
    /// (Swift strings hold no surrogates).
    static func isXMLCharacter(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x9, 0xA, 0xD: true
        case 0x20...0xFFFD: true
        case 0x10000...0x10FFFF: true
        default: false
        }
    }

    static func checkCharacters(_ s: String, _ what: String) throws(Failure) {
        if let problem = uncarriedCharacter(in: s) { throw Failure(message: "\(what) \(problem)") }
    }

    /// What is wrong with text no XML document can carry ("holds the character U+0001, …"), or nil.
    static func uncarriedCharacter(in s: String) -> String? {
        guard let bad = s.unicodeScalars.first(where: { !isXMLCharacter($0) }) else { return nil }
        let code = String(bad.value, radix: 16, uppercase: true)
        return "holds the character U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code), which XML 1.0 cannot carry"
    }

    private static func withXMLString<R>(_ s: String, _ body: (UnsafePointer<xmlChar>) -> R) -> R {
        var bytes = Array(s.utf8)
        bytes.append(0)
        return bytes.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
