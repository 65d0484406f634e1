import SurveyDomain
import SurveyOperations
import SurveyStorage

/// What `surveyd admin ...` and `serve --demo` do, straight on the database (safe while a server
/// runs: SQLite WAL lets both write, one at a time). Each write is audited as "cli".
public struct AdminCommands: Sendable {
    let database: Database
    public init(database: Database) { self.database = database }

    /// A new operator token (shown once).
    public func createOperator() throws -> String {
        let (token, hash) = Tokens.generate()
        let tokenId = Ids.make("tok", nowMillis: database.clock.nowMillis())
        try database.securityWrite(orgId: "-", actor: "cli") { tx in
            try tx.createToken(tokenId: tokenId, hash: hash, userId: nil)
        }
        return token
    }

    public func createOrg(name: String, expiresAt: Int64) throws -> String {
        let orgId = Ids.make("org", nowMillis: database.clock.nowMillis())
        _ = try database.securityWrite(orgId: orgId, actor: "cli") { tx in
            try tx.createOrg(orgId: orgId, name: name, expiresAt: expiresAt)
        }
        return orgId
    }

    public func renew(orgId: String, until: Int64) throws -> Bool {
        guard try database.read({ try $0.org(orgId) }) != nil else { return false }
        return try database.securityWrite(orgId: orgId, actor: "cli") { tx in
            try tx.setSubscription(orgId: orgId, expiresAt: until) != nil
        }
    }

    /// Creates a user with a first token; returns (userId, token).
    public func createUser(orgId: String, name: String, roles: [String]) throws -> (userId: String, token: String) {
        guard try database.read({ try $0.org(orgId) }) != nil else { throw MaintenanceError("No organization \(orgId).") }
        let bad = roles.filter { Role(rawValue: $0) == nil }
        guard bad.isEmpty, !roles.isEmpty else { throw MaintenanceError("Unknown roles: \(bad); use admin, collector, reviewer.") }
        let now = database.clock.nowMillis()
        let userId = Ids.make("usr", nowMillis: now)
        let tokenId = Ids.make("tok", nowMillis: now)
        let (token, hash) = Tokens.generate()
        _ = try database.securityWrite(orgId: orgId, actor: "cli") { tx in
            _ = try tx.createUser(userId: userId, orgId: orgId, name: name, roles: roles)
            try tx.createToken(tokenId: tokenId, hash: hash, userId: userId)
        }
        return (userId, token)
    }
}
