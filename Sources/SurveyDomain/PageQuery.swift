/// A list's query parameters: `limit` (default 50, at most 500) and the opaque `after` cursor
/// (an empty one counts as absent).
public struct PageQuery: Sendable, Equatable {
    public let limit: Int
    public let after: String?

    public static let defaultLimit = 50
    public static let maxLimit = 500

    public init(_ query: [String: String]) throws(ApiError) {
        if let l = query["limit"] {
            guard let n = Int(l), n >= 1, n <= Self.maxLimit else {
                throw ApiError(.validationFailed, "`limit` must be an integer from 1 to 500.", errors: [FieldError(path: "limit", message: "1...500")])
            }
            limit = n
        } else { limit = Self.defaultLimit }
        after = query["after"].flatMap { $0.isEmpty ? nil : $0 }
    }
}
