import SurveyDomain

/// A request body consumed as it streams in (uploads): never held whole in memory.
public protocol BodySink: AnyObject, Sendable {
    /// The next bytes. Throwing an `ApiError` refuses the request; the rest of the body is discarded.
    func write(_ bytes: UnsafeRawBufferPointer) throws
    /// The request ended without being answered by the handler (client disconnect, refusal,
    /// shutdown): drop whatever was written. Called at most once, and harmless after success.
    func abort()
}

/// What is known of a request before its body: enough to authorize and validate an upload.
public struct RequestHead: Sendable {
    public let method: String
    public let path: String
    /// The route pattern that matched, e.g. `/v1/orgs/{orgId}/surveys`.
    public let route: String
    public let pathParameters: [String: String]
    public let query: [String: String]
    /// Header names are lowercased.
    public let headers: [String: String]

    public init(method: String, path: String, route: String, pathParameters: [String: String],
                query: [String: String], headers: [String: String]) {
        self.method = method; self.path = path; self.route = route; self.pathParameters = pathParameters
        self.query = query; self.headers = headers
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
    public func parameter(_ name: String) -> String { pathParameters[name] ?? "" }

    /// The bearer token, if an Authorization header carries one.
    public var bearerToken: String? {
        guard let h = header("authorization") else { return nil }
        let parts = h.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: " \t")
    }
}
