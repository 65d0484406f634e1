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
    public let route: String
    public let pathParameters: [String: String]
    public let query: [String: String]
    public let headers: [String: String]
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
    public func parameter(_ name: String) -> String { pathParameters[name] ?? "" }
}
