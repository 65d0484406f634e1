/// What an entity list's OData feed reads besides its pages (`ReadContext.entities`).
extension ReadContext {
    /// How many entities of a list are not deleted: the feed's `@odata.count`.
    public func entityCount(orgId: String, list: String) throws -> Int {
        let rows = try conn.query("SELECT COUNT(*) AS n FROM entities WHERE org_id = ? AND list_name = ? AND deleted_at IS NULL",
                                  [.text(orgId), .text(list)])
        return Int(try rows.first?.int("n") ?? 0)
    }
}
