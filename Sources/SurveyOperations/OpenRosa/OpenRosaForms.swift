import SurveyDomain
import SurveyStorage
import SurveyXForm

/// The forms an app sees through the OpenRosa door, and the version a submission names.
///
/// An app names a form by its XForm's id and version (`VersionFiles.XForm`): the form list offers
/// each survey's latest version, and a submission carries the pair back on its root element.
/// Every published version keeps taking submissions; when two versions share a pair (an XForm
/// published again without a new version), the latest published of them takes them.
public struct OpenRosaForms: Sendable {
    let operations: Operations

    /// A survey's latest version with what an app downloads of it.
    public struct Listed: Sendable {
        public let survey: SurveyRecord
        public let version: SurveyVersionRecord
        public let xform: VersionFiles.XForm
        /// The files the app downloads with the form (its manifest's).
        public let attachments: [VersionAttachmentRecord]
        /// The entity lists the form reads, each served in its manifest too.
        public let entityLists: [String]
    }

    /// Every open survey of the organization with a published version whose definition has an
    /// XForm, in survey id order (a closing or closed one is no longer offered to start anew);
    /// `formId` narrows it to the forms of that id. `states` widens it: ODK Central's API lists a
    /// form in every state, with its state.
    public func forms(in db: ReadContext, orgId: String, formId: String? = nil, states: Set<SurveyState> = [.open]) throws -> [Listed] {
        var latest: [String: String] = [:]
        var order: [String] = []
        for key in try db.versionKeys(orgId: orgId) {
            if latest[key.surveyId] == nil { order.append(key.surveyId) }
            latest[key.surveyId] = key.surveyVersionId
        }
        var out: [Listed] = []
        for surveyId in order {
            guard let versionId = latest[surveyId], let version = try db.surveyVersion(orgId: orgId, surveyVersionId: versionId),
                  let survey = try db.survey(orgId: orgId, surveyId: surveyId), states.contains(survey.state),
                  case let files = try files(of: version, in: db), let xform = files.xform else { continue }
            if let formId, xform.formId != formId { continue }
            out.append(Listed(survey: survey, version: version, xform: xform, attachments: files.attachments,
                              entityLists: try operations.definitions.definition(of: version).entityListsRead))
        }
        return out
    }

    /// The survey's draft with what an app downloads of it through the draft door; nil when the
    /// survey has no draft, or its draft has no XForm.
    public func draft(in db: ReadContext, orgId: String, surveyId: String) throws -> Listed? {
        guard let version = try db.draftVersion(orgId: orgId, surveyId: surveyId), let survey = try db.survey(orgId: orgId, surveyId: surveyId),
              case let files = try files(of: version, in: db), let xform = files.xform else { return nil }
        return Listed(survey: survey, version: version, xform: xform, attachments: files.attachments,
                      entityLists: try operations.definitions.definition(of: version).entityListsRead)
    }

    /// The XForm bytes of one version of the organization (any published one), or nil.
    public func xform(in db: ReadContext, orgId: String, surveyVersionId: String) throws -> [UInt8]? {
        guard let version = try db.surveyVersion(orgId: orgId, surveyVersionId: surveyVersionId) else { return nil }
        return try FormSources.xform(of: version, kept: try db.versionSource(orgId: orgId, surveyVersionId: surveyVersionId))
    }

    /// The `version` of one version's XForm (what ODK Central calls the form's version); nil
    /// when its XForm has none, or the version has no XForm.
    public func xformVersion(of version: SurveyVersionRecord, in db: ReadContext) throws -> String? {
        try files(of: version, in: db).xform?.version
    }

    /// The files one version of the organization (any published one) was published with; nil
    /// when there is no such version.
    public func attachments(in db: ReadContext, orgId: String, surveyVersionId: String) throws -> [VersionAttachmentRecord]? {
        guard try db.surveyVersion(orgId: orgId, surveyVersionId: surveyVersionId) != nil else { return nil }
        return try db.versionAttachments(orgId: orgId, surveyVersionId: surveyVersionId)
    }

