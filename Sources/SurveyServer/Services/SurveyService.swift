import Synchronization
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The API's door onto surveys and their immutable versions (`Surveys`), and their reads.
struct SurveyService {
    let services: Services

    func register(into router: inout Router) {
        services.route(&router, "POST", "/v1/orgs/{orgId}/surveys", .member(anyOf: [.admin]), createSurvey)
        services.route(&router, "GET", "/v1/orgs/{orgId}/surveys", .member(anyOf: []), listSurveys)
        services.route(&router, "GET", "/v1/orgs/{orgId}/surveys/{surveyId}", .member(anyOf: []), getSurvey)
        services.route(&router, "PUT", "/v1/orgs/{orgId}/surveys/{surveyId}/state", .member(anyOf: [.admin]), setSurveyState)
        services.route(&router, "PUT", "/v1/orgs/{orgId}/surveys/{surveyId}/entity-list-scope", .member(anyOf: [.admin]), setEntityListScope)
        // An XLSForm or an XForm may be larger than a JSON body: the route takes up to the form limit;
        // a form sent with its files (multipart/form-data) up to the limit of a form upload, decoded as it arrives.
        let limits = services.operations.limits
        var multipart = FormDecoder.Limits(maxBytes: limits.maxFormUploadBytes)
        multipart.maxFiles = 1_000
        multipart.maxValueBytes = limits.maxJSONBodyBytes
        services.route(&router, "POST", "/v1/orgs/{orgId}/surveys/{surveyId}/versions", .member(anyOf: [.admin]),
                       bodyLimit: Swift.max(limits.maxFormBytes, limits.maxJSONBodyBytes), multipart: multipart, publishVersion)
        services.route(&router, "POST", "/v1/orgs/{orgId}/surveys/{surveyId}/draft/publish", .member(anyOf: [.admin]), publishDraft)
        services.route(&router, "DELETE", "/v1/orgs/{orgId}/surveys/{surveyId}/draft", .member(anyOf: [.admin]), discardDraft)
        services.route(&router, "GET", "/v1/orgs/{orgId}/survey-versions/{surveyVersionId}", .member(anyOf: []), getVersion)
        services.route(&router, "GET", "/v1/orgs/{orgId}/survey-versions/{surveyVersionId}/source", .member(anyOf: []), getVersionSource)
        services.route(&router, "GET", "/v1/orgs/{orgId}/survey-versions/{surveyVersionId}/xform", .member(anyOf: []), getVersionXForm)
        services.route(&router, "GET", "/v1/orgs/{orgId}/survey-versions/{surveyVersionId}/attachments/{fileName}", .member(anyOf: []),
                       getVersionAttachment)
    }

    /// `draft`: the survey's draft and its count of test submissions, on the survey's own document.
    static func surveyJSON(_ s: SurveyRecord, versions: [SurveyVersionRecord],
                           draft: (version: SurveyVersionRecord, testSubmissions: Int64)? = nil) -> JSONValue {
        var document: JSONValue = [
            "surveyId": .string(s.surveyId), "title": .string(s.title), "reviewRequired": .bool(s.reviewRequired),
            "createdAt": .string(Timestamp.format(s.createdAt)), "state": .string(s.state.rawValue),
            "entityListScope": .string(s.entityListScope.rawValue),
            "versions": .array(versions.map { ["surveyVersionId": .string($0.surveyVersionId), "number": .number(Double($0.number)),
                                               "contentHash": .string($0.contentHash)] })]
        if let draft, case .object(var members) = document {
            members["draft"] = ["surveyVersionId": .string(draft.version.surveyVersionId), "contentHash": .string(draft.version.contentHash),
                                "createdAt": .string(Timestamp.format(draft.version.createdAt)),
                                "testSubmissions": .number(Double(draft.testSubmissions))]
            document = .object(members)
        }
        return document
    }

