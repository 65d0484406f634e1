import SurveyDomain

extension ReadContext {
    public func org(_ orgId: String) throws -> OrgRecord? {
        try conn.query(Self.orgById, [.text(orgId)]).first.map(OrgRecord.init)
    }

    /// `org(orgId)` will be read later in this read: on PostgreSQL it goes with the read's next
    /// statement, in the same round trip (`SQLConnection.prefetch`).
    public func prefetchOrg(_ orgId: String) {
        conn.prefetch(Self.orgById, [.text(orgId)])
    }

    private static let orgById = "SELECT \(OrgRecord.columns) FROM orgs WHERE org_id = ?"
}

extension SecurityTransaction {
    public func createOrg(orgId: String, name: String, expiresAt: Int64) throws -> OrgRecord {
        try context.conn.run("INSERT INTO orgs(org_id, name, expires_at, created_at) VALUES (?, ?, ?, ?)",
                             [.text(orgId), .text(name), .int(expiresAt), .int(now)])
        try audit(action: "org.create", targetType: "org", targetId: orgId, detail: "expiresAt=\(Timestamp.format(expiresAt))")
        return OrgRecord(orgId: orgId, name: name, expiresAt: expiresAt, createdAt: now)
    }

    /// Renews or ends the subscription. Returns nil when the organization does not exist.
    public func setSubscription(orgId: String, expiresAt: Int64) throws -> OrgRecord? {
        try context.conn.holdOrganization(orgId)
        try context.conn.run("UPDATE orgs SET expires_at = ? WHERE org_id = ?", [.int(expiresAt), .text(orgId)])
        guard context.conn.changes == 1 else { return nil }
        try audit(action: "subscription.set", targetType: "org", targetId: orgId, detail: "expiresAt=\(Timestamp.format(expiresAt))")
        return try read.org(orgId)
    }
}
