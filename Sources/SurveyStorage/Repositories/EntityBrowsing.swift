import SurveyDomain

/// Where a page of the console's entity table starts: the rank (0 hard conflicts, 1 soft, 2
/// none) and the last entity id shown in it. Written `h:<id>`, `s:<id>` or `n:<id>`.
public struct EntityPageCursor: Sendable, Equatable {
    public let rank: Int
    public let after: String

    static let marks: [String?] = ["hard", "soft", nil]
    static let letters = ["h", "s", "n"]

    public init(rank: Int, after: String) { self.rank = rank; self.after = after }

    public init?(_ text: String) {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let rank = Self.letters.firstIndex(of: String(parts[0])) else { return nil }
        self.init(rank: rank, after: String(parts[1]))
    }

    public var text: String { Self.letters[rank] + ":" + after }
}

extension ReadContext {
    /// A page of a list's entities that are not deleted, hard conflicts first, then soft, then
    /// the rest, each in id order; narrowed to those whose label or property values contain
    /// `search` (either case of A–Z). Keyset paging: each rank is one range of an index, so a
    /// page costs the same at the end of 100,000 entities as at the start.
    public func entityPage(orgId: String, list: String, search: String?, from cursor: EntityPageCursor?, limit: Int)
        throws -> (rows: [EntityRecord], next: EntityPageCursor?) {
        var rows: [(Int, EntityRecord)] = []
        let start = cursor?.rank ?? 0
        for rank in start..<EntityPageCursor.marks.count where rows.count <= limit {
            var sql = "SELECT \(EntityRecord.columns) FROM entities WHERE org_id = ? AND list_name = ? AND deleted_at IS NULL AND entity_id > ?"
            var args: [SQLValue] = [.text(orgId), .text(list), .text(rank == start ? cursor?.after ?? "" : "")]
            if let mark = EntityPageCursor.marks[rank] { sql += " AND conflict = ?"; args.append(.text(mark)) } else { sql += " AND conflict IS NULL" }
            if let search, !search.isEmpty {
                let pattern = Self.likePattern(search)
                sql += " AND (lower(label) LIKE ? ESCAPE '\\' OR lower(properties) LIKE ? ESCAPE '\\')"
                args += [.text(pattern), .text(pattern)]
            }
            sql += " ORDER BY entity_id LIMIT ?"
            args.append(.int(Int64(limit + 1 - rows.count)))
            rows += try conn.query(sql, args).map { (rank, try EntityRecord(row: $0)) }
        }
        guard rows.count > limit, limit > 0 else { return (rows.map(\.1), nil) }
        let last = rows[limit - 1]
        return (rows.prefix(limit).map(\.1), EntityPageCursor(rank: last.0, after: last.1.entityId))
    }

    /// A substring anywhere, lower-cased; `%`, `_` and `\` in it are themselves.
    static func likePattern(_ text: String) -> String {
        var pattern = "%"
        for c in text.lowercased() {
            if c == "%" || c == "_" || c == "\\" { pattern.append("\\") }
            pattern.append(c)
        }
        return pattern + "%"
    }

    /// The entity versions a response made (a submission's create or update), in list and id order.
    public func entityVersions(orgId: String, responseId: String) throws -> [(list: String, entityId: String, version: EntityVersionRecord)] {
        try conn.query("""
            SELECT v.list_name, v.entity_id, \(EntityVersionRecord.columns) FROM \(EntityVersionRecord.from)
            WHERE v.org_id = ? AND v.response_id = ? ORDER BY v.list_name, v.entity_id, v.version
            """, [.text(orgId), .text(responseId)]).map { (try $0.string("list_name"), try $0.string("entity_id"), try EntityVersionRecord(row: $0)) }
    }
}
