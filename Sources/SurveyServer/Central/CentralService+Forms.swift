import Foundation
import Synchronization
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage
import SurveyXForm

/// ODK Central's form writes, mapped onto surveyd's survey operations (Docs/central-api.md,
/// "Forms"): a new form is a survey made with its first version (`Surveys.create(…draft:)`), a
/// form's draft is the survey's draft (`Surveys.publish(draft: true)`), and publishing it is
/// `SurveyDrafts.publish`. An attachment sent to the draft makes the draft again, through the
/// same publication, from the draft's form and files with this one added: a draft's version is
/// never changed in place. Each an admin's gated, audited write.
extension CentralService {
    func registerForms(into router: inout Router) {
        let admins = Access.member(anyOf: [.admin])
        let limits = operations.limits
        let forms = "/v1/projects/{projectId}/forms"
        router.add("POST", forms, access: admins, bodyLimit: limits.maxFormBytes) { request in CentralRefusal.answer { try createForm(request) } }
        router.add("POST", forms + "/{xmlFormId}/draft", access: admins, bodyLimit: limits.maxFormBytes) { request in
            CentralRefusal.answer { try makeDraft(request) }
        }
        router.add("POST", forms + "/{xmlFormId}/draft/attachments/{fileName}", access: admins, bodyLimit: limits.maxFormUploadBytes) { request in
            CentralRefusal.answer { try attachToDraft(request) }
        }
        router.add("POST", forms + "/{xmlFormId}/draft/publish", access: admins) { request in CentralRefusal.answer { try publishDraft(request) } }
    }

    static let success: HTTPResponse = .json(200, ["success": .bool(true)])