    /// The version document's bytes. The stored definition is canonical JSON already (a list read
    /// from a file may make it megabytes): it goes in as it is, neither parsed nor encoded again.
    static func versionDocument(_ v: SurveyVersionRecord, files: VersionFiles) -> [UInt8] {
        CanonicalJSON.encode(versionMembers(v, files: files), adding: "definition", encoded: Array(v.definition.utf8))
    }

    static func versionJSON(_ v: SurveyVersionRecord, files: VersionFiles) throws -> JSONValue {
        var members = versionMembers(v, files: files)
        members["definition"] = try JSONParser.parse(Array(v.definition.utf8))
        return .object(members)
    }

    private static func versionMembers(_ v: SurveyVersionRecord, files: VersionFiles) -> [String: JSONValue] {
        let (source, xform) = files.json
        return ["surveyVersionId": .string(v.surveyVersionId), "surveyId": .string(v.surveyId), "number": .number(Double(v.number)),
                "contentHash": .string(v.contentHash), "draft": .bool(v.draft),
                "createdAt": .string(Timestamp.format(v.createdAt)), "source": source, "xform": xform,
                "warnings": .array(v.warnings.map { .string($0) }),
                "attachments": .array(files.attachments.map { a in
                    ["fileName": .string(a.fileName), "contentType": .string(a.contentType), "size": .number(Double(a.size)),
                     "md5": .string(a.md5), "sha256": .string(a.sha256)]
                })]
    }

    func createSurvey(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId
        let render: @Sendable (SurveyRecord) -> HTTPResponse = {
            .created("/v1/orgs/\(orgId)/surveys/\($0.surveyId)", Self.surveyJSON($0, versions: []))
        }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.surveys.create(orgId: orgId, by: try context.member(), key: keyed.key) {
            let body = try JSONBody(request.body)
            return Surveys.NewSurvey(title: try body.string("title"), reviewRequired: try body.bool("reviewRequired", default: false),
                                     entityListScope: try Surveys.entityListScope(try body.optionalString("entityListScope")))
        }
        return try keyed.answer(outcome)
    }

    /// `{"entityListScope": "all" | "assigned"}` → the survey document.
    func setEntityListScope(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId, surveyId = request.parameter("surveyId")
        let render: @Sendable (Surveys.SurveyWithVersions) -> HTTPResponse = { .json(200, Self.surveyJSON($0.survey, versions: $0.versions)) }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.surveys.setEntityListScope(orgId: orgId, surveyId: surveyId, by: try context.member(), key: keyed.key) {
            try JSONBody(request.body).string("entityListScope")
        }
        return try keyed.answer(outcome)
    }

    /// `{"state": "open" | "closing" | "closed"}` → the survey document.
    func setSurveyState(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId, surveyId = request.parameter("surveyId")
        let operations = services.operations
        let render: @Sendable (Surveys.SurveyWithVersions) -> HTTPResponse = { .json(200, Self.surveyJSON($0.survey, versions: $0.versions)) }
        let keyed = KeyedAnswer(request, render)
        let outcome = try operations.surveys.setState(orgId: orgId, surveyId: surveyId, by: try context.member(), key: keyed.key) {
            try JSONBody(request.body).string("state")
        }
        return try keyed.answer(outcome)
    }

    func listSurveys(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let page = try Page(request)
        let rows = try services.operations.visibleSurveys(of: orgId, by: try context.member(), after: page.after, limit: page.limit)
        return .json(200, page.render(rows, id: { $0.0.surveyId }, item: { Self.surveyJSON($0.0, versions: $0.1) }))
    }

    func getSurvey(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let surveyId = request.parameter("surveyId")
        let operations = services.operations
        let found = try operations.visibleSurvey(surveyId, of: orgId, by: try context.member())
        let draft = try operations.database.read { try operations.surveyDrafts.draft(orgId: orgId, surveyId: surveyId, in: $0) }
        return .json(200, Self.surveyJSON(found.0, versions: found.1, draft: draft))
    }

