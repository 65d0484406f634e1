import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The API's door onto responses: submissions (`Submissions`) and their reads, rendered as the
/// receipts and documents of the contract.
struct ResponseService {
    let services: Services

    func register(into router: inout Router) {
        // Inline: everything before the write is reads; the write itself is queued (`later`).
        services.routeAdmittedByOperation(&router, "POST", "/v1/orgs/{orgId}/responses", Submissions.access, runs: .inline, submit)
        services.route(&router, "GET", "/v1/orgs/{orgId}/responses", .member(anyOf: []), list)
        services.route(&router, "GET", "/v1/orgs/{orgId}/responses/{responseId}", .member(anyOf: []), get)
    }

    func submit(_ request: HTTPRequest) throws -> HTTPResponse {
        let door = JSONSubmissionDoor(bearerToken: request.head.bearerToken, idempotencyKey: request.header("idempotency-key"),
                                      body: request.body)
        // A replay or a refusal is answered at once; otherwise the write is queued and this
        // thread goes on serving other connections, the writer wakes the request after the
        // group's COMMIT and the answer is built back here.
        let answer = DeferredResponse()
        services.operations.submissions.submit(orgId: request.parameter("orgId"), from: door) { outcome in
            answer.complete { try Self.render(outcome) }
        }
        return .later(answer)
    }

    private static func render(_ outcome: SubmissionOutcome) throws -> HTTPResponse {
        switch outcome {
        case .accepted(let stored):
            return HTTPResponse.created("/v1/orgs/\(stored.orgId)/responses/\(stored.responseId)", stored.receipt)
                .logging(["responseId": stored.responseId])
        case .replayed(let stored):
            return HTTPResponse.replayed(.json(200, stored.acceptedReceipt, headers: [
                ("Location", "/v1/orgs/\(stored.orgId)/responses/\(stored.responseId)"),
            ])).logging(["responseId": stored.responseId])
        case .refused(let error):
            throw error
        }
    }

    func get(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        return .json(200, try services.operations.visibleResponse(user, orgId: orgId, responseId: request.parameter("responseId")).document())
    }

    func list(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        if let csid = request.query["clientSubmissionId"] {
            // Reconciling after an ambiguous answer: the caller's own submission only.
            guard ClientIdentifier.isValid(csid) else { throw ApiError(.invalidIdentifier, "clientSubmissionId is not a valid client id.") }
            return .json(200, try services.operations.ownResponse(user, orgId: orgId, clientSubmissionId: csid).document())
        }
        let page = try Page(request)
        var state: ReviewState?
        if let s = request.query["reviewState"] {
            guard let known = ReviewState(rawValue: s) else {
                throw ApiError(.validationFailed, "Unknown reviewState.", errors: [FieldError(path: "reviewState", message: "one of \(ReviewState.allCases.map(\.rawValue).joined(separator: ", "))")])
            }
            state = known
        }
        let rows = try services.operations.visibleResponses(user, orgId: orgId, reviewState: state, after: page.after, limit: page.limit)
        return .json(200, page.render(rows, id: \.responseId, item: { (try? $0.document()) ?? .null }))
    }
}

extension HTTPResponse {
    func logging(_ fields: [String: String]) -> HTTPResponse {
        var r = self
        r.logFields.merge(fields) { _, new in new }
        return r
    }
}
