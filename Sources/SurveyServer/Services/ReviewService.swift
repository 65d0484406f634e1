import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The API's door onto the review workflow (`Reviews`): decodes a step, renders the response.
struct ReviewService {
    let services: Services

    func register(into router: inout Router) {
        // Any member: who may see the response decides 404 before the role decides 1006.
        services.route(&router, "POST", "/v1/orgs/{orgId}/responses/{responseId}/review", .member(anyOf: []), review)
        services.route(&router, "POST", "/v1/orgs/{orgId}/responses/{responseId}/resubmit", .member(anyOf: []), resubmit)
        services.route(&router, "GET", "/v1/orgs/{orgId}/responses/{responseId}/history", .member(anyOf: []), history)
    }

    func review(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request, Self.render)
        let outcome = try services.operations.reviews.review(
            orgId: context.orgId, responseId: request.parameter("responseId"), by: try context.member(),
            key: keyed.key) {
                let body = try JSONBody(request.body)
                return ReviewRequest(action: try body.string("action"), expectedRevision: try body.int("expectedRevision"),
                                     comment: try body.optionalString("comment"))
            }
        return try keyed.answer(outcome)
    }

    func resubmit(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request, Self.render)
        let outcome = try services.operations.reviews.resubmit(
            orgId: context.orgId, responseId: request.parameter("responseId"), by: try context.member(),
            key: keyed.key) {
                let body = try JSONBody(request.body)
                let expected = try body.int("expectedRevision")
                let versionId = try body.string("surveyVersionId")
                let contentHash = try body.string("contentHash")
                guard let answers = body.fields["answers"] else { throw ApiError.malformed("`answers` is required.") }
                return Resubmission(expectedRevision: expected, surveyVersionId: versionId, contentHash: contentHash, answers: answers)
            }
        return try keyed.answer(outcome)
    }

    @Sendable static func render(_ updated: ResponseRecord) throws -> HTTPResponse {
        .json(200, try updated.document()).logging(["responseId": updated.responseId])
    }

    func history(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let trail = try services.operations.reviews.history(orgId: context.orgId, responseId: request.parameter("responseId"),
                                                            by: try context.member())
        return .json(200, ["items": .array(trail.map(Self.historyItem))])
    }

    static func historyItem(_ a: AuditRecord) -> JSONValue {
        var o: [String: JSONValue] = ["seq": .number(Double(a.seq)), "action": .string(a.action), "actor": .string(a.actor),
                                      "at": .string(Timestamp.format(a.at))]
        if let r = a.revision { o["revision"] = .number(Double(r)) }
        if let d = a.detail.flatMap({ try? JSONParser.parse(Array($0.utf8)) })?.objectValue {
            for k in ["fromState", "toState", "comment"] { if let v = d[k] { o[k] = v } }
        }
        return .object(o)
    }
}
