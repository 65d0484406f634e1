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
    /// The client's address: the peer's, or behind a trusted proxy the one it forwarded ("" when
    /// unknown, as for in-process requests).
    public let clientAddress: String
    /// The peer is a trusted reverse proxy (`HTTPServer.Configuration.trustedProxies`).
    public let throughTrustedProxy: Bool

    public init(method: String, path: String, route: String, pathParameters: [String: String],
                query: [String: String], headers: [String: String], clientAddress: String = "", throughTrustedProxy: Bool = false) {
        self.method = method; self.path = path; self.route = route; self.pathParameters = pathParameters
        self.query = query; self.headers = headers; self.clientAddress = clientAddress; self.throughTrustedProxy = throughTrustedProxy
    }

    /// The client used https: a trusted proxy said so with `X-Forwarded-Proto: https` (surveyd
    /// itself speaks plain HTTP). From anyone else the header is ignored.
    public var isHTTPS: Bool { throughTrustedProxy && header("x-forwarded-proto") == "https" }

    /// Names are lowercased only when they hold an upper-case letter: callers pass them in lower
    /// case, and lowercasing every name on every look-up showed up in a replay's profile.
    public func header(_ name: String) -> String? {
        name.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) ? headers[name.lowercased()] : headers[name]
    }
    public func parameter(_ name: String) -> String { pathParameters[name] ?? "" }

    /// The bearer token, if an Authorization header carries one: the scheme `Bearer` in any case,
    /// one or more spaces, the token without the spaces and tabs around it.
    public var bearerToken: String? {
        guard let h = header("authorization") else { return nil }
        let u = h.utf8
        var i = u.startIndex
        while i < u.endIndex, u[i] == 0x20 { i = u.index(after: i) }
        let schemeStart = i
        while i < u.endIndex, u[i] != 0x20 { i = u.index(after: i) }
        guard i < u.endIndex, u[schemeStart..<i].elementsEqual("bearer".utf8, by: { ($0 | 0x20) == $1 }) else { return nil }
        let token = h[i...].trimmingSpacesAndTabs
        return token.isEmpty ? nil : token
    }
}
