/// A refusal with its contract error code: the code, a sentence, the fields at fault and extra
/// members. Thrown anywhere below the doors, and rendered by each door its own way (problem+json
/// by the API, a page by the console, with tus's headers by tus); nothing in it is HTTP.
public struct ApiError: Error, Sendable {
    public let code: ErrorCode
    public let detail: String
    public var errors: [FieldError]
    /// Extra members placed in the problem body (e.g. the current state for 1021).
    public var extra: [String: JSONValue]
    /// How long to wait before trying again, where the refusal knows (each door says it its way).
    public var retryAfterSeconds: Int?

    public init(_ code: ErrorCode, _ detail: String? = nil, errors: [FieldError] = [],
                extra: [String: JSONValue] = [:], retryAfterSeconds: Int? = nil) {
        self.code = code
        self.detail = detail ?? code.title
        self.errors = errors
        self.extra = extra
        self.retryAfterSeconds = retryAfterSeconds ?? (code == .storageUnavailable ? 5 : nil)
    }

    public static func notFound() -> ApiError { ApiError(.notFound, "No such resource.") }
    public static func malformed(_ detail: String) -> ApiError { ApiError(.malformedRequest, detail) }
}
