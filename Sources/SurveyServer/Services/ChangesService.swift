import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// `GET /changes`: what happened to the caller's responses and tasks, in server order, with a
/// cursor — so an app can show "accepted", "returned for correction", "approved" without
/// resending anything. Never gated. Collectors follow their own; reviewers and admins all.
struct ChangesService {
    let services: Services

    func register(into router: inout Router) {
        services.route(&router, "GET", "/v1/orgs/{orgId}/changes", .member(anyOf: []), changes)
    }

    func changes(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        let page = try Page(request)
        var after: Int64 = 0
        if let a = page.after {
            guard let n = ChangesCursor.parse(a) else {
                throw ApiError(.validationFailed, "`after` must be a cursor from this feed.", errors: [FieldError(path: "after", message: "not a cursor")])
            }
            after = n
        }
        let all = user.has(.reviewer) || user.has(.admin)
        let rows = try services.database.read(followingAudit: true) { try $0.changes(orgId: orgId, userId: all ? nil : user.userId, after: after, limit: page.limit) }
        return .json(200, page.render(rows, id: { String($0.seq) }, item: Self.item))
    }

    static func item(_ c: ChangeRecord) -> JSONValue {
        var o: [String: JSONValue] = ["cursor": .string(String(c.seq)), "kind": .string(c.kind), "id": .string(c.id),
                                      "event": .string(c.action), "at": .string(Timestamp.format(c.at))]
        if let r = c.revision { o["revision"] = .number(Double(r)) }
        if let d = c.detail.flatMap({ try? JSONParser.parse(Array($0.utf8)) })?.objectValue {
            if let s = d["toState"] { o["reviewState"] = s }
            if let t = d["taskState"] { o["taskState"] = t }
        }
        return .object(o)
    }
}
