import SurveyDomain

/// The console's views of a survey's data: a page of the table (keyset, newest first), and the
/// summary's count of responses per collector and day, read from `response_facts` (narrow rows
/// with the responses' own filter columns) as the rest of the summary is (`summaryFacts`).
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

extension Snapshot {
    /// How many responses `filter` selects per collector and per day of server time (days since
    /// 1970-01-01 UTC).
    public func countsBySubmitterAndDay(_ filter: ExportFilter) throws -> [(submitter: String, day: Int64, count: Int)] {
        let c = filter.condition
        return try conn.query("""
            SELECT submitter, received_at / 86400000 AS day, COUNT(*) AS n FROM response_facts WHERE \(c.sql)
            GROUP BY 1, 2 ORDER BY 2, 1
            """, c.args).map { (try $0.string("submitter"), try $0.int("day"), Int(try $0.int("n"))) }
    }
}
