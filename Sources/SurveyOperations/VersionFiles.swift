import Synchronization
import SurveyDomain
import SurveyStorage
import SurveyXForm

/// What a version's document says of its two files: what it was published from (the bytes
/// `GET …/source` answers) and the XForm ODK apps download (the bytes `GET …/xform` answers),
/// as an ODK server lists a form — its id, version and MD5.
public struct VersionFiles: Sendable, Equatable {
    public struct XForm: Sendable, Equatable {
        /// The `id` and `version` of the XForm's primary instance root; nil where it has none
        /// (an uploaded XForm may lack either; a generated one has both).
        public let formId: String?
        public let version: String?
        /// Hex MD5 of the XForm's bytes.
        public let md5: String
    }

    public let sourceFormat: FormSources.Format
    /// Hex SHA-256 of the source's bytes.
    public let sourceSHA256: String
    /// nil when a JSON definition cannot be written as an XForm (`XFormWriter.Unwritable`).
    public let xform: XForm?
    /// The files the version was published with, by name.
    public let attachments: [VersionAttachmentRecord]

    /// `source` and `xform` of the version document.
    public var json: (source: JSONValue, xform: JSONValue) {
        let source: JSONValue = ["format": .string(sourceFormat.rawValue), "sha256": .string(sourceSHA256)]
        guard let xform else { return (source, .null) }
        return (source, ["formId": xform.formId.map(JSONValue.string) ?? .null, "version": xform.version.map(JSONValue.string) ?? .null,
                         "md5": .string(xform.md5)])
    }
}

extension FormSources {
    /// What `GET …/source` answers: the XLSForm or XForm as uploaded, with its type, or the
    /// definition of a version published as JSON.
    public static func source(of version: SurveyVersionRecord, kept: VersionSourceRecord?) throws -> (contentType: String, bytes: [UInt8]) {
        if let kept { return (kept.contentType, kept.source) }
        return ("application/json", CanonicalJSON.encode(try JSONParser.parse(Array(version.definition.utf8))))
    }

    /// What `GET …/xform` answers: the XForm kept with the version (uploaded, or pyxform's of an
    /// uploaded XLSForm), byte for byte; for a version published as JSON, the XForm of its
    /// definition, written on request (`XFormWriter`: its formId, else the survey's id; the
    /// version's number). 404 / 1005 for a definition no XForm can hold, saying why.
    public static func xform(of version: SurveyVersionRecord, kept: VersionSourceRecord?) throws -> [UInt8] {
        if let kept { return kept.xform }
        do {
            return try generatedXForm(of: version)
        } catch let unwritable as XFormWriter.Unwritable {
            throw ApiError(.notFound, "This version's definition cannot be written as an XForm: \(unwritable.message).")
        }
    }

    /// The XForm of a version published as JSON.
    public static func generatedXForm(of version: SurveyVersionRecord) throws -> [UInt8] {
        try generatedXForm(of: version, definition: try JSONParser.parse(Array(version.definition.utf8)))
    }

    private static func generatedXForm(of version: SurveyVersionRecord, definition: JSONValue,
                                       parsed: SurveyDefinition? = nil) throws(XFormWriter.Unwritable) -> [UInt8] {
        try XFormWriter.xform(of: definition, parsed: parsed, formId: version.surveyId, version: String(version.number))
    }

    /// The version's `source` and `xform`, from its files. `parsed`: its definition as parsed
    /// already; `identity`: the form id and version of its kept XForm, as read when it was published.
    public static func files(of version: SurveyVersionRecord, kept: VersionSourceRecord?, attachments: [VersionAttachmentRecord] = [],
                             parsed: SurveyDefinition? = nil, identity known: (formId: String?, version: String?)? = nil) throws -> VersionFiles {
        let source = try source(of: version, kept: kept).bytes
        guard let kept else {
            let definition = try JSONParser.parse(Array(version.definition.utf8))
            // The root of the XForm written from it names the definition's formId (else the survey's id) and the number.
            let xform = (try? generatedXForm(of: version, definition: definition, parsed: parsed)).map {
                VersionFiles.XForm(formId: definition["formId"]?.stringValue ?? version.surveyId, version: String(version.number),
                                   md5: Digest.md5Hex($0))
            }
            return VersionFiles(sourceFormat: .json, sourceSHA256: Digest.sha256Hex(source), xform: xform, attachments: attachments)
        }
        let identity = known ?? (try? XFormReader.identity(from: kept.xform))
        return VersionFiles(sourceFormat: Format(rawValue: kept.format) ?? .xform, sourceSHA256: Digest.sha256Hex(source),
                            xform: VersionFiles.XForm(formId: identity?.formId, version: identity?.version, md5: Digest.md5Hex(kept.xform)),
                            attachments: attachments)
    }
}

/// The `VersionFiles` of versions by id: a version's files never change once published, and
/// describing one hashes up to two files of up to 10 MB (or writes an XForm).
public final class VersionFilesCache: Sendable {
    private let entries = Mutex<[String: VersionFiles]>([:])

    public init() {}

    /// What is known of a version already, without reading it.
    func cached(_ surveyVersionId: String) -> VersionFiles? {
        entries.withLock { $0[surveyVersionId] }
    }

    func files(of version: SurveyVersionRecord, parsed: SurveyDefinition?, identity: (formId: String?, version: String?)? = nil,
               kept: () throws -> (VersionSourceRecord?, [VersionAttachmentRecord])) throws -> VersionFiles {
        if let hit = entries.withLock({ $0[version.surveyVersionId] }) { return hit }
        let (source, attachments) = try kept()
        let files = try FormSources.files(of: version, kept: source, attachments: attachments, parsed: parsed, identity: identity)
        entries.withLock { $0[version.surveyVersionId] = files }
        return files
    }
}

extension Operations {
    /// The `source` and `xform` of a version's document, its kept files read from the store.
    public func versionFiles(of version: SurveyVersionRecord) throws -> VersionFiles {
        try versionFileCache.files(of: version, parsed: try? definitions.definition(of: version)) {
            try database.read { db in
                (try db.versionSource(orgId: version.orgId, surveyVersionId: version.surveyVersionId),
                 try db.versionAttachments(orgId: version.orgId, surveyVersionId: version.surveyVersionId))
            }
        }
    }

    /// A file a version was published with, for any member; another organization's, or a name
    /// the version has not, is not found.
    public func visibleVersionAttachment(_ surveyVersionId: String, fileName: String, of orgId: String, by user: UserRecord) throws -> VersionAttachmentRecord {
        try member(user, of: orgId)
        guard let found = try database.read({ try $0.versionAttachment(orgId: orgId, surveyVersionId: surveyVersionId, fileName: fileName) }) else {
            throw ApiError.notFound()
        }
        return found
    }

    /// The same for a version just published, from what its transaction wrote — never read back:
    /// the answer may be rendered inside that transaction (a keyed publish keeps it there), where
    /// a reader cannot see the rows yet.
    public func versionFiles(of version: SurveyVersionRecord, published: FormSources.Published) throws -> VersionFiles {
        try versionFileCache.files(of: version, parsed: try? definitions.definition(of: version), identity: published.xformIdentity) {
            // By name, as the store lists them.
            (published.source, published.attachments.map { $0.record(surveyVersionId: version.surveyVersionId) }.sorted { $0.fileName < $1.fileName })
        }
    }
}
