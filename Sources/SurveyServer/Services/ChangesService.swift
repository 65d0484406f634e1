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
        let all = user.has(.reviewer) || user.has(.admin)
        let (rows, key) = try services.database.read(followingAudit: true) { db -> ([ChangeRecord], [UInt8]) in
            let key = try db.cursorKey()
            var after: Int64 = 0
            if let a = page.after {
                // Sealed, like export cursors: a plain number would show how much every other
                // organization did between two pages.
                guard let n = SealedCursor.changes.parse(a, orgId: orgId, key: key) else {
                    throw ApiError(.validationFailed, "`after` must be a cursor from this feed.", errors: [FieldError(path: "after", message: "not a cursor")])
                }
                after = n
            }
            return (try db.changes(orgId: orgId, userId: all ? nil : user.userId, after: after, limit: page.limit), key)
        }
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
