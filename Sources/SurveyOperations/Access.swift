import SurveyDomain
import SurveyStorage

/// Who may call a route, declared by every door where it registers the route and checked with
/// `Operations.admit` (steps 1 and 2 of the order of checks) — by the router before the handler
/// runs, or, for a route admitted by its operation (`routeAdmittedByOperation`: submissions,
/// uploads, exports; the OpenRosa door's submissions), inside the operation's own snapshot: a caller (1007 in the API, the
/// sign-in page in the console), then the organization of the path — anyone not of it gets the
/// 404 of a thing that does not exist — then the role (1006). What depends on the thing itself
/// (a response only its collector may see, a task only its assignee) stays with the operation
/// that reads it.
public enum Access: Sendable, Equatable, CustomStringConvertible {
    /// Nobody needs to be signed in (health, sign-in, invitations).
    case anyone
    /// Any caller: an operator or a user of any organization.
    case anyCaller
    /// Operators only (a user gets 1006).
    case operatorOnly
    /// A user of `{orgId}` holding one of the roles (none listed: any role).
    case member(anyOf: [Role])
    /// An operator (the organization must exist), or a user of `{orgId}` holding one of the roles.
    case memberOrOperator(anyOf: [Role])

    public var description: String {
        switch self {
        case .anyone: "anyone"
        case .anyCaller: "any caller"
        case .operatorOnly: "operator"
        case .member(let roles): roles.isEmpty ? "member" : "member: " + roles.map(\.rawValue).joined(separator: " or ")
        case .memberOrOperator(let roles): "operator, or " + Access.member(anyOf: roles).description
        }
    }
}

/// A caller admitted to a route: who, and for which organization of the path.
public struct Admission: Sendable {
    public let caller: Caller
    /// The path's `{orgId}` ("" when the route has none).
    public let orgId: String

    /// The calling user of `orgId`; a route declared `.member` always has one.
    public func member() throws -> UserRecord {
        guard let user = caller.user, user.orgId == orgId else { throw ApiError.notFound() }
        return user
    }
}

extension Operations {
    /// Step 2 for a declared `access`, inside a read the door is already making, for the caller
    /// the door resolved in step 1 (a bearer token, a console session). A route open to
    /// `.anyone` has no caller to admit and never comes here.
    public func admit(_ caller: Caller, to access: Access, orgId: String, in db: ReadContext) throws -> Admission {
        try admit(caller, to: access, orgId: orgId) { try db.org(orgId) != nil }
    }

    /// The same, reading only when it must (an operator on an organization's route).
    public func admit(_ caller: Caller, to access: Access, orgId: String) throws -> Admission {
        try admit(caller, to: access, orgId: orgId) { try database.read { try $0.org(orgId) } != nil }
    }

    /// The same for a user a door has already resolved: an operation that takes a user admits it
    /// again, so a door that forgot a check cannot open another organization's data.
    @discardableResult
    public func admit(_ user: UserRecord, to access: Access, orgId: String) throws -> UserRecord {
        switch access {
        case .anyone, .anyCaller: return user
        case .operatorOnly: throw ApiError(.forbidden, "Only an operator may do this.")
        case .member(let roles), .memberOrOperator(let roles): return try member(user, of: orgId, withAnyOf: roles)
        }
    }

    private func admit(_ caller: Caller, to access: Access, orgId: String, orgExists: () throws -> Bool) throws -> Admission {
        switch access {
        case .anyone, .anyCaller:
            break
        case .operatorOnly:
            try requireOperator(caller)
        case .member(let roles):
            _ = try member(caller, of: orgId, withAnyOf: roles)
        case .memberOrOperator(let roles):
            if caller.isOperator {
                guard try orgExists() else { throw ApiError.notFound() }
            } else {
                _ = try member(caller, of: orgId, withAnyOf: roles)
            }
        }
        return Admission(caller: caller, orgId: orgId)
    }
}
