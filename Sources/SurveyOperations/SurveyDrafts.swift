import SurveyDomain
import SurveyStorage
import SurveyXForm

/// A survey's draft, after it was published as one (`Surveys.publish(draft: true)`): published as
/// the survey's next version, or discarded. Each an admin's gated, audited write that deletes the
/// draft's test submissions in its transaction; 404 / 1005 when the survey has no draft.
public struct SurveyDrafts: Sendable {
    let operations: Operations

    /// The survey's draft and how many test submissions it has, for whoever may see the survey
    /// (nil when there is no draft).
    public func draft(orgId: String, surveyId: String, in db: ReadContext) throws -> (version: SurveyVersionRecord, testSubmissions: Int64)? {
        guard let draft = try db.draftVersion(orgId: orgId, surveyId: surveyId) else { return nil }
        return (draft, try db.draftResponseCount(orgId: orgId, surveyVersionId: draft.surveyVersionId))
    }

    /// A published draft and what its document says of its files, read in the write (a keyed
    /// answer is rendered there, before any reader sees the new rows).
    public struct Published: Sendable {
        public let version: SurveyVersionRecord
        public let files: VersionFiles
    }

    /// The draft becomes the survey's latest published version (a new id, the next number).
    /// A draft whose form names files not attached yet is not published (422 / 1002 at
    /// `attachments.<file>`). `version`: the XForm's version attribute set first (ODK Central's
    /// `draft/publish?version=`), 422 / 1002 at `version` when the survey published it already.
    public func publish(orgId: String, surveyId: String, by user: UserRecord, version: String? = nil,
                        key: IdempotencyKey<Published>? = nil) throws -> KeyedOutcome<Published> {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        let ops = operations
        let blobs = ops.blobs
        // The draft is looked for after the key's replay: a publication kept under its key is
        // answered again, though the draft it published is gone.
        return try ops.keyedWrite(orgId: orgId, caller: user.userId, target: surveyId, key: key, prepare: { () -> (String, SurveyVersionRecord, SurveyDefinition, [UInt8]?) in
            let (draft, xform) = try ops.database.read { db -> (SurveyVersionRecord, [UInt8]?) in
                guard let draft = try db.draftVersion(orgId: orgId, surveyId: surveyId) else { throw Self.noDraft(surveyId) }
                return (draft, try Self.checked(draft, settingVersion: version, in: db))
            }
            return (Ids.make("sv", nowMillis: ops.clock.nowMillis()), draft, try ops.definitions.definition(of: draft), xform)
        }, write: { prepared, tx in
            let (newId, draft, parsed, preparedXForm) = prepared
            try tx.takePublishingTurn()
            // Read again in the write: another request may have replaced or discarded it since.
            guard let current = try tx.read.draftVersion(orgId: orgId, surveyId: surveyId) else { throw Self.noDraft(surveyId) }
            let same = current.surveyVersionId == draft.surveyVersionId
            let definition = same ? parsed : try ops.definitions.definition(of: current)
            let xform = same ? preparedXForm : try Self.checked(current, settingVersion: version, in: tx.read)
            // Its form id must still name no other survey: one may have published it since the draft.
            let source = try tx.read.versionSource(orgId: orgId, surveyVersionId: current.surveyVersionId)
            if let formId = definition.formId ?? (source == nil ? surveyId : nil) {
                try Surveys.refuseFormIdOfAnotherSurvey(formId, orgId: orgId, surveyId: surveyId, source: source, in: tx.read, operations: ops)
            }
            for entity in definition.entities { try tx.declareEntityList(name: entity.list, properties: entity.properties) }
            guard let published = try tx.publishDraft(surveyId: surveyId, as: newId, xform: xform, blobs: blobs) else { throw Self.noDraft(surveyId) }
            let read = tx.read
            let files = try ops.versionFileCache.files(of: published, parsed: definition) {
                (try read.versionSource(orgId: orgId, surveyVersionId: newId), try read.versionAttachments(orgId: orgId, surveyVersionId: newId))
            }
            ops.definitions.remember(definition, of: newId)
            return Published(version: published, files: files)
        })
    }

    /// The draft checked for publishing: every file its form names attached; with `version`,
    /// its XForm with that version set (nil without), a version no published one has.
    static func checked(_ draft: SurveyVersionRecord, settingVersion version: String?, in db: ReadContext) throws -> [UInt8]? {
        let pending = FormAttachments.pendingFiles(of: (try? JSONParser.parse(Array(draft.definition.utf8))) ?? .null)
        if !pending.isEmpty { throw Surveys.notAttached(pending, to: "draft") }
        guard let version else { return nil }
        guard let source = try db.versionSource(orgId: draft.orgId, surveyVersionId: draft.surveyVersionId) else {
            throw ApiError(.validationFailed, "A draft published as JSON has no XForm version to set.",
                           errors: [FieldError(path: "version", message: "the draft has no XForm: publish it without version")])
        }
        let xform: [UInt8]
        do { xform = try XFormVersionRewriter.setting(version: version, in: source.xform) } catch {
            throw ApiError(.validationFailed, "The version cannot be set.", errors: [FieldError(path: "version", message: error.message)])
        }
        for v in try db.surveyVersions(surveyId: draft.surveyId) {
            guard let kept = try db.versionSource(orgId: draft.orgId, surveyVersionId: v.surveyVersionId),
                  (try? XFormReader.identity(from: kept.xform))?.version == version else { continue }
            throw ApiError(.validationFailed, "The version \(version) is published already.",
                           errors: [FieldError(path: "version", message: "version \(v.number) of the survey has the version \(version); give this one another")])
        }
        return xform
    }
    /// The draft and its test submissions are gone.
    public func discard(orgId: String, surveyId: String, by user: UserRecord) throws {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        guard try operations.database.read({ try $0.survey(orgId: orgId, surveyId: surveyId) }) != nil else { throw ApiError.notFound() }
        let blobs = operations.blobs
        _ = try operations.keyedWrite(orgId: orgId, caller: user.userId, target: surveyId, key: nil as IdempotencyKey<Bool>?, prepare: {}, write: { _, tx in
            guard try tx.discardDraft(surveyId: surveyId, blobs: blobs) else { throw Self.noDraft(surveyId) }
            return true
        })
    }

    static func noDraft(_ surveyId: String) -> ApiError {
        ApiError(.notFound, "The survey \(surveyId) has no draft.")
    }
}
