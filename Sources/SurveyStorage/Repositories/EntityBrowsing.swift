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
    /// The most index entries one searched page reads (about 40 ms of SQLite's time): a search
    /// that matches few of 100,000 stops there and offers to search further, so no page reads
    /// the whole list.
    public static let entitySearchBudget = 15_000

    /// A page of a list's entities that are not deleted, hard conflicts first, then soft, then
    /// the rest, each in id order; narrowed to those whose label or properties contain `search`
    /// (either case of A–Z). Keyset paging: each rank is one range of an index, so a page costs
    /// the same at the end of 100,000 entities as at the start. A search reads at most `budget`
    /// entities: `partial` says it stopped there before the page was full, and `next` goes on
    /// after the last entity it read.
    public func entityPage(orgId: String, list: String, search: String?, from cursor: EntityPageCursor?, limit: Int,
                           budget: Int = entitySearchBudget) throws -> (rows: [EntityRecord], next: EntityPageCursor?, partial: Bool) {
        // With SQLite's trigram index (three characters at least): a short window first, where
        // a common word fills the page at once; when it does not, the index's few matches.
        if let search, !search.isEmpty, conn.dialect == .sqlite, search.unicodeScalars.count >= 3 {
            let quick = try windowPage(orgId: orgId, list: list, search: search, from: cursor, limit: limit, budget: min(budget, Self.indexedWindow))
            guard quick.partial else { return quick }
            return try indexedPage(orgId: orgId, list: list, search: search, from: cursor, limit: limit)
        }
        return try windowPage(orgId: orgId, list: list, search: search, from: cursor, limit: limit, budget: budget)
    }

    /// The window a search with the index reads before it asks the index.
    static let indexedWindow = 2_000

    /// A searched page from the trigram index (`entity_search`): every match, in the page's order.
    private func indexedPage(orgId: String, list: String, search: String, from cursor: EntityPageCursor?, limit: Int) throws
        -> (rows: [EntityRecord], next: EntityPageCursor?, partial: Bool) {
        var rows: [(Int, EntityRecord)] = []
        let start = cursor?.rank ?? 0
        // One phrase of the text's trigrams: a substring, whatever characters it holds.
        let phrase = "\"" + search.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        for rank in start..<EntityPageCursor.marks.count where rows.count <= limit {
            var range = "org_id = ? AND list_name = ? AND deleted_at IS NULL AND entity_id > ?"
            var args: [SQLValue] = [.text(orgId), .text(list), .text(rank == start ? cursor?.after ?? "" : "")]
            if let mark = EntityPageCursor.marks[rank] { range += " AND conflict = ?"; args.append(.text(mark)) } else { range += " AND conflict IS NULL" }
            rows += try conn.query("""
                SELECT \(EntityRecord.columns) FROM entities
                WHERE rowid IN (SELECT rowid FROM entity_search WHERE entity_search MATCH ?) AND \(range) ORDER BY entity_id LIMIT ?
                """, [.text(phrase)] + args + [.int(Int64(limit + 1 - rows.count))]).map { (rank, try EntityRecord(row: $0)) }
        }
        guard rows.count > limit, limit > 0 else { return (rows.map(\.1), nil, false) }
        let last = rows[limit - 1]
        return (rows.prefix(limit).map(\.1), EntityPageCursor(rank: last.0, after: last.1.entityId), false)
    }

    /// A page read from a window of the list's index (`budget` entries at most), the matches kept.
    private func windowPage(orgId: String, list: String, search: String?, from cursor: EntityPageCursor?, limit: Int,
                            budget: Int) throws -> (rows: [EntityRecord], next: EntityPageCursor?, partial: Bool) {
        var rows: [(Int, EntityRecord)] = []
        let start = cursor?.rank ?? 0
        let search = search.flatMap { $0.isEmpty ? nil : $0 }
        var read = 0
        for rank in start..<EntityPageCursor.marks.count where rows.count <= limit {
            var range = "org_id = ? AND list_name = ? AND deleted_at IS NULL AND entity_id > ?"
            var args: [SQLValue] = [.text(orgId), .text(list), .text(rank == start ? cursor?.after ?? "" : "")]
            if let mark = EntityPageCursor.marks[rank] { range += " AND conflict = ?"; args.append(.text(mark)) } else { range += " AND conflict IS NULL" }
            guard let search else {
                rows += try conn.query("SELECT \(EntityRecord.columns) FROM entities WHERE \(range) ORDER BY entity_id LIMIT ?",
                                       args + [.int(Int64(limit + 1 - rows.count))]).map { (rank, try EntityRecord(row: $0)) }
                continue
            }
            // The window: the next `window` entries of the rank's index — the conflict index for
            // a mark; for the rest, the primary key, whatever the entries' conflict (so that the
            // window is counted from the index alone). Then those of them that match.
            let window = budget - read
            var entries = "org_id = ? AND list_name = ? AND entity_id > ?"
            var entryArgs = Array(args.prefix(3))
            var kept = "deleted_at IS NULL"
            if let mark = EntityPageCursor.marks[rank] { entries += " AND conflict = ?"; entryArgs.append(.text(mark)) } else { kept += " AND conflict IS NULL" }
            let pattern = Self.likePattern(search)
            rows += try conn.query("""
                SELECT * FROM (SELECT \(EntityRecord.columns) FROM entities WHERE \(entries) ORDER BY entity_id LIMIT ?) w
                WHERE \(kept) AND (lower(label) LIKE ? ESCAPE '\\' OR lower(properties) LIKE ? ESCAPE '\\')
                ORDER BY entity_id LIMIT ?
                """, entryArgs + [.int(Int64(window)), .text(pattern), .text(pattern), .int(Int64(limit + 1 - rows.count))])
                .map { (rank, try EntityRecord(row: $0)) }
            guard rows.count <= limit else { break }
            let seen = try conn.query("""
                SELECT COUNT(*) AS n, MAX(entity_id) AS last FROM (SELECT entity_id FROM entities WHERE \(entries) ORDER BY entity_id LIMIT ?) w
                """, entryArgs + [.int(Int64(window))]).first
            let n = Int(try seen?.int("n") ?? 0)
            read += n
            if n == window, let last = try seen?.optionalString("last") {
                // The budget is spent before the page is full: the next page goes on from here.
                return (rows.map(\.1), EntityPageCursor(rank: rank, after: last), true)
            }
        }
        guard rows.count > limit, limit > 0 else { return (rows.map(\.1), nil, false) }
        let last = rows[limit - 1]
        return (rows.prefix(limit).map(\.1), EntityPageCursor(rank: last.0, after: last.1.entityId), false)
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
