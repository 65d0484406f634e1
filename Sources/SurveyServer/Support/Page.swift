import SurveyDomain
import SurveyHTTP

/// Lists: `limit` (default 50, at most 500) and the opaque `after` cursor.
struct Page {
    let limit: Int
    let after: String?

    init(_ request: HTTPRequest) throws(ApiError) {
        if let l = request.query["limit"] {
            guard let n = Int(l), n >= 1, n <= 500 else {
                throw ApiError(.validationFailed, "`limit` must be an integer from 1 to 500.", errors: [FieldError(path: "limit", message: "1...500")])
            }
            limit = n
        } else { limit = 50 }
        after = request.query["after"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `{items, nextCursor}`: the cursor is the last item's id when the page is full.
    func render<T>(_ rows: [T], id: (T) -> String, item: (T) -> JSONValue) -> JSONValue {
        ["items": .array(rows.map(item)), "nextCursor": rows.count == limit ? rows.last.map { .string(id($0)) } ?? .null : .null]
    }
}
