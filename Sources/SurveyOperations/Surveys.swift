import Foundation
import Synchronization
import SurveyDomain
import SurveyStorage
import SurveyXForm

/// Surveys and their immutable versions. Creating and publishing are gated writes by admins
/// (the door's route admits admins only).
public struct Surveys: Sendable {
    let operations: Operations

    public struct NewSurvey: Sendable {
        public let title: String
        public let reviewRequired: Bool
        public let entityListScope: EntityListScope
        public init(title: String, reviewRequired: Bool, entityListScope: EntityListScope = .all) {
            self.title = title; self.reviewRequired = reviewRequired; self.entityListScope = entityListScope
        }
    }

    /// `entityListScope` as a body says it: absent is `all`; 422 / 1002 at `entityListScope` for
    /// anything but `all` or `assigned`.
    public static func entityListScope(_ asked: String?) throws -> EntityListScope {
        guard let asked else { return .all }
        guard let scope = EntityListScope(rawValue: asked) else {
            throw ApiError(.validationFailed, "`entityListScope` is all or assigned.",
                           errors: [FieldError(path: "entityListScope", message: "must be all or assigned")])
        }
        return scope
    }

    public func create(orgId: String, by user: UserRecord, key: IdempotencyKey<SurveyRecord>? = nil,
                       _ request: () throws -> NewSurvey) throws -> KeyedOutcome<SurveyRecord> {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        let clock = operations.clock
        return try operations.keyedWrite(orgId: orgId, caller: user.userId, target: "", key: key, prepare: { () throws -> (NewSurvey, String) in
            let new = try request()
            try Self.checkTitle(new.title)
            return (new, Ids.make("srv", nowMillis: clock.nowMillis()))
        }, write: { prepared, tx in
            try tx.createSurvey(surveyId: prepared.1, title: prepared.0.title, reviewRequired: prepared.0.reviewRequired,
                                entityListScope: prepared.0.entityListScope, createdBy: user.userId)
        })
    }

    /// A survey's title: 1 to 500 characters, each one an XML document can carry (the title is
    /// the form's name in every app's form list). 422 / 1002 at `title`.
    static func checkTitle(_ title: String) throws {
        guard !title.isEmpty, title.count <= 500 else {
            throw ApiError(.validationFailed, "`title` must be 1 to 500 characters.", errors: [FieldError(path: "title", message: "1 to 500 characters")])
        }
        if let problem = OpenRosaDocuments.uncarriedCharacter(in: title) {
            throw ApiError(.validationFailed, "`title` holds a character that form lists cannot carry.",
                           errors: [FieldError(path: "title", message: problem)])
        }
    }

    /// Moves a survey through its life (`SurveyState`): an admin's gated, audited write. 404 for a
    /// survey the caller cannot see, 422 at `state` for a state that is not one.
    public func setState(orgId: String, surveyId: String, by user: UserRecord, key: IdempotencyKey<SurveyWithVersions>? = nil,
                         _ request: () throws -> String) throws -> KeyedOutcome<SurveyWithVersions> {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        guard try operations.database.read({ try $0.survey(orgId: orgId, surveyId: surveyId) }) != nil else { throw ApiError.notFound() }
        return try operations.keyedWrite(orgId: orgId, caller: user.userId, target: surveyId, key: key, prepare: { () throws -> SurveyState in
            let asked = try request()
            guard let state = SurveyState(rawValue: asked) else {
                throw ApiError(.validationFailed, "`state` is open, closing or closed.",
                               errors: [FieldError(path: "state", message: "must be open, closing or closed")])
            }
            return state
        }, write: { state, tx in
            guard let survey = try tx.read.survey(orgId: orgId, surveyId: surveyId) else { throw ApiError.notFound() }
            // What the answer shows, read in the write: the answer may be kept with the write.
            return SurveyWithVersions(survey: try tx.setSurveyState(survey, to: state), versions: try tx.read.surveyVersions(surveyId: surveyId))
        })
    }

