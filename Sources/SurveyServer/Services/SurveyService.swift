import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// Surveys and their immutable versions. Creating and publishing are gated writes.
struct SurveyService {
    let services: Services

    func register(into router: inout Router) {
        services.route(&router, "POST", "/v1/orgs/{orgId}/surveys", .member(anyOf: [.admin]), createSurvey)
        services.route(&router, "GET", "/v1/orgs/{orgId}/surveys", .member(anyOf: []), listSurveys)
        services.route(&router, "GET", "/v1/orgs/{orgId}/surveys/{surveyId}", .member(anyOf: []), getSurvey)
        services.route(&router, "POST", "/v1/orgs/{orgId}/surveys/{surveyId}/versions", .member(anyOf: [.admin]), publishVersion)
        services.route(&router, "GET", "/v1/orgs/{orgId}/survey-versions/{surveyVersionId}", .member(anyOf: []), getVersion)
    }

    static func surveyJSON(_ s: SurveyRecord, versions: [SurveyVersionRecord]) -> JSONValue {
        ["surveyId": .string(s.surveyId), "title": .string(s.title), "reviewRequired": .bool(s.reviewRequired),
         "createdAt": .string(Timestamp.format(s.createdAt)),
         "versions": .array(versions.map { ["surveyVersionId": .string($0.surveyVersionId), "number": .number(Double($0.number)),
                                            "contentHash": .string($0.contentHash)] })]
    }

    static func versionJSON(_ v: SurveyVersionRecord) throws -> JSONValue {
        ["surveyVersionId": .string(v.surveyVersionId), "surveyId": .string(v.surveyId), "number": .number(Double(v.number)),
         "contentHash": .string(v.contentHash), "definition": try JSONParser.parse(Array(v.definition.utf8)),
         "createdAt": .string(Timestamp.format(v.createdAt))]
    }

    /// `sha256:` + hex SHA-256 of the canonical JSON of the definition.
    static func contentHash(_ definition: JSONValue) -> String {
        "sha256:" + Digest.sha256Hex(CanonicalJSON.encode(definition))
    }

    struct NewSurvey: Sendable { let title: String; let reviewRequired: Bool; let surveyId: String }
    struct NewVersion: Sendable { let contentHash: String; let definition: String; let surveyVersionId: String }

    func createSurvey(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        return try services.keyedWrite(request, orgId: orgId, caller: user.userId, target: "", prepare: {
            let body = try JSONBody(request)
            let title = try body.string("title")
            let reviewRequired = try body.bool("reviewRequired", default: false)
            guard !title.isEmpty, title.count <= 500 else {
                throw ApiError(.validationFailed, "`title` must be 1 to 500 characters.", errors: [FieldError(path: "title", message: "1 to 500 characters")])
            }
            return NewSurvey(title: title, reviewRequired: reviewRequired, surveyId: Ids.make("srv", nowMillis: services.clock.nowMillis()))
        }, write: { (p: NewSurvey, tx: GatedTransaction) in
            let survey = try tx.createSurvey(surveyId: p.surveyId, title: p.title, reviewRequired: p.reviewRequired, createdBy: user.userId)
            return .created("/v1/orgs/\(orgId)/surveys/\(survey.surveyId)", Self.surveyJSON(survey, versions: []))
        })
    }

    func listSurveys(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let page = try Page(request)
        let rows = try services.database.read { db in
            try db.surveys(orgId: orgId, after: page.after, limit: page.limit).map { ($0, try db.surveyVersions(surveyId: $0.surveyId)) }
        }
        return .json(200, page.render(rows, id: { $0.0.surveyId }, item: { Self.surveyJSON($0.0, versions: $0.1) }))
    }

    func getSurvey(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let surveyId = request.parameter("surveyId")
        guard let found = try services.database.read({ db in
            try db.survey(orgId: orgId, surveyId: surveyId).map { ($0, try db.surveyVersions(surveyId: $0.surveyId)) }
        }) else { throw ApiError.notFound() }
        return .json(200, Self.surveyJSON(found.0, versions: found.1))
    }

    func publishVersion(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        let surveyId = request.parameter("surveyId")
        guard try services.database.read({ try $0.survey(orgId: orgId, surveyId: surveyId) }) != nil else { throw ApiError.notFound() }
        return try services.keyedWrite(request, orgId: orgId, caller: user.userId, target: surveyId, prepare: {
            let body = try JSONBody(request)
            guard let definition = body.fields["definition"] else { throw ApiError.malformed("`definition` is required.") }
            do {
                _ = try SurveyDefinition.parse(definition)
            } catch let e as ValidationErrors {
                throw ApiError(.validationFailed, "The survey definition is not valid.", errors: e.errors)
            }
            return NewVersion(contentHash: Self.contentHash(definition), definition: CanonicalJSON.string(definition),
                              surveyVersionId: Ids.make("sv", nowMillis: services.clock.nowMillis()))
        }, write: { (p: NewVersion, tx: GatedTransaction) in
            let version = try tx.publishVersion(surveyVersionId: p.surveyVersionId, surveyId: surveyId, contentHash: p.contentHash, definition: p.definition)
            return .created("/v1/orgs/\(orgId)/survey-versions/\(version.surveyVersionId)", try Self.versionJSON(version))
        })
    }

    func getVersion(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        guard let v = try services.database.read({ try $0.surveyVersion(orgId: orgId, surveyVersionId: request.parameter("surveyVersionId")) })
        else { throw ApiError.notFound() }
        return .json(200, try Self.versionJSON(v))
    }
}
