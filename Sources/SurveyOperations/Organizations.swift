import Foundation
import SurveyDomain
import SurveyStorage

/// Organizations and their one subscription. Never gated: operators must be able to renew.
public struct Organizations: Sendable {
    let operations: Operations

    /// An operator creates an organization. The key belongs to no organization yet (scope ""):
    /// its retry finds the one it made.
    public func create(by caller: Caller, key: IdempotencyKey<OrgRecord>? = nil,
                       _ request: () throws -> (name: String, expiresAt: Int64)) throws -> KeyedOutcome<OrgRecord> {
        try operations.requireOperator(caller)
        let clock = operations.clock
        return try operations.keyedSecurityWrite(scopeOrgId: "", orgId: { $0.orgId }, caller: caller.actorId, target: "", key: key, prepare: {
            let r = try request()
            return NewOrg(orgId: Ids.make("org", nowMillis: clock.nowMillis()), name: try DisplayName.checked(r.name), expiresAt: r.expiresAt)
        }) { new, tx in
            try tx.createOrg(orgId: new.orgId, name: new.name, expiresAt: new.expiresAt)
        }
    }

    struct NewOrg: Sendable {
        let orgId: String
        let name: String
        let expiresAt: Int64
    }

    /// Renewing (or ending) a subscription: operators only — a member learns just that.
    public func setSubscription(orgId: String, by caller: Caller, key: IdempotencyKey<OrgRecord>? = nil,
                                expiresAt: () throws -> Int64) throws -> KeyedOutcome<OrgRecord> {
        guard caller.isOperator else { throw ApiError(.forbidden, "Only an operator may change a subscription.") }
        return try operations.keyedSecurityWrite(scopeOrgId: orgId, orgId: { _ in orgId }, caller: caller.actorId, target: orgId, key: key,
                                                 prepare: expiresAt) { expiresAt, tx in
            guard let org = try tx.setSubscription(orgId: orgId, expiresAt: expiresAt) else { throw ApiError.notFound() }
            return org
        }
    }

    /// The organization, for its subscription (404 when there is none).
    public func organization(_ orgId: String) throws -> OrgRecord {
        guard let org = try operations.database.read({ try $0.org(orgId) }) else { throw ApiError.notFound() }
        return org
    }
}