    /// Which entities of a list the survey's forms read reach a collector's phone (`EntityListScope`):
    /// an admin's gated, audited write, like `setState`. Phones see the change at their next
    /// update check (the manifest hash of their copy changes with it). 404 for a survey the
    /// caller cannot see, 422 at `entityListScope` for a scope that is not one.
    public func setEntityListScope(orgId: String, surveyId: String, by user: UserRecord, key: IdempotencyKey<SurveyWithVersions>? = nil,
                                   _ request: () throws -> String) throws -> KeyedOutcome<SurveyWithVersions> {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        guard try operations.database.read({ try $0.survey(orgId: orgId, surveyId: surveyId) }) != nil else { throw ApiError.notFound() }
        return try operations.keyedWrite(orgId: orgId, caller: user.userId, target: surveyId, key: key, prepare: { () throws -> EntityListScope in
            try Self.entityListScope(try request())
        }, write: { scope, tx in
            guard let survey = try tx.read.survey(orgId: orgId, surveyId: surveyId) else { throw ApiError.notFound() }
            return SurveyWithVersions(survey: try tx.setEntityListScope(survey, to: scope), versions: try tx.read.surveyVersions(surveyId: surveyId))
        })
    }

    /// A survey and its versions, as its document shows them.
    public struct SurveyWithVersions: Sendable {
        public let survey: SurveyRecord
        public let versions: [SurveyVersionRecord]
    }

    /// A new version of an existing survey (404 before anything else when there is none).
    /// As a `draft` it becomes the survey's draft (Docs/forms.md, "Drafts"), replacing an earlier
    /// one and deleting its test submissions in the same transaction: every check of a publication
    /// is made all the same. `replacingDraft`: the draft the new one was made from (a file added
    /// to it); when another request has replaced that draft since, 409 / 1021 and nothing written,
    /// so that no file added meanwhile is lost.
    public func publish(orgId: String, surveyId: String, by user: UserRecord, key: IdempotencyKey<SurveyVersionRecord>? = nil, draft: Bool = false,
                        replacingDraft: String? = nil,
                        definition: () throws -> FormSources.Published) throws -> KeyedOutcome<SurveyVersionRecord> {
        try operations.member(user, of: orgId, withAnyOf: [.admin])
        guard try operations.database.read({ try $0.survey(orgId: orgId, surveyId: surveyId) }) != nil else { throw ApiError.notFound() }
        let clock = operations.clock
        let blobs = operations.blobs
        // The staged files' temp names go once the write is over, whatever its outcome (after a
        // commit the blobs are linked in place).
        let staged = Mutex<[FormUpload.Staged]>([])
        defer { for s in staged.withLock({ $0 }) { unlink(s.tempPath) } }
        let parsedOnce = Mutex<SurveyDefinition?>(nil)
        let operations = self.operations
        let outcome = try operations.keyedWrite(orgId: orgId, caller: user.userId, target: surveyId, key: key, prepare: { () throws -> NewVersion in
            let published = try definition()
            staged.withLock { $0 = published.attachments }
            let p = try Self.newVersion(published, surveyId: surveyId, draft: draft, nowMillis: clock.nowMillis())
            parsedOnce.withLock { $0 = p.parsed }
            return p
        }, write: { p, tx in
            // Checked again in turn: another publication may have taken the id since the read above.
            try tx.takePublishingTurn()
            if let formId = p.formId {
                try Self.refuseFormIdOfAnotherSurvey(formId, orgId: orgId, surveyId: surveyId, source: p.source, in: tx.read, operations: operations)
            }
            if let replacingDraft, try tx.read.draftVersion(orgId: orgId, surveyId: surveyId)?.surveyVersionId != replacingDraft {
                throw ApiError(.staleRevision, "The survey's draft was replaced while this file was added to it; send the file again.")
            }
            return try Self.write(p, surveyId: surveyId, draft: draft, in: tx, blobs: blobs)
        })
        // The version's first submission finds its definition parsed.
        if case .written(let v) = outcome, let parsed = parsedOnce.withLock({ $0 }) { operations.definitions.remember(parsed, of: v.surveyVersionId) }
        return outcome
    }

    /// What a publication writes, read and checked before its transaction: the definition's rules
    /// (422 / 1002), text XML cannot carry, files a version must have (only a draft may lack some).
    static func newVersion(_ published: FormSources.Published, surveyId: String, draft: Bool, nowMillis: Int64) throws -> NewVersion {
        let definition = published.definition
        let parsed: SurveyDefinition
        do {
            parsed = try published.parsed ?? SurveyDefinition.parse(definition)
        } catch let e as ValidationErrors {
            throw ApiError(.validationFailed, "The survey definition is not valid.", errors: e.errors)
        }
        let pending = FormAttachments.pendingFiles(of: definition)
        if !draft, !pending.isEmpty { throw notAttached(pending, to: "version") }
        // The id apps will know the form by: the XForm's, or for JSON the definition's, else the survey's.
        let formId = parsed.formId ?? (published.source == nil ? surveyId : nil)
        // A JSON definition reaches ODK apps as an XForm surveyd writes of it: text no XML
        // can carry (a control character pasted with a label) is refused now, where it can
        // be corrected, not found missing from every phone's form list later.
        if published.source == nil, let problem = Self.uncarriedText(in: definition, at: "definition") {
            throw ApiError(.validationFailed, "The definition holds text that ODK apps' forms cannot carry.", errors: [problem])
        }
        // Encoded once: its bytes are stored and hashed.
        let canonical = CanonicalJSON.encode(definition)
        return NewVersion(contentHash: "sha256:" + Digest.sha256Hex(canonical), definition: String(decoding: canonical, as: UTF8.self),
                          surveyVersionId: Ids.make("sv", nowMillis: nowMillis), source: published.source,
                          attachments: published.attachments, parsed: parsed, formId: formId)
    }

