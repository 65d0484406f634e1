import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// ODK Central's app users and form assignments, mapped onto surveyd's users (user management:
/// never gated). An app user is a collector: creating one is `POST /v1/orgs/{orgId}/users` with
/// the role `collector`, and its token is the collector's app token for the OpenRosa door, shown
/// once. A collector already gets every open form, so an assignment stores nothing.
extension CentralService {
    func registerAppUsers(into router: inout Router) {
        let admins = Access.memberOrOperator(anyOf: [.admin])
        router.add("GET", "/v1/projects/{projectId}/app-users", access: admins) { request in CentralRefusal.answer { try appUsers(request) } }
        router.add("POST", "/v1/projects/{projectId}/app-users", access: admins) { request in CentralRefusal.answer { try createAppUser(request) } }
        router.add("POST", "/v1/projects/{projectId}/forms/{xmlFormId}/assignments/{roleId}/{actorId}", access: admins) { request in
            CentralRefusal.answer { try assign(request) }
        }
    }

    /// Central's role id of an app user on a form ("Data Collector" for a field key).
    static let appUserRoleId = "2"

    /// The organization's active collectors, oldest first; a token is never shown again
    /// (`"(shown once)"` stands in for it, as Central shows an active app user's).
    func appUsers(_ request: HTTPRequest) throws -> HTTPResponse {
        let (_, org) = try admit(request, .memberOrOperator(anyOf: [.admin]))
        let listed = try services.database.read { db in
            try db.users(orgId: org.orgId).filter { $0.active && $0.has(.collector) }.map { ($0, try db.userCreatedAt($0.userId) ?? 0) }
        }
        return .json(200, .array(listed.sorted { $0.0.actorId < $1.0.actorId }.map { user, created in
            CentralJSON.appUser(user, projectId: org.projectId, token: "(shown once)", createdAt: created)
        }))
    }

    /// `{displayName}`: a new collector and its app token.
    func createAppUser(_ request: HTTPRequest) throws -> HTTPResponse {
        let (caller, org) = try admit(request, .memberOrOperator(anyOf: [.admin]))
        let clock = operations.clock
        let keyed = KeyedAnswer(request) { (issued: Users.Issued) in
            HTTPResponse.json(200, CentralJSON.appUser(issued.user, projectId: org.projectId, token: issued.token, createdAt: clock.nowMillis()))
        }
        do {
            let outcome = try operations.users.create(orgId: org.orgId, by: caller, key: keyed.key) {
                (name: try JSONBody(request.body).string("displayName"), roles: [Role.collector.rawValue])
            }
            return try keyed.answer(outcome)
        } catch let e as ApiError where e.code == .validationFailed && e.errors.contains(where: { $0.path == "name" }) {
            // Said in Central's name for it.
            throw ApiError(e.code, e.detail.replacingOccurrences(of: "`name`", with: "`displayName`"),
                           errors: e.errors.map { $0.path == "name" ? FieldError(path: "displayName", message: $0.message) : $0 }, extra: e.extra)
        }
    }

    /// An app user assigned to a form: nothing to store (a collector gets every open form), so
    /// the answer says only that the actor and the form exist. Another role is not offered.
    func assign(_ request: HTTPRequest) throws -> HTTPResponse {
        let (_, org) = try admit(request, .memberOrOperator(anyOf: [.admin]))
        guard request.parameter("roleId") == Self.appUserRoleId else { throw CentralRefusal.notOffered(request.head.path) }
        _ = try listedForm(request, orgId: org.orgId)
        let actor = Int64(request.parameter("actorId"))
        let found = try services.database.read { db in try db.users(orgId: org.orgId).first { $0.actorId == actor && $0.active && $0.has(.collector) } }
        guard found != nil else { throw ApiError(.notFound, "No app user \(request.parameter("actorId")) in this project.") }
        return .json(200, ["success": .bool(true)])
    }
}
