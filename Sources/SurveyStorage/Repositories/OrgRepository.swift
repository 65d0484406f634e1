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

    /// The organization that is this project of ODK Central's API.
    public func org(projectId: Int64) throws -> OrgRecord? {
        try conn.query("SELECT \(OrgRecord.columns) FROM orgs WHERE project_id = ?", [.int(projectId)]).first.map(OrgRecord.init)
    }

    /// Every organization, in project id order (what an operator reads as Central's projects).
    public func orgsByProjectId() throws -> [OrgRecord] {
        try conn.query("SELECT \(OrgRecord.columns) FROM orgs ORDER BY project_id").map(OrgRecord.init)
    }
}

extension SecurityTransaction {
    /// The next integer id of `kind` (`project`, `actor`). The counter's row is updated first, so
    /// concurrent creators (PostgreSQL, several processes) wait for each other; a rolled-back
    /// creation gives its number back, a committed one keeps it for ever.
    func nextIntegerId(_ kind: String) throws -> Int64 {
        try context.conn.run("UPDATE integer_ids SET last = last + 1 WHERE kind = ?", [.text(kind)])
        guard let row = try context.conn.query("SELECT last FROM integer_ids WHERE kind = ?", [.text(kind)]).first else {
            throw ApiError(.internalError, "The integer id counter '\(kind)' is missing.")
        }
        return try row.int("last")
    }

    public func createOrg(orgId: String, name: String, expiresAt: Int64) throws -> OrgRecord {
        let projectId = try nextIntegerId("project")
        try context.conn.run("INSERT INTO orgs(org_id, name, expires_at, created_at, project_id) VALUES (?, ?, ?, ?, ?)",
                             [.text(orgId), .text(name), .int(expiresAt), .int(now), .int(projectId)])
        try audit(action: "org.create", targetType: "org", targetId: orgId, detail: "expiresAt=\(Timestamp.format(expiresAt))")
        return OrgRecord(orgId: orgId, name: name, expiresAt: expiresAt, createdAt: now, projectId: projectId)
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