    /// `?publish=&ignoreWarnings=` with an XLSForm or XForm body: a new survey (review required)
    /// whose first version is its draft, or published with `publish=true` → the Form.
    func createForm(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request, .member(anyOf: [.admin]))
        let publish = try Self.flag(request, "publish")
        let ignoreWarnings = try Self.flag(request, "ignoreWarnings")
        let ops = operations
        let projectId = org.projectId
        // The form as read before it is written: the answer describes it from this, never from a
        // read (a keyed answer is rendered in the write's transaction).
        let kept = Mutex<FormSources.Published?>(nil)
        let keyed = KeyedAnswer(request) { (made: Surveys.FromForm) in
            guard let published = kept.withLock({ $0 }) else { throw ApiError(.internalError, "The form was not kept for its answer.") }
            let files = try ops.versionFiles(of: made.version, published: published)
            return HTTPResponse.json(200, CentralJSON.form(made.survey, version: made.version, xform: files.xform, projectId: projectId))
        }
        let fallback = request.header("X-XlsForm-FormId-Fallback").flatMap { $0.removingPercentEncoding }.flatMap { $0.isEmpty ? nil : $0 }
        let outcome = try ops.surveys.create(orgId: org.orgId, by: user, key: keyed.key, draft: !publish) { surveyId in
            let upload = try Self.formUpload(request)
            let published = try published(upload, defaultFormId: fallback ?? surveyId, ignoreWarnings: ignoreWarnings, draft: !publish)
            kept.withLock { $0 = published }
            return published
        }
        return try keyed.answer(outcome).logging(["surveyId": outcomeSurveyId(outcome)])
    }

    /// A new draft: the body's form (the files of the current draft, else of the published
    /// version, that it names carried over, as Central does), or with no body the published
    /// version again with its files. The draft it would make again is the answer, nothing written.
    func makeDraft(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request, .member(anyOf: [.admin]))
        let survey = try formSurvey(request, orgId: org.orgId)
        let ignoreWarnings = request.query["ignoreWarnings"] == nil ? true : try Self.flag(request, "ignoreWarnings")
        let current = try storedVersions(of: survey)
        let upload: FormUpload
        var carried: [FormUpload.SentFile] = []
        if request.body.isEmpty {
            guard let latest = current.published else {
                throw ApiError(.notFound, "The form \(request.parameter("xmlFormId")) has no published version to make a draft of; send the form.")
            }
            if let draft = current.draft, draft.version.contentHash == latest.version.contentHash, draft.source?.xform == latest.source?.xform,
               draft.fileDigests == latest.fileDigests {
                return try Self.nothingToWrite(request)
            }
            upload = try latest.upload(files: latest.attachments.map { FormUpload.SentFile.stored($0, blobs: operations.blobs) })
        } else {
            if let draft = current.draft, draft.source?.source == request.body { return try Self.nothingToWrite(request) }
            upload = try Self.formUpload(request)
            carried = (current.draft ?? current.published)?.attachments.map { FormUpload.SentFile.stored($0, blobs: operations.blobs) } ?? []
        }
        let defaultFormId = current.formId ?? survey.surveyId
        let keyed = KeyedAnswer(request) { (_: SurveyVersionRecord) in Self.success }
        let outcome = try operations.surveys.publish(orgId: org.orgId, surveyId: survey.surveyId, by: user, key: keyed.key, draft: true) {
            try published(upload, defaultFormId: defaultFormId, ignoreWarnings: ignoreWarnings, draft: true, carrying: carried,
                          formId: request.parameter("xmlFormId"))
        }
        return try keyed.answer(outcome).logging(["surveyId": survey.surveyId])
    }

    /// A file the draft's form names, as the raw body: the draft made again with it (one of the
    /// same name replaced). The very file the draft has already is the answer, nothing written.
    func attachToDraft(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request, .member(anyOf: [.admin]))
        let survey = try formSurvey(request, orgId: org.orgId)
        guard let draft = try storedVersions(of: survey).draft else {
            throw ApiError(.notFound, "The form \(request.parameter("xmlFormId")) has no draft; make one with POST …/draft first.")
        }
        let fileName = request.parameter("fileName")
        let body = request.body
        if draft.attachments.contains(where: { $0.fileName == fileName && $0.sha256 == Digest.sha256Hex(body) }) {
            return try Self.nothingToWrite(request)
        }
        var files = draft.attachments.filter { $0.fileName != fileName }.map { FormUpload.SentFile.stored($0, blobs: operations.blobs) }
        files.append(FormUpload.SentFile(fileName: fileName, declaredType: request.header("Content-Type") ?? "", size: body.count) { read in
            try body.withUnsafeBytes { try read($0) }
        })
        let upload = try draft.upload(files: files)
        let defaultFormId = draft.formId ?? survey.surveyId
        let keyed = KeyedAnswer(request) { (_: SurveyVersionRecord) in Self.success }
        let outcome = try operations.surveys.publish(orgId: org.orgId, surveyId: survey.surveyId, by: user, key: keyed.key, draft: true,
                                                     replacingDraft: draft.version.surveyVersionId) {
            try published(upload, defaultFormId: defaultFormId, ignoreWarnings: true, draft: true)
        }
        return try keyed.answer(outcome).logging(["surveyId": survey.surveyId])
    }

    /// `?version=`: the draft published as the survey's next version, its XForm's version set first.
    func publishDraft(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request, .member(anyOf: [.admin]))
        let survey = try formSurvey(request, orgId: org.orgId)
        let keyed = KeyedAnswer(request) { (_: SurveyDrafts.Published) in Self.success }
        let outcome = try operations.surveyDrafts.publish(orgId: org.orgId, surveyId: survey.surveyId, by: user, version: request.query["version"],
                                                          key: keyed.key)
        return try keyed.answer(outcome).logging(["surveyId": survey.surveyId])
    }

    /// The answer to a write the draft has already: success, nothing written — once the
    /// request's `Idempotency-Key`, if any, has the format every key has (400 / 1032 otherwise,
    /// in the order every write checks it).
    static func nothingToWrite(_ request: HTTPRequest) throws -> HTTPResponse {
        if let raw = request.header("idempotency-key") { _ = try IdempotencyKey<Bool>.normalized(raw) }
        return success
    }

    // MARK: - Reading the request

    /// `true` or `false` in any case (pyodk sends Python's `True` and `False`); absent is false.
    static func flag(_ request: HTTPRequest, _ name: String) throws -> Bool {
        switch request.query[name]?.lowercased() {
        case nil, "false": return false
        case "true": return true
        default: throw ApiError(.validationFailed, "`\(name)` is true or false.", errors: [FieldError(path: name, message: "must be true or false")])
        }
    }

    /// The body as the form it is by its `Content-Type`: an XLSForm (.xlsx, .xls) or an XForm.
    static func formUpload(_ request: HTTPRequest) throws -> FormUpload {
        let contentType = request.header("Content-Type")
        guard let format = FormSources.format(ofContentType: contentType), format != .json else {
            throw ApiError(.unsupportedFileType, "A form is sent as an XLSForm (\(FormSources.xlsxType) or \(FormSources.xlsType)) or an XForm (application/xml).")
        }
        return FormUpload(format: format, form: request.body, contentType: contentType)
    }

    /// The form read as every door reads one (pyxform for an XLSForm); a draft may lack files
    /// its form names. `ignoreWarnings` false: a form with warnings is refused (422 / 1002 at
    /// `ignoreWarnings`), as Central does. `formId`: the id the form must have (a form's new
    /// draft is the same form: 422 / 1002 at `xform` or `xlsform` otherwise).
    func published(_ upload: FormUpload, defaultFormId: String, ignoreWarnings: Bool, draft: Bool,
                   carrying: [FormUpload.SentFile] = [], formId: String? = nil) throws -> FormSources.Published {
        let published = try operations.forms.published(upload, surveyId: defaultFormId, limits: operations.limits, blobs: operations.blobs,
                                                       draftLackingFiles: draft, carrying: carrying)
        var refusal: ApiError?
        if !ignoreWarnings, let warnings = published.source?.warnings, !warnings.isEmpty {
            refusal = ApiError(.validationFailed, "The form has warnings; send ignoreWarnings=true to take it with them.",
                               errors: warnings.map { FieldError(path: "ignoreWarnings", message: $0) })
        }
        if let formId, let xform = published.source?.xform, let sent = try? XFormReader.identity(from: xform).formId, sent != formId {
            refusal = ApiError(.validationFailed, "The form's id is \(sent), not \(formId): a form's draft is the same form.",
                               errors: [FieldError(path: upload.format.rawValue, message: "the form's id is \(sent); a draft of \(formId) has the id \(formId)")])
        }
        if let refusal {
            // Staged for a write that will not happen.
            for staged in published.attachments { unlink(staged.tempPath) }
            throw refusal
        }
        return published
    }

    // MARK: - The survey a form is

    /// The survey whose published XForm or draft has the path's form id; else the 404 of a form
    /// that does not exist.
    func formSurvey(_ request: HTTPRequest, orgId: String) throws -> SurveyRecord {
        let xmlFormId = request.parameter("xmlFormId")
        guard let survey = try services.database.read({ try operations.surveys.survey(withFormId: xmlFormId, orgId: orgId, in: $0) }) else {
            throw ApiError(.notFound, "No form \(xmlFormId) is in this project.")
        }
        return survey
    }

    /// A version as stored: its record, what it was published from, its files.
    struct StoredVersion {
        let version: SurveyVersionRecord
        let source: VersionSourceRecord?
        let attachments: [VersionAttachmentRecord]

        var formId: String? { source.flatMap { try? XFormReader.identity(from: $0.xform).formId } }
        var fileDigests: [String: String] { Dictionary(attachments.map { ($0.fileName, $0.sha256) }, uniquingKeysWith: { a, _ in a }) }

        /// The version's form sent again, with `files`.
        func upload(files: [FormUpload.SentFile]) throws -> FormUpload {
            guard let source, let format = FormSources.Format(rawValue: source.format) else {
                return FormUpload(format: .json, form: Array(version.definition.utf8), contentType: "application/json", files: files, isBareDefinition: true)
            }
            return FormUpload(format: format, form: source.source, contentType: source.contentType, files: files)
        }
    }

    /// The survey's draft and latest published version, as stored.
    func storedVersions(of survey: SurveyRecord) throws -> (draft: StoredVersion?, published: StoredVersion?, formId: String?) {
        try services.database.read { db in
            func stored(_ v: SurveyVersionRecord?) throws -> StoredVersion? {
                guard let v else { return nil }
                return StoredVersion(version: v, source: try db.versionSource(orgId: v.orgId, surveyVersionId: v.surveyVersionId),
                                     attachments: try db.versionAttachments(orgId: v.orgId, surveyVersionId: v.surveyVersionId))
            }
            let draft = try stored(try db.draftVersion(orgId: survey.orgId, surveyId: survey.surveyId))
            let published = try stored(try db.surveyVersions(surveyId: survey.surveyId).last)
            return (draft, published, published?.formId ?? draft?.formId)
        }
    }

    private func outcomeSurveyId(_ outcome: KeyedOutcome<Surveys.FromForm>) -> String {
        if case .written(let made) = outcome { return made.survey.surveyId }
        return ""
    }
}
