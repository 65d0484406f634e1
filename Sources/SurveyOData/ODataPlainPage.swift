import SurveyDomain
import SurveyExports
import SurveyStorage

extension ODataFeed {
    /// One place of a table's row in a response's stored answers: the row's `__id`, its parent
    /// row's, and the bytes of its answers object.
    struct Place {
        let id: String
        let parentId: String
        let range: Range<Int>
    }

    /// A response with rows on a page: where its rows are (nil: read by the general path) and
    /// which of them the page holds. A class: a page passes it around without copying (and
    /// retaining) each of its strings.
    final class Picked {
        let stored: ExportedResponse
        let places: [Place]?
        let ordinals: Range<Int>
        init(_ stored: ExportedResponse, _ places: [Place]?, _ ordinals: Range<Int>) {
            self.stored = stored; self.places = places; self.ordinals = ordinals
        }
    }

    /// A page of a plain read (no `$filter`, `$orderby`, `$select` or `$expand`: what a client
    /// refreshing the feed asks for) in two steps: `plainPage` reads the page's responses from
    /// the snapshot, `write` writes their rows straight from the stored bytes (`ODataRowWriter`)
    /// once the snapshot may be closed — a snapshot held only while SQLite is read lets the WAL
    /// be checkpointed and restarted between pages.
    public struct PlainPage {
        let feed: ODataFeed
        /// Each response with rows on the page.
        var responses: [Picked] = []
        var count: Int?
        var rowCount = 0
        var delivered = 0
        var more = false

        /// The page's body rows.
        public func write() throws -> Page {
            var page = Page(rows: [], rowCount: rowCount, count: count, next: nil)
            guard var writer = ODataRowWriter(model: feed.model, table: feed.table, wkt: feed.query.wkt, naming: feed.naming) else {
                throw ApiError(.internalError, "The feed's rows could not be written.")
            }
            // Grown once rather than doubled through a page (a row is 0.3–1 KB).
            page.rows.reserveCapacity(rowCount * 768)
            var first = true
            for picked in responses {
                let versionNumber = feed.source.versionNumber(of: picked.stored.surveyVersionId)
                let submitterName = feed.source.submitterNames[picked.stored.submitter]
                var general: [(row: JSONValue, answers: [String: JSONValue], key: String)]?
                for ordinal in picked.ordinals {
                    if !first { page.rows.append(UInt8(ascii: ",")) }
                    first = false
                    if let places = picked.places, ordinal < places.count,
                       writer.write(picked.stored, answers: places[ordinal].range,
                                    .init(id: places[ordinal].id, parentId: places[ordinal].parentId, versionNumber: versionNumber,
                                          submitterName: submitterName), into: &page.rows) {
                        continue
                    }
                    if general == nil { general = try feed.rows(picked.stored) }
                    guard let rows = general, ordinal < rows.count else {
                        throw ApiError(.internalError, "A stored response's answers could not be read.")
                    }
                    CanonicalJSON.encode(rows[ordinal].row, into: &page.rows)
                }
            }
            // The page's last row: the next page starts after it.
            let last = responses.last.flatMap { p in p.ordinals.last.map { SkipToken(keys: [], responseId: p.stored.responseId, ordinal: $0, delivered: 0) } }
            feed.finish(&page, last: last, more: more, delivered: delivered)
            return page
        }
    }

    /// The responses of a plain read's page, read from the snapshot (the rows are written by
    /// `write`, which needs no snapshot); nil when the query asks for more than a plain read.
    public func plainPage(size: Int) throws -> PlainPage? {
        guard query.filter == nil, query.orderBy.isEmpty, query.select == nil, query.expand == .none,
              ODataRowWriter(model: model, table: table, wkt: query.wkt, naming: naming) != nil else { return nil }
        let (delivered, skip, limit) = window(size: size)
        var plain = PlainPage(feed: self)
        plain.delivered = delivered
        if query.count { plain.count = try count() }
        guard limit > 0 else { return plain }
        let token = query.skipToken
        let cursor = try source.responses(from: token?.responseId)
        var skipLeft = skip
        while let stored = try cursor.next() {
            let places = self.places(stored)
            let rowCount = try places?.count ?? rows(stored).count
            var first: Int?, end = 0
            for ordinal in 0..<rowCount {
                if let token, stored.responseId == token.responseId, ordinal <= token.ordinal { continue }
                if skipLeft > 0 { skipLeft -= 1; continue }
                if plain.rowCount == limit { plain.more = true; break }
                if first == nil { first = ordinal }
                end = ordinal + 1
                plain.rowCount += 1
            }
            if let first { plain.responses.append(Picked(stored, places, first..<end)) }
            if plain.more { break }
        }
        return plain
    }

    /// Where this table's rows of one response are in its stored answers, in the order `rows`
    /// gives them: each row's `__id`, its parent row's, and the bytes of its answers object. nil
    /// when the answers cannot be read here.
    func places(_ stored: ExportedResponse) -> [Place]? {
        var text = stored.answers
        let whole = 0..<text.utf8.count
        if table == 0 { return [Place(id: stored.clientSubmissionId, parentId: "", range: whole)] }
        var chain: [Int] = []
        var t = table
        while let p = model.tables[t].parent { chain.insert(t, at: 0); t = p }
        return text.withUTF8 { json -> [Place]? in
            // (instance key, `__id`, answers) of each enclosing level, outermost first.
            var level: [(key: String, id: String, range: Range<Int>)] = [(stored.responseId, stored.clientSubmissionId, whole)]
            var parents: [String] = []
            for c in chain {
                guard let repeatId = model.tables[c].repeatId else { return nil }
                let name = Array(repeatId.utf8)
                var next: [(key: String, id: String, range: Range<Int>)] = []
                parents.removeAll(keepingCapacity: true)
                for parent in level {
                    let object = UnsafeBufferPointer(rebasing: json[parent.range])
                    // An instance that is not an object holds no repeats.
                    guard object.first == UInt8(ascii: "{") else { continue }
                    guard let found = StoredAnswers.instances(of: name, in: object) else { return nil }
                    for (n, r) in found.enumerated() {
                        let key = RepeatTable.key(parent: parent.key, repeatId: repeatId, number: n + 1)
                        next.append((key, key, (r.lowerBound + parent.range.lowerBound)..<(r.upperBound + parent.range.lowerBound)))
                        parents.append(parent.id)
                    }
                }
                level = next
            }
            return zip(level, parents).map { Place(id: $0.id, parentId: $1, range: $0.range) }
        }
    }

}
