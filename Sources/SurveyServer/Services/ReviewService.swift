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
        services.route(&router, "PUT", "/v1/orgs/{orgId}/responses/{responseId}/answers", .member(anyOf: []), edit)
        services.route(&router, "GET", "/v1/orgs/{orgId}/responses/{responseId}/versions", .member(anyOf: []), versions)
        services.route(&router, "GET", "/v1/orgs/{orgId}/responses/{responseId}/versions/{number}", .member(anyOf: []), version)
        services.route(&router, "GET", "/v1/orgs/{orgId}/responses/{responseId}/versions/{number}/diff", .member(anyOf: []), diff)
    }

    /// A reviewer's or admin's edit of the answers: the response document as edited.
    func edit(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let keyed = KeyedAnswer(request, Self.render)
        let outcome = try services.operations.reviews.edit(
            orgId: context.orgId, responseId: request.parameter("responseId"), by: try context.member(), key: keyed.key) {
                let body = try JSONBody(request.body)
                let expected = try body.int("expectedRevision")
                guard let answers = body.fields["answers"], answers.objectValue != nil else {
                    throw ApiError.malformed("`answers` is required: an object of answers keyed by question id.")
                }
                return AnswersEdit(expectedRevision: expected, answers: answers, comment: try body.optionalString("comment"))
            }
        return try keyed.answer(outcome)
    }

    func versions(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let page = try Page(request)
        let all = try services.operations.reviews.versions(orgId: context.orgId, responseId: request.parameter("responseId"), by: try context.member())
        let after = page.after.flatMap { Int64($0) } ?? 0
        let rows = Array(all.filter { $0.number > after }.prefix(page.limit))
        return .json(200, page.render(rows, id: { String($0.number) }, item: { (try? Self.versionDocument($0)) ?? .null }))
    }

    func version(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, _) = try services.operations.reviews.version(orgId: context.orgId, responseId: request.parameter("responseId"),
                                                             number: try Self.number(request), by: try context.member())
        return .json(200, try Self.versionDocument(v))
    }

    func diff(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, previous) = try services.operations.reviews.version(orgId: context.orgId, responseId: request.parameter("responseId"),
                                                                    number: try Self.number(request), by: try context.member())
        let old = try previous.map { try JSONParser.parse(Array($0.answers.utf8)) }
        let changes = AnswersDiff.changes(from: old, to: try JSONParser.parse(Array(v.answers.utf8)))
        return .json(200, ["items": .array(changes.map { ["path": .string($0.path), "old": $0.old, "new": $0.new] }), "nextCursor": .null])
    }

    /// The path's version number; anything that is not one is the 404 of a version that does not exist.
    static func number(_ request: HTTPRequest) throws -> Int {
        let text = request.parameter("number")
        guard let n = Int(text), n >= 1, String(n) == text else { throw ApiError(.notFound, "The response has no version \(text).") }
        return n
    }

    static func versionDocument(_ v: ResponseVersionRecord) throws -> JSONValue {
        ["number": .number(Double(v.number)), "answers": try JSONParser.parse(Array(v.answers.utf8)),
         "createdAt": .string(Timestamp.format(v.createdAt)), "createdBy": .string(v.createdBy), "source": .string(v.source)]
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
