import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// Who may call a route, declared where the route is registered and checked before its handler
/// runs (steps 1 and 2 of the order of checks): the token (1007), then the organization of the
/// path — anyone who is not of it gets the 404 of a thing that does not exist — then the role
/// (1006). What depends on the thing itself (a response only its collector may see, a task only
/// its assignee) stays with the handler, which knows the thing.
enum Access: Sendable {
    /// Operators only (a user gets 1006).
    case operatorOnly
    /// A user of `{orgId}` holding one of the roles (none listed: any role).
    case member(anyOf: [Role])
    /// An operator (the organization must exist), or a user of `{orgId}` holding one of the roles.
    case memberOrOperator(anyOf: [Role])
}

/// The caller, resolved once per request by the route's `Access`.
struct RequestContext: Sendable {
    let caller: Caller
    /// The path's `{orgId}`.
    let orgId: String

    /// The calling user; a route declared `.member` always has one.
    func member() throws -> UserRecord {
        guard let user = caller.user, user.orgId == orgId else { throw ApiError.notFound() }
        return user
    }
}

extension Services {
    typealias ContextHandler = @Sendable (RequestContext, HTTPRequest) throws -> HTTPResponse

    /// Registers a route whose handler runs only for the callers `access` admits.
    func route(_ router: inout Router, _ method: String, _ pattern: String, _ access: Access, runs execution: Router.Execution? = nil,
               _ handler: @escaping ContextHandler) {
        let services = self
        router.add(method, pattern, runs: execution) { request in
            try handler(try services.resolve(access, request.head), request)
        }
    }

    /// Steps 1–2 for `access`, in one read snapshot.
    func resolve(_ access: Access, _ head: RequestHead) throws -> RequestContext {
        let orgId = head.parameter("orgId")
        return try database.read { db in
            let caller = try operations.authenticate(bearerToken: head.bearerToken, in: db)
            switch access {
            case .operatorOnly:
                try operations.requireOperator(caller)
            case .member(let roles):
                _ = try operations.member(caller, of: orgId, withAnyOf: roles)
            case .memberOrOperator(let roles):
                if caller.isOperator {
                    guard try db.org(orgId) != nil else { throw ApiError.notFound() }
                } else {
                    _ = try operations.member(caller, of: orgId, withAnyOf: roles)
                }
            }
            return RequestContext(caller: caller, orgId: orgId)
        }
    }
}
