import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// `GET /changes`: what happened to the caller's responses and tasks, in server order, with a
/// sealed cursor (`SealedCursor.changes`) — so an app can show "accepted", "returned for correction", "approved" without
/// resending anything. Never gated. Collectors follow their own; reviewers and admins all.
struct ChangesService {
    let services: Services

    func register(into router: inout Router) {
        services.route(&router, "GET", "/v1/orgs/{orgId}/changes", .member(anyOf: []), changes)
    }

    func changes(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        let page = try Page(request)
        let (rows, key) = try services.operations.visibleChanges(user, orgId: orgId, after: page.after, limit: page.limit)
        let cursor = { (c: ChangeRecord) in SealedCursor.changes.make(c.seq, orgId: orgId, key: key) }
        return .json(200, page.render(rows, id: cursor, item: { Self.item($0, cursor: cursor($0)) }))
    }

    static func item(_ c: ChangeRecord, cursor: String) -> JSONValue {
        var o: [String: JSONValue] = ["cursor": .string(cursor), "kind": .string(c.kind), "id": .string(c.id),
                                      "event": .string(c.action), "at": .string(Timestamp.format(c.at))]
        if let r = c.revision { o["revision"] = .number(Double(r)) }
        if let d = c.detail.flatMap({ try? JSONParser.parse(Array($0.utf8)) })?.objectValue {
            if let s = d["toState"] { o["reviewState"] = s }
            if let t = d["taskState"] { o["taskState"] = t }
        }
        return .object(o)
    }
}
