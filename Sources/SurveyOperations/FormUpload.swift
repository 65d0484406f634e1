import Foundation
import SurveyDomain
import SurveyStorage
import SurveyXForm

/// A version sent with the files its form names (`multipart/form-data`: a part `form` and a part
/// per file), read by any door into what `Surveys.publish` writes: the definition with its CSV
/// files read into it, and each file staged for the write — verified and fsynced in `tmp/`,
/// hashed (SHA-256 and MD5) — so that the transaction only links them into place.
public struct FormUpload: Sendable {
    /// One file part as it arrived (on disk or in memory): its name, its declared type, its bytes in order.
    public struct SentFile: Sendable {
        public let fileName: String
        public let declaredType: String
        public let size: Int
        public let read: @Sendable (_ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Void

        public init(fileName: String, declaredType: String, size: Int,
                    read: @escaping @Sendable (_ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Void) {
            self.fileName = fileName
            self.declaredType = declaredType
            self.size = size
            self.read = read
        }

        /// A file a version holds already, read again from the store: a draft made again with
        /// the files it has (ODK Central's draft takes its files one at a time).
        public static func stored(_ a: VersionAttachmentRecord, blobs: BlobStore) -> SentFile {
            SentFile(fileName: a.fileName, declaredType: a.contentType, size: Int(a.size)) { body in
                let reader = try blobs.reader(sha256: a.sha256)
                defer { reader.close() }
                var buffer = [UInt8](repeating: 0, count: 64 << 10)
                while true {
                    let n = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
                    guard n > 0 else { break }
                    try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                }
            }
        }

        func bytes() throws -> [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(size)
            try read { out.append(contentsOf: $0) }
            return out
        }
    }

    /// A file ready for the version's transaction: its row, and where its verified bytes wait.
    public struct Staged: Sendable {
        public let fileName: String
        public let contentType: String
        public let size: Int64
        public let sha256: String
        public let md5: String
        public let tempPath: String

        func record(surveyVersionId: String) -> VersionAttachmentRecord {
            VersionAttachmentRecord(surveyVersionId: surveyVersionId, fileName: fileName, contentType: contentType, size: size,
                                    sha256: sha256, md5: md5)
        }
    }

    public let format: FormSources.Format
    /// The form's bytes: the JSON body (`{"definition": …}`), the XLSForm or the XForm.
    public let form: [UInt8]
    public let contentType: String?
    public let fileName: String
    public let files: [SentFile]
    /// A JSON form that is the definition itself (a file the console uploads), not `{"definition": …}`.
    public let isBareDefinition: Bool

    public init(format: FormSources.Format, form: [UInt8], contentType: String?, fileName: String = "", files: [SentFile] = [],
                isBareDefinition: Bool = false) {
        self.format = format
        self.form = form
        self.contentType = contentType
        self.fileName = fileName
        self.files = files
        self.isBareDefinition = isBareDefinition
    }

    /// The type a file is served with: by its name's extension, never as the sender declared it
    /// (a type the browser would run, such as HTML, is never answered).
    public static func contentType(ofFileNamed name: String) -> String {
        let ext = name.split(separator: ".").last.map { $0.lowercased() } ?? ""
        return [
            "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
            "svg": "image/svg+xml", "bmp": "image/bmp", "heic": "image/heic",
            "mp3": "audio/mpeg", "m4a": "audio/mp4", "wav": "audio/wav", "ogg": "audio/ogg", "amr": "audio/amr", "3ga": "audio/3gpp",
            "mp4": "video/mp4", "3gp": "video/3gpp", "webm": "video/webm",
            "csv": "text/csv", "txt": "text/plain", "xml": "application/xml", "json": "application/json",
            "geojson": "application/geo+json", "pdf": "application/pdf",
        ][ext] ?? "application/octet-stream"
    }
}

extension FormSources {
    /// A form and the files it names, read into what a version publishes: the form read as its
    /// format says, every file it names sent and every file sent named (422 / 1002 at
    /// `attachments.<file name>` otherwise), its CSV files read into the definition, then each
    /// file staged in `blobs`' temp directory. Nothing is staged when anything is refused.
    /// `surveyId`: the survey it is published to, whose id an XLSForm without `form_id` takes.
    /// `draftLackingFiles`: for a draft that takes its files later (ODK Central's), a named file
    /// not sent is listed as pending rather than refused (`FormAttachments.pendingFilesKey`).
    /// `carrying`: files a version had, taken again where the form names them and does not come
    /// with a file of that name (ODK Central's new draft keeps the files it still names).
    public func published(_ upload: FormUpload, surveyId: String, limits: Operations.Limits, blobs: BlobStore,
                          draftLackingFiles: Bool = false, carrying: [FormUpload.SentFile] = []) throws -> Published {
        var sent: [String: FormUpload.SentFile] = [:]
        for file in upload.files {
            guard FormAttachments.isValidFileName(file.fileName) else {
                throw ApiError(.validationFailed, "A file's name is not one a form can name.",
                               errors: [FieldError(path: "attachments", message: "\(file.fileName.debugDescription) is not a file name (no directory, no control character, at most 255 bytes)")])
            }
            guard sent.updateValue(file, forKey: file.fileName) == nil else {
                throw ApiError(.validationFailed, "A file is sent twice.", errors: [FieldError(path: "attachments.\(file.fileName)", message: "\(file.fileName) is sent twice")])
            }
        }
        // The form, its files still to be read into it.
        var definition: JSONValue
        var source: VersionSourceRecord?
        var identity: (formId: String?, version: String?)?
        switch upload.format {
        case .json:
            try limits.checkJSONDefinition(bytes: upload.form.count)
            if upload.isBareDefinition {
                do { definition = try JSONParser.parse(upload.form) } catch {
                    throw ApiError(.validationFailed, "The file is not valid JSON: \(error).", errors: [FieldError(path: "definition", message: "not JSON")])
                }
            } else {
                guard let d = try JSONBody(upload.form).fields["definition"] else { throw ApiError.malformed("`definition` is required.") }
                definition = d
            }
        case .xlsform:
            let converted = try xform(fromXLSForm: upload.form, contentType: upload.contentType, fileName: upload.fileName, defaultFormId: surveyId)
            let read = try Self.unresolved(converted.xform, at: "xlsform")
            definition = read.definition
            identity = read.identity
            source = VersionSourceRecord(format: converted.format, contentType: converted.contentType, source: converted.source,
                                         xform: converted.xform, warnings: converted.warnings + read.warnings)
        case .xform:
            let read = try Self.unresolved(upload.form, at: "xform")
            definition = read.definition
            identity = read.identity
            source = VersionSourceRecord(format: Format.xform.rawValue, contentType: "application/xml", source: upload.form, xform: upload.form,
                                         warnings: read.warnings)
        }
        var files = upload.files
        if !carrying.isEmpty {
            let named = Set(FormAttachments.named(in: definition).map(\.fileName))
            for file in carrying where named.contains(file.fileName) && sent[file.fileName] == nil {
                sent[file.fileName] = file
                files.append(file)
            }
        }
        // Every file named is sent and every file sent is named; the CSV files read into it.
        var csvLimits = CSVTable.Limits()
        csvLimits.maxBytes = min(csvLimits.maxBytes, limits.maxFormBytes)
        let csvLimit = csvLimits.maxBytes
        do {
            definition = try FormAttachments.resolve(definition, sent: Set(sent.keys), limits: csvLimits, pendingAllowed: draftLackingFiles) { name in
                guard let file = sent[name] else { return [] }
                guard file.size <= csvLimit else {
                    throw CSVTable.Refusal(message: "it is \(file.size) bytes; a CSV file a form reads is at most \(csvLimit) bytes")
                }
                return try file.bytes()
            }
        } catch let e as ValidationErrors {
            throw ApiError(.validationFailed, "The form and the files sent with it do not match.", errors: e.errors)
        }
        var parsed: SurveyDefinition?
        if upload.format != .json {
            let at = upload.format == .xlsform ? "xlsform" : "xform"
            do { parsed = try XFormReader.check(definition) } catch {
                throw ApiError(.validationFailed, "The \(upload.format == .xlsform ? "XLSForm" : "XForm") cannot be published.",
                               errors: [FieldError(path: at, message: error.message)])
            }
        }
        var staged: [FormUpload.Staged] = []
        do {
            for file in files { staged.append(try Self.stage(file, blobs: blobs)) }
        } catch {
            for s in staged { unlink(s.tempPath) }
            throw error
        }
        return Published(definition: definition, source: source, attachments: staged, parsed: parsed, xformIdentity: identity)
    }

