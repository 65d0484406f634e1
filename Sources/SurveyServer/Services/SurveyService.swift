import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// Surveys and their immutable versions. Creating and publishing are gated writes.
struct SurveyService {
    let services: Services

    func register(into router: inout Router) {
        router.add("POST", "/v1/orgs/{orgId}/surveys", createSurvey)
        router.add("GET", "/v1/orgs/{orgId}/surveys", listSurveys)
        router.add("GET", "/v1/orgs/{orgId}/surveys/{surveyId}", getSurvey)
        router.add("POST", "/v1/orgs/{orgId}/surveys/{surveyId}/versions", publishVersion)
        router.add("GET", "/v1/orgs/{orgId}/survey-versions/{surveyVersionId}", getVersion)
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

    func createSurvey(_ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try services.member(try services.authenticate(request), of: orgId, withAnyOf: .admin)
        let body = try JSONBody(request)
        let title = try body.string("title")
        let reviewRequired = try body.bool("reviewRequired", default: false)
        guard !title.isEmpty, title.count <= 500 else {
            throw ApiError(.validationFailed, "`title` must be 1 to 500 characters.", errors: [FieldError(path: "title", message: "1 to 500 characters")])
        }
        let surveyId = Ids.make("srv", nowMillis: Timestamp.nowMillis())
        let outcome = try services.gate.write(orgId: orgId, actor: user.userId) { tx in
            try tx.createSurvey(surveyId: surveyId, title: title, reviewRequired: reviewRequired, createdBy: user.userId)
        }
        guard case .written(let survey) = outcome else { throw ApiError(.internalError) }
        return .created("/v1/orgs/\(orgId)/surveys/\(surveyId)", Self.surveyJSON(survey, versions: []))
    }

    func listSurveys(_ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        _ = try services.member(try services.authenticate(request), of: orgId)
        let page = try Page(request)
        let rows = try services.database.read { db in
            try db.surveys(orgId: orgId, after: page.after, limit: page.limit).map { ($0, try db.surveyVersions(surveyId: $0.surveyId)) }
        }
        return .json(200, page.render(rows, id: { $0.0.surveyId }, item: { Self.surveyJSON($0.0, versions: $0.1) }))
    }

    func getSurvey(_ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        _ = try services.member(try services.authenticate(request), of: orgId)
        let surveyId = request.parameter("surveyId")
        guard let found = try services.database.read({ db in
            try db.survey(orgId: orgId, surveyId: surveyId).map { ($0, try db.surveyVersions(surveyId: $0.surveyId)) }
        }) else { throw ApiError.notFound() }
        return .json(200, Self.surveyJSON(found.0, versions: found.1))
    }

    func publishVersion(_ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try services.member(try services.authenticate(request), of: orgId, withAnyOf: .admin)
        let surveyId = request.parameter("surveyId")
        guard try services.database.read({ try $0.survey(orgId: orgId, surveyId: surveyId) }) != nil else { throw ApiError.notFound() }
        let body = try JSONBody(request)
        guard let definition = body.fields["definition"] else { throw ApiError.malformed("`definition` is required.") }
        do {
            _ = try SurveyDefinition.parse(definition)
        } catch {
            throw ApiError(.validationFailed, "The survey definition is not valid.", errors: error.errors)
        }
        let hash = Self.contentHash(definition)
        let text = CanonicalJSON.string(definition)
        let versionId = Ids.make("sv", nowMillis: Timestamp.nowMillis())
        let outcome = try services.gate.write(orgId: orgId, actor: user.userId) { tx in
            try tx.publishVersion(surveyVersionId: versionId, surveyId: surveyId, contentHash: hash, definition: text)
        }
        guard case .written(let version) = outcome else { throw ApiError(.internalError) }
        return .created("/v1/orgs/\(orgId)/survey-versions/\(versionId)", try Self.versionJSON(version))
    }

    func getVersion(_ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        _ = try services.member(try services.authenticate(request), of: orgId)
        guard let v = try services.database.read({ try $0.surveyVersion(orgId: orgId, surveyVersionId: request.parameter("surveyVersionId")) })
        else { throw ApiError.notFound() }
        return .json(200, try Self.versionJSON(v))
    }
}