    /// The version's rows, in the publication's transaction (its turn taken, its form id checked).
    static func write(_ p: NewVersion, surveyId: String, draft: Bool, in tx: GatedTransaction, blobs: BlobStore) throws -> SurveyVersionRecord {
        // The entity list the form writes, and the properties it adds, published with it (a
        // draft's once the draft is published).
        if !draft { for entity in p.parsed.entities { try tx.declareEntityList(name: entity.list, properties: entity.properties) } }
        return try tx.publishVersion(surveyVersionId: p.surveyVersionId, surveyId: surveyId, contentHash: p.contentHash, definition: p.definition,
                                     source: p.source, attachments: p.attachments.map { ($0.record(surveyVersionId: p.surveyVersionId), $0.tempPath) },
                                     blobs: blobs, draft: draft)
    }

    /// 422 / 1002 at `attachments.<file>` for each file the form names that is not attached.
    static func notAttached(_ files: [String], to what: String) -> ApiError {
        ApiError(.validationFailed, "The form names files that are not attached to the \(what): \(files.joined(separator: ", ")).",
                 errors: files.map { FieldError(path: "attachments.\($0)", message: "the form names \($0), which is not attached yet") })
    }

    struct NewVersion: Sendable {
        let contentHash: String
        let definition: String
        let surveyVersionId: String
        let source: VersionSourceRecord?
        let attachments: [FormUpload.Staged]
        /// Kept for the version's first submission (`DefinitionCache`).
        let parsed: SurveyDefinition
        let formId: String?
    }

    /// The first text (a value or a key) of a JSON definition holding a character XML cannot carry,
    /// at its path. A definition nests at most 64 levels (the JSON reader's limit).
    static func uncarriedText(in value: JSONValue, at path: String) -> FieldError? {
        switch value {
        case .string(let s):
            return OpenRosaDocuments.uncarriedCharacter(in: s).map { FieldError(path: path, message: $0) }
        case .array(let items):
            for (i, item) in items.enumerated() {
                if let found = uncarriedText(in: item, at: "\(path)[\(i)]") { return found }
            }
        case .object(let members):
            for (key, member) in members.sorted(by: { $0.key < $1.key }) {
                if let problem = OpenRosaDocuments.uncarriedCharacter(in: key) { return FieldError(path: path, message: "a name \(problem)") }
                if let found = uncarriedText(in: member, at: "\(path).\(key)") { return found }
            }
        default: break
        }
        return nil
    }

    /// A form id names one survey of an organization (an app sends only the id and version with a
    /// filled-in form): 422 / 1002 at where the id came from, naming the survey that has it.
    static func refuseFormIdOfAnotherSurvey(_ formId: String, orgId: String, surveyId: String, source: VersionSourceRecord?, in db: ReadContext,
                                            operations: Operations) throws {
        guard let other = try operations.openRosaForms.survey(otherThan: surveyId, withFormId: formId, in: db, orgId: orgId) else { return }
        let at = source.flatMap { FormSources.Format(rawValue: $0.format) }.map { $0 == .json ? "definition.formId" : $0.rawValue } ?? "definition.formId"
        let fix = at == "xlsform" ? "give this form another form_id in its settings sheet" : at == "xform" ? "give this form's primary instance another id" : "give this definition another formId"
        throw ApiError(.validationFailed, "The form id \(formId) is already the form id of another survey.", errors: [
            FieldError(path: at, message: "the form id \"\(formId)\" is already the form id of the survey \"\(other.title)\" (\(other.surveyId)); apps know a form by its id alone, so it names one survey: \(fix)"),
        ])
    }

    /// `sha256:` + hex SHA-256 of the canonical JSON of the definition.
    public static func contentHash(_ definition: JSONValue) -> String {
        "sha256:" + Digest.sha256Hex(CanonicalJSON.encode(definition))
    }
}
