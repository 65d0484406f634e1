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
        // An XLSForm or an XForm may be larger than a JSON body: the route takes up to the form limit.
        services.route(&router, "POST", "/v1/orgs/{orgId}/surveys/{surveyId}/versions", .member(anyOf: [.admin]),
                       bodyLimit: Swift.max(services.operations.limits.maxFormBytes, services.operations.limits.maxJSONBodyBytes), publishVersion)
        services.route(&router, "GET", "/v1/orgs/{orgId}/survey-versions/{surveyVersionId}", .member(anyOf: []), getVersion)
        services.route(&router, "GET", "/v1/orgs/{orgId}/survey-versions/{surveyVersionId}/source", .member(anyOf: []), getVersionSource)
        services.route(&router, "GET", "/v1/orgs/{orgId}/survey-versions/{surveyVersionId}/xform", .member(anyOf: []), getVersionXForm)
    }

    static func surveyJSON(_ s: SurveyRecord, versions: [SurveyVersionRecord]) -> JSONValue {
        ["surveyId": .string(s.surveyId), "title": .string(s.title), "reviewRequired": .bool(s.reviewRequired),
         "createdAt": .string(Timestamp.format(s.createdAt)),
         "versions": .array(versions.map { ["surveyVersionId": .string($0.surveyVersionId), "number": .number(Double($0.number)),
                                            "contentHash": .string($0.contentHash)] })]
    }

    static func versionJSON(_ v: SurveyVersionRecord, files: VersionFiles) throws -> JSONValue {
        let (source, xform) = files.json
        return ["surveyVersionId": .string(v.surveyVersionId), "surveyId": .string(v.surveyId), "number": .number(Double(v.number)),
                "contentHash": .string(v.contentHash), "definition": try JSONParser.parse(Array(v.definition.utf8)),
                "createdAt": .string(Timestamp.format(v.createdAt)), "source": source, "xform": xform,
                "warnings": .array(v.warnings.map { .string($0) })]
    }

    func createSurvey(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId
        let render: @Sendable (SurveyRecord) -> HTTPResponse = {
            .created("/v1/orgs/\(orgId)/surveys/\($0.surveyId)", Self.surveyJSON($0, versions: []))
        }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.surveys.create(orgId: orgId, by: try context.member(), key: keyed.key) {
            let body = try JSONBody(request.body)
            return Surveys.NewSurvey(title: try body.string("title"), reviewRequired: try body.bool("reviewRequired", default: false))
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
        let found = try services.operations.visibleSurvey(surveyId, of: orgId, by: try context.member())
        return .json(200, Self.surveyJSON(found.0, versions: found.1))
    }

    func publishVersion(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId
        let operations = services.operations
        // What the version is published from, read before it is written: its document describes it.
        let kept = Mutex<VersionSourceRecord?>(nil)
        let render: @Sendable (SurveyVersionRecord) throws -> HTTPResponse = {
            let files = try operations.versionFiles(of: $0, kept: kept.withLock { $0 })
            return .created("/v1/orgs/\(orgId)/survey-versions/\($0.surveyVersionId)", try Self.versionJSON($0, files: files))
        }
        let keyed = KeyedAnswer(request, render)
        let contentType = request.header("Content-Type")
        let format = FormSources.format(ofContentType: contentType) ?? .json
        if format == .json { try operations.limits.checkJSONDefinition(bytes: request.body.count) }
        let outcome = try operations.surveys.publish(orgId: orgId, surveyId: request.parameter("surveyId"), by: try context.member(), key: keyed.key) {
            let published: FormSources.Published
            switch format {
            case .json:
                guard let definition = try JSONBody(request.body).fields["definition"] else { throw ApiError.malformed("`definition` is required.") }
                published = FormSources.Published(definition: definition)
            case .xlsform:
                published = try operations.forms.definition(fromXLSForm: request.body, contentType: contentType)
            case .xform:
                published = try FormSources.definition(fromXForm: request.body)
            }
            kept.withLock { $0 = published.source }
            return published
        }
        return try keyed.answer(outcome)
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
        return .json(200, try Self.versionJSON(v, files: try services.operations.versionFiles(of: v)))
    }
}
