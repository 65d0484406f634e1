import SurveyDomain
import SurveyHTTP

/// Lists: `limit` and the opaque `after` cursor, read by `PageQuery`.
struct Page {
    let limit: Int
    let after: String?

    init(_ request: HTTPRequest) throws(ApiError) {
        let query = try PageQuery(request.query)
        limit = query.limit
        after = query.after
    }

    /// `{items, nextCursor}`: the cursor is the last item's id when the page is full.
    func render<T>(_ rows: [T], id: (T) -> String, item: (T) -> JSONValue) -> JSONValue {
        ["items": .array(rows.map(item)), "nextCursor": rows.count == limit ? rows.last.map { .string(id($0)) } ?? .null : .null]
    }
}
