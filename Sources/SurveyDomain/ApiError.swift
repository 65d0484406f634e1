/// A refusal with its contract error code. Thrown anywhere below the routes; rendered once as
/// problem+json by the HTTP layer.
public struct ApiError: Error, Sendable {
    public let code: ErrorCode
    public let detail: String
    public var errors: [FieldError]
    /// Extra members placed in the problem body (e.g. the current state for 1021).
    public var extra: [String: JSONValue]
    public var retryAfterSeconds: Int?
    /// Where a protocol demands another status than the code's own (tus's 409, 410, 412, 460).
    public var statusOverride: Int?
    /// Extra response headers (tus's Upload-Offset, Tus-Resumable).
    public var headers: [(String, String)] = []

    public init(_ code: ErrorCode, _ detail: String? = nil, errors: [FieldError] = [],
                extra: [String: JSONValue] = [:], retryAfterSeconds: Int? = nil) {
        self.code = code
        self.detail = detail ?? code.title
        self.errors = errors
        self.extra = extra
        self.retryAfterSeconds = retryAfterSeconds ?? (code == .storageUnavailable ? 5 : nil)
    }

    public func with(status: Int? = nil, headers: [(String, String)] = []) -> ApiError {
        var e = self
        if let status { e.statusOverride = status }
        e.headers += headers
        return e
    }

    public static func notFound() -> ApiError { ApiError(.notFound, "No such resource.") }
    public static func malformed(_ detail: String) -> ApiError { ApiError(.malformedRequest, detail) }

    /// The RFC 9457 body.
    public var problem: JSONValue {
        var body: [String: JSONValue] = [
            "type": .string("https://surveyd.dev/errors/\(code.rawValue)"),
            "title": .string(code.title),
            "status": .number(Double(statusOverride ?? code.httpStatus)),
            "detail": .string(detail),
            "errorCode": .number(Double(code.rawValue)),
            "errorName": .string(code.name),
            "retryable": .bool(code.retryable),
        ]
        if !errors.isEmpty {
            body["errors"] = .array(errors.map { .object(["path": .string($0.path), "message": .string($0.message)]) })
        }
        for (k, v) in extra { body[k] = v }
        return .object(body)
    }
}