    /// The definition an XForm maps to, its files not read yet, and what the reader says of it
    /// beyond the definition (warnings): 422 / 1002 at `at`.
    static func unresolved(_ xform: [UInt8], at: String) throws -> (definition: JSONValue, warnings: [String], identity: (formId: String?, version: String?)) {
        do { return try XFormReader.read(xform) } catch {
            let what = at == "xlsform" ? "The XLSForm converts into a form surveyd does not carry." : "The XForm cannot be published."
            throw ApiError(.validationFailed, what, errors: [FieldError(path: at, message: error.message)])
        }
    }

    /// One file copied into a temp file of the store (fsynced), hashed, and checked to be what
    /// its name says where the type is one surveyd recognises (1011 otherwise).
    static func stage(_ file: FormUpload.SentFile, blobs: BlobStore) throws -> FormUpload.Staged {
        let type = FormUpload.contentType(ofFileNamed: file.fileName)
        let temp = try blobs.createTemp()
        do {
            var md5 = Digest(.md5)
            var check = FileCheck(contentType: type)
            try file.read { piece in
                md5.update(piece)
                check.update(piece)
                try temp.write(piece)
            }
            let sha256 = try temp.finish()
            if FileSignature.knownTypes.contains(type) {
                do { try check.verdict() } catch {
                    throw ApiError(.corruptFile, "\(file.fileName) is not a \(type) file, as its name says.",
                                   errors: [FieldError(path: "attachments.\(file.fileName)", message: "its bytes are not a \(type) file")])
                }
            }
            return FormUpload.Staged(fileName: file.fileName, contentType: type, size: Int64(check.size), sha256: sha256,
                                     md5: Hex.encode(md5.finalize()), tempPath: temp.path)
        } catch {
            temp.discard()
            throw error
        }
    }
}
