import SurveyDomain

/// The console's Data view: a page of the table (keyset, newest first). The Summary reads
/// `response_facts` (`SummaryFactsRepository`).
extension ReadContext {
    /// A page of the responses `filter` selects, newest first, before `before` (a responseId):
    /// keyset paging on the primary key, so the last page costs what the first does, and a
    /// response arriving meanwhile (a newer id) never moves a row from one page to another.
    public func dataRows(_ filter: ExportFilter, before: String?, limit: Int) throws -> [ExportedResponse] {
        var c = filter.condition
        if let before { c.sql += " AND response_id < ?"; c.args.append(.text(before)) }
        return try conn.query("SELECT \(ExportedResponse.columns) FROM responses WHERE \(c.sql) ORDER BY response_id DESC LIMIT ?",
                              c.args + [.int(Int64(limit))]).map(ExportedResponse.init)
    }
}
