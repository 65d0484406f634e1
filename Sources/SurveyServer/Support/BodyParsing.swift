import SurveyDomain
import SurveyHTTP

/// Reading request envelopes: anything that is not the JSON shape a route expects is 1031.
struct JSONBody {
    let fields: [String: JSONValue]
    let value: JSONValue

    init(_ request: HTTPRequest) throws(ApiError) {
        guard !request.body.isEmpty else { throw ApiError.malformed("The request needs a JSON body.") }
        let parsed: JSONValue
        do { parsed = try JSONParser.parse(request.body) } catch {
            throw ApiError.malformed("The body is not valid JSON: \(error.message) at byte \(error.offset).")
        }
        guard case .object(let o) = parsed else { throw ApiError.malformed("The body must be a JSON object.") }
        fields = o
        value = parsed
    }

    func string(_ key: String) throws(ApiError) -> String {
        guard let v = fields[key] else { throw ApiError.malformed("`\(key)` is required.") }
        guard case .string(let s) = v else { throw ApiError.malformed("`\(key)` must be a string.") }
        return s
    }

    func optionalString(_ key: String) throws(ApiError) -> String? {
        guard let v = fields[key], !v.isNull else { return nil }
        guard case .string(let s) = v else { throw ApiError.malformed("`\(key)` must be a string.") }
        return s
    }

    func bool(_ key: String, default d: Bool? = nil) throws(ApiError) -> Bool {
        guard let v = fields[key], !v.isNull else {
            if let d { return d }
            throw ApiError.malformed("`\(key)` is required.")
        }
        guard case .bool(let b) = v else { throw ApiError.malformed("`\(key)` must be true or false.") }
        return b
    }

    func int(_ key: String) throws(ApiError) -> Int {
        guard let v = fields[key] else { throw ApiError.malformed("`\(key)` is required.") }
        guard let i = v.intValue else { throw ApiError.malformed("`\(key)` must be an integer.") }
        return i
    }

    func stringArray(_ key: String) throws(ApiError) -> [String] {
        guard let v = fields[key] else { throw ApiError.malformed("`\(key)` is required.") }
        guard case .array(let a) = v else { throw ApiError.malformed("`\(key)` must be an array of strings.") }
        var out: [String] = []
        for e in a {
            guard case .string(let s) = e else { throw ApiError.malformed("`\(key)` must be an array of strings.") }
            out.append(s)
        }
        return out
    }

    func timestamp(_ key: String) throws(ApiError) -> Int64 {
        let s = try string(key)
        guard let t = Timestamp.parse(s) else {
            throw ApiError(.validationFailed, "`\(key)` must be an RFC 3339 date-time.", errors: [FieldError(path: key, message: "not an RFC 3339 date-time")])
        }
        return t
    }

    func optionalTimestamp(_ key: String) throws(ApiError) -> Int64? {
        guard let v = fields[key], !v.isNull else { return nil }
        return try timestamp(key)
    }
}

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
