import SurveyStorage

/// Who is calling, after authentication.
public enum Caller: Sendable {
    case operatorToken(tokenId: String)
    case user(UserRecord, tokenId: String)

    public var isOperator: Bool { if case .operatorToken = self { return true }; return false }
    public var user: UserRecord? { if case .user(let u, _) = self { return u }; return nil }
    /// The id written to audit entries and logs.
    public var actorId: String {
        switch self {
        case .operatorToken(let t): "operator:\(t)"
        case .user(let u, _): u.userId
        }
    }
}

public enum Role: String, Sendable, CaseIterable {
    case admin, collector, reviewer
}

extension UserRecord {
    public func has(_ role: Role) -> Bool { roles.contains(role.rawValue) }
}
