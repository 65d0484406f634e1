import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// A submission's comments (`…/submissions/{instanceId}/comments`): surveyd's response comments
/// (`ResponseComments`), each `{body, actorId, createdAt}`, oldest first, the review steps'
/// comments among them.
extension CentralService {
    func registerComments(into router: inout Router) {
        let path = "/v1/projects/{projectId}/forms/{xmlFormId}/submissions/{instanceId}/comments"
        let readers = Access.member(anyOf: [])
        router.add("GET", path, access: readers) { request in CentralRefusal.answer { try comments(request) } }
        router.add("POST", path, access: readers) { request in CentralRefusal.answer { try addComment(request) } }
    }

    func comments(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request)
        let (_, r) = try visibleSubmission(request)
        let listed = try operations.responseComments.list(orgId: org.orgId, responseId: r.responseId, by: user)
        let actors = try actorIds(ofUsers: listed.map(\.actor))
        return .json(200, .array(listed.map { Self.comment($0.text, actorId: actors[$0.actor] ?? 0, at: $0.at) }))
    }

    /// Gated like every write; with an `Idempotency-Key` its retry is the same comment, once.
    func addComment(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request)
        let (_, r) = try visibleSubmission(request)
        let actorId = user.actorId
        let responseId = r.responseId
        let keyed = KeyedAnswer<ResponseComments.Comment>(request) { c in
            .json(200, Self.comment(c.text, actorId: actorId, at: c.at)).logging(["responseId": responseId])
        }
        let outcome = try operations.responseComments.add(orgId: org.orgId, responseId: r.responseId, by: user, key: keyed.key) {
            try JSONBody(request.body).optionalString("body")
        }
        return try keyed.answer(outcome)
    }

    static func comment(_ body: String, actorId: Int64, at: Int64) -> JSONValue {
        ["body": .string(body), "actorId": .number(Double(actorId)), "createdAt": .string(Timestamp.format(at))]
    }
}