    func publishVersion(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId, surveyId = request.parameter("surveyId")
        let operations = services.operations
        let draft = try Self.draftParameter(request)
        // What the version is published from and with, read before it is written: its document
        // describes it from these, never from a read (a keyed answer is rendered in the write's
        // transaction, whose rows no reader sees yet).
        let kept = Mutex<FormSources.Published?>(nil)
        let render: @Sendable (SurveyVersionRecord) throws -> HTTPResponse = {
            guard let published = kept.withLock({ $0 }) else { throw ApiError(.internalError, "The published form was not kept for its answer.") }
            let files = try operations.versionFiles(of: $0, published: published)
            // A draft is no published version: it is found on its survey.
            let location = $0.draft ? "/v1/orgs/\(orgId)/surveys/\(surveyId)" : "/v1/orgs/\(orgId)/survey-versions/\($0.surveyVersionId)"
            return HTTPResponse(status: 201, headers: [("Content-Type", "application/json"), ("Location", location)],
                                body: Self.versionDocument($0, files: files))
        }
        let keyed = KeyedAnswer(request, render)
        let upload = try Self.formUpload(request, limits: operations.limits)
        let outcome = try operations.surveys.publish(orgId: orgId, surveyId: surveyId, by: try context.member(), key: keyed.key, draft: draft) {
            let published = try operations.forms.published(try upload(), surveyId: request.parameter("surveyId"), limits: operations.limits, blobs: operations.blobs)
            kept.withLock { $0 = published }
            return published
        }
        return try keyed.answer(outcome)
    }

    /// `?draft=true` publishes the survey's draft; `false` or no parameter, a version.
    static func draftParameter(_ request: HTTPRequest) throws -> Bool {
        switch request.query["draft"] {
        case nil, "false": return false
        case "true": return true
        default:
            throw ApiError(.validationFailed, "`draft` is true or false.", errors: [FieldError(path: "draft", message: "must be true or false")])
        }
    }

    /// The survey's draft becomes its latest published version: 201 with the version document.
    func publishDraft(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId
        let operations = services.operations
        let render: @Sendable (SurveyDrafts.Published) throws -> HTTPResponse = {
            HTTPResponse(status: 201, headers: [("Content-Type", "application/json"),
                                                ("Location", "/v1/orgs/\(orgId)/survey-versions/\($0.version.surveyVersionId)")],
                         body: Self.versionDocument($0.version, files: $0.files))
        }
        let keyed = KeyedAnswer(request, render)
        let outcome = try operations.surveyDrafts.publish(orgId: orgId, surveyId: request.parameter("surveyId"), by: try context.member(), key: keyed.key)
        return try keyed.answer(outcome)
    }

    /// The survey's draft and its test submissions are gone: 204.
    func discardDraft(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        try services.operations.surveyDrafts.discard(orgId: context.orgId, surveyId: request.parameter("surveyId"), by: try context.member())
        return HTTPResponse(status: 204)
    }

