import CLibXML2

/// An XForm with its version set: the `version` attribute of the primary instance's root, the
/// one apps send back with every filled-in form (ODK Central's `draft/publish?version=`). The
/// document is read with libxml2 under the same limits as every XForm (`XMLDocumentReader`),
/// the attribute set on libxml2's tree, and the tree written back: nothing else of the form
/// changes meaning.
public enum XFormVersionRewriter {
    public static func setting(version: String, in xform: [UInt8]) throws(XFormRefusal) -> [UInt8] {
        guard !version.isEmpty, version.utf8.count <= 255 else { throw XFormRefusal("a form's version is 1 to 255 characters") }
        if let problem = XMLTextWriter.uncarriedCharacter(in: version) { throw XFormRefusal("the version \(problem)") }
        // Checked as any XForm is before libxml2 reads it again to write it.
        _ = try XMLDocumentReader.parse(xform)
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        let parsed = xform.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.flatMap { base in
                base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { xmlReadMemory($0, Int32(buffer.count), "xform.xml", "UTF-8", options) }
            }
        }
        guard let document = parsed else { throw XFormRefusal("the XForm is not well-formed XML") }
        defer { xmlFreeDoc(document) }
        guard let html = xmlDocGetRootElement(document), let head = child(of: html, named: "head"), let model = child(of: head, named: "model"),
              let instance = child(of: model, named: "instance"), let root = child(of: instance, named: nil) else {
            throw XFormRefusal("the XForm has no primary instance (h:html/h:head/model/instance with one element)")
        }
        let name: [xmlChar] = Array("version".utf8) + [0], value: [xmlChar] = Array(version.utf8) + [0]
        guard xmlSetProp(root, name, value) != nil else { throw XFormRefusal("the version could not be set (out of memory)") }
        var bytes: UnsafeMutablePointer<xmlChar>?
        var size: Int32 = 0
        xmlDocDumpMemoryEnc(document, &bytes, &size, "UTF-8")
        guard let bytes, size > 0 else { throw XFormRefusal("the XForm could not be written (out of memory)") }
        defer { cxml_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(size)))
    }

    /// The first element child of `node` with the local name `name` (any name when nil).
    private static func child(of node: xmlNodePtr, named name: String?) -> xmlNodePtr? {
        var c = node.pointee.children
        while let n = c {
            if n.pointee.type == XML_ELEMENT_NODE, name == nil || n.pointee.name.map({ String(cString: $0) }) == name { return n }
            c = n.pointee.next
        }
        return nil
    }
}