    /// The entity lists one version of the organization reads (`SurveyDefinition.entityListsRead`),
    /// each as it is in `db` and as `collector` receives it with that version's form
    /// (`EntityListCopy`: narrowed to their open tasks' entities when the survey's scope is
    /// `assigned`); empty when the version reads none or does not exist.
    public func entityListCopies(in db: ReadContext, orgId: String, surveyVersionId: String, collector: String) throws -> [EntityListCopy] {
        guard let version = try db.surveyVersion(orgId: orgId, surveyVersionId: surveyVersionId),
              case let names = try operations.definitions.definition(of: version).entityListsRead, !names.isEmpty,
              let survey = try db.survey(orgId: orgId, surveyId: version.surveyId) else { return [] }
        return try names.compactMap { name in
            try db.entityList(orgId: orgId, name: name).map { try EntityListCopy($0, survey: survey, collector: collector, in: db) }
        }
    }

    /// An entity list's manifest hash: it names the list's revision, which every change of an
    /// entity or a property raises, so a phone downloads the CSV again exactly when it changed.
    public static func entityListMD5(orgId: String, _ list: EntityListRecord) -> String {
        Digest.md5Hex(Array("entity-list\n\(orgId)\n\(list.name)\n\(list.revision)".utf8))
    }

    /// The version whose XForm has this id and version: the latest published with that pair.
    public func version(in db: ReadContext, orgId: String, formId: String, version: String?) throws -> SurveyVersionRecord? {
        var found: SurveyVersionRecord?
        for key in try db.versionKeys(orgId: orgId) {
            // Each version is read once: to describe it when it is not cached yet, or when it matches.
            guard let (files, read) = try files(of: key.surveyVersionId, orgId: orgId, in: db),
                  let xform = files.xform, xform.formId == formId, xform.version == version,
                  let record = try read ?? db.surveyVersion(orgId: orgId, surveyVersionId: key.surveyVersionId) else { continue }
            if found.map({ record.createdAt >= $0.createdAt }) ?? true { found = record }
        }
        return found
    }

    /// Another survey of the organization whose published XForm has this form id, if any: an app
    /// names a form by its id alone, so the id may belong to one survey only.
    public func survey(otherThan surveyId: String, withFormId formId: String, in db: ReadContext, orgId: String) throws -> SurveyRecord? {
        for key in try db.versionKeys(orgId: orgId) where key.surveyId != surveyId {
            if try files(of: key.surveyVersionId, orgId: orgId, in: db)?.files.xform?.formId == formId {
                return try db.survey(orgId: orgId, surveyId: key.surveyId)
            }
        }
        return nil
    }

    /// A version's files from the cache, else described from its record (returned too, read
    /// once); nil when there is no such version.
    private func files(of surveyVersionId: String, orgId: String, in db: ReadContext) throws -> (files: VersionFiles, record: SurveyVersionRecord?)? {
        if let cached = operations.versionFileCache.cached(surveyVersionId) { return (cached, nil) }
        guard let record = try db.surveyVersion(orgId: orgId, surveyVersionId: surveyVersionId) else { return nil }
        return (try files(of: record, in: db), record)
    }

    private func files(of version: SurveyVersionRecord, in db: ReadContext) throws -> VersionFiles {
        try operations.versionFileCache.files(of: version, parsed: try? operations.definitions.definition(of: version)) {
            (try db.versionSource(orgId: version.orgId, surveyVersionId: version.surveyVersionId),
             try db.versionAttachments(orgId: version.orgId, surveyVersionId: version.surveyVersionId))
        }
    }

    /// The `clientUploadId` of a file a submission names: derived from the instance and the file
    /// name, so a resent POST names the same upload and stores nothing twice.
    public static func clientUploadId(instanceID: String, fileName: String) -> String {
        "openrosa-" + String(Digest.sha256Hex(instanceID + "\n" + fileName).prefix(40))
    }
}