    /// What a publishing request sends: the body as the form (its `Content-Type` says which kind),
    /// or a `multipart/form-data` body's part `form` and every other part a file the form names
    /// (its file name, else its field name). Read only once the replay check has passed.
    static func formUpload(_ request: HTTPRequest, limits: Operations.Limits) throws -> @Sendable () throws -> FormUpload {
        let contentType = request.header("Content-Type")
        let fields = request.form
        guard Router.isMultipartForm(contentType) else {
            let format = FormSources.format(ofContentType: contentType) ?? .json
            if format == .json { try limits.checkJSONDefinition(bytes: request.body.count) }
            let body = request.body
            return { FormUpload(format: format, form: body, contentType: contentType) }
        }
        return {
            var files: [FormUpload.SentFile] = []
            var form: FormUpload?
            for (name, file) in fields.fileParts {
                if name == "form" {
                    guard form == nil else { throw ApiError.malformed("The request has two parts named form; send the form once.") }
                    guard file.size <= limits.maxFormBytes else {
                        throw ApiError(.payloadTooLarge, "The form is \(file.size) bytes; the limit is \(limits.maxFormBytes).")
                    }
                    let format = FormSources.format(ofFileNamed: file.fileName, contentType: file.contentType)
                    form = FormUpload(format: format, form: try file.bytes(), contentType: file.contentType, fileName: file.fileName)
                    continue
                }
                let fileName = file.fileName.isEmpty ? name : file.fileName
                files.append(FormUpload.SentFile(fileName: fileName, declaredType: file.contentType, size: file.size) { body in try file.read(body) })
            }
            if form == nil, let text = fields["form"] {
                // The form sent as a plain field: a JSON body.
                form = FormUpload(format: .json, form: Array(text.utf8), contentType: "application/json")
            }
            // A well-formed body whose other parts are not files: refused as what it sent, at the part.
            if let other = fields.pairs.first(where: { $0.name != "form" }) {
                let name = other.name.isEmpty ? "a part without a name" : "the part \(other.name)"
                throw ApiError(.validationFailed, "Each file the form names is sent as a file part.",
                               errors: [FieldError(path: "attachments.\(other.name)",
                                                   message: "\(name) was sent as a plain field, not a file; send each file the form names as a part with a filename")])
            }
            guard let form else { throw ApiError.malformed("The request has no part named form: send the XLSForm, XForm or JSON definition as the part form.") }
            return FormUpload(format: form.format, form: form.form, contentType: form.contentType, fileName: form.fileName, files: files)
        }
    }

    /// A file the version was published with, byte for byte, with the type its name says; never
    /// sniffed or run by a browser.
    func getVersionAttachment(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let found = try services.operations.visibleVersionAttachment(request.parameter("surveyVersionId"), fileName: request.parameter("fileName"),
                                                                     of: request.parameter("orgId"), by: try context.member())
        return try Self.attachmentResponse(found, blobs: services.operations.blobs)
    }

    /// The bytes of an attachment, streamed from its blob.
    static func attachmentResponse(_ a: VersionAttachmentRecord, blobs: BlobStore, headers extra: [(String, String)] = []) throws -> HTTPResponse {
        let headers = extra + [("Content-Type", a.contentType), ("X-Content-Type-Options", "nosniff"),
                               ("Content-Security-Policy", "default-src 'none'; sandbox"), ("ETag", "\"\(a.sha256)\"")]
        guard let r = HTTPResponse.storedFile(blobs, sha256: a.sha256, size: a.size, headers: headers) else {
            throw ApiError(.storageUnavailable, "The file cannot be read now; try again.")
        }
        return r
    }

    /// What the version was published from, byte for byte: the XLSForm or XForm with its type, or
    /// the JSON definition.
    func getVersionSource(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, kept) = try services.operations.visibleVersionSource(request.parameter("surveyVersionId"), of: request.parameter("orgId"),
                                                                       by: try context.member())
        let source = try FormSources.source(of: v, kept: kept)
        return HTTPResponse(status: 200, headers: [("Content-Type", source.contentType)], body: source.bytes)
    }

    /// The XForm apps download: the uploaded one, the one pyxform made of an uploaded XLSForm, or
    /// for a version published as JSON the XForm of its definition, written on request.
    func getVersionXForm(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, kept) = try services.operations.visibleVersionSource(request.parameter("surveyVersionId"), of: request.parameter("orgId"),
                                                                       by: try context.member())
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/xml")], body: try FormSources.xform(of: v, kept: kept))
    }

    func getVersion(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let v = try services.operations.visibleVersion(request.parameter("surveyVersionId"), of: orgId, by: try context.member())
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")],
                            body: Self.versionDocument(v, files: try services.operations.versionFiles(of: v)))
    }
}
