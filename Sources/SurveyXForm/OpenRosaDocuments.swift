/// The XML documents of the OpenRosa door (the OpenRosa Form List and Form Submission APIs), written
/// through libxml2 like every XForm surveyd writes.
public enum OpenRosaDocuments {
    /// What is wrong with text no XML document can carry — a control character, U+FFFE — or nil:
    /// such text is refused where it enters (a survey's title is every form list's `name`).
    public static func uncarriedCharacter(in text: String) -> String? { XMLTextWriter.uncarriedCharacter(in: text) }

    /// The text without the characters XML cannot carry: a name stored before they were refused
    /// still lists its form, and the form list stays a document.
    public static func carried(_ text: String) -> String {
        guard uncarriedCharacter(in: text) != nil else { return text }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: text.unicodeScalars.filter(XMLTextWriter.isXMLCharacter))
        return String(out)
    }

    /// One `<xform>` of a form list.
    public struct ListedForm: Sendable {
        public let formId: String
        public let name: String
        public let version: String?
        /// Hex MD5 of the bytes at `downloadURL`.
        public let md5: String
        public let downloadURL: String
        /// The form's manifest, for a form with attachments.
        public let manifestURL: String?

        public init(formId: String, name: String, version: String?, md5: String, downloadURL: String, manifestURL: String? = nil) {
            self.formId = formId; self.name = name; self.version = version; self.md5 = md5; self.downloadURL = downloadURL
            self.manifestURL = manifestURL
        }
    }

    /// One `<mediaFile>` of a manifest.
    public struct MediaFile: Sendable {
        public let fileName: String
        /// Hex MD5 of the bytes at `downloadURL`.
        public let md5: String
        public let downloadURL: String
        /// `entityList` for an entity list's CSV (Collect then checks it for updates).
        public let type: String?

        public init(fileName: String, md5: String, downloadURL: String, type: String? = nil) {
            self.fileName = fileName; self.md5 = md5; self.downloadURL = downloadURL; self.type = type
        }
    }

    /// `<manifest xmlns="http://openrosa.org/xforms/xformsManifest">`: the files a form's app
    /// downloads with it, each by name, MD5 and absolute URL.
    public static func manifest(_ files: [MediaFile]) throws(XFormRefusal) -> [UInt8] {
        do throws(XMLTextWriter.Failure) {
            let w = try XMLTextWriter()
            try w.startDocument()
            try w.startElement("manifest")
            try w.attribute("xmlns", "http://openrosa.org/xforms/xformsManifest")
            for file in files {
                try w.startElement("mediaFile")
                if let type = file.type { try w.attribute("type", type) }
                try w.element("filename", text: file.fileName)
                try w.element("hash", text: "md5:" + file.md5)
                try w.element("downloadUrl", text: file.downloadURL)
                try w.endElement()
            }
            try w.endElement()
            return try w.finish()
        } catch {
            throw XFormRefusal("the manifest could not be written: \(error.message)")
        }
    }

    /// `<xforms xmlns="http://openrosa.org/xforms/xformsList">`, one `<xform>` per form.
    public static func formList(_ forms: [ListedForm]) throws(XFormRefusal) -> [UInt8] {
        do throws(XMLTextWriter.Failure) {
            let w = try XMLTextWriter()
            try w.startDocument()
            try w.startElement("xforms")
            try w.attribute("xmlns", "http://openrosa.org/xforms/xformsList")
            for form in forms {
                try w.startElement("xform")
                try w.element("formID", text: form.formId)
                try w.element("name", text: form.name)
                if let version = form.version { try w.element("version", text: version) }
                try w.element("hash", text: "md5:" + form.md5)
                try w.element("downloadUrl", text: form.downloadURL)
                if let manifest = form.manifestURL { try w.element("manifestUrl", text: manifest) }
                try w.endElement()
            }
            try w.endElement()
            return try w.finish()
        } catch {
            throw XFormRefusal("the form list could not be written: \(error.message)")
        }
    }

    /// `<OpenRosaResponse xmlns="http://openrosa.org/http/response">` with the one `<message>`
    /// an app shows its user.
    public static func response(message: String) -> [UInt8] {
        do throws(XMLTextWriter.Failure) {
            let w = try XMLTextWriter()
            try w.startDocument()
            try w.startElement("OpenRosaResponse")
            try w.attribute("xmlns", "http://openrosa.org/http/response")
            // A message may quote what a form or a submission held: what XML cannot carry is left out.
            var text = String.UnicodeScalarView()
            text.append(contentsOf: message.unicodeScalars.filter(XMLTextWriter.isXMLCharacter))
            try w.element("message", text: String(text))
            try w.endElement()
            return try w.finish()
        } catch {
            return []  // libxml2 out of memory: the status and the error code header still say it
        }
    }
}
