/// A request as handlers see it: header names lowercased, path parameters filled in by the
/// router, and the body as sent (JSON routes are buffered up to their limit).
public struct HTTPRequest: Sendable {
    public let method: String
    public let path: String
    /// The route pattern that matched, e.g. `/v1/orgs/{orgId}/surveys`.
    public let route: String
    public let pathParameters: [String: String]
    public let query: [String: String]
    public let headers: [String: String]
    public let body: [UInt8]
    /// For streaming routes: the sink the body was written to.
    public let sink: (any BodySink)?

    public init(method: String, path: String, route: String, pathParameters: [String: String],
                query: [String: String], headers: [String: String], body: [UInt8], sink: (any BodySink)? = nil) {
        self.method = method; self.path = path; self.route = route; self.pathParameters = pathParameters
        self.query = query; self.headers = headers; self.body = body; self.sink = sink
    }

    public var head: RequestHead {
        RequestHead(method: method, path: path, route: route, pathParameters: pathParameters, query: query, headers: headers)
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
    public func parameter(_ name: String) -> String { pathParameters[name] ?? "" }

    /// The bearer token, if an Authorization header carries one.
    public var bearerToken: String? { head.bearerToken }
}

extension RequestHead {
    /// The bearer token, if an Authorization header carries one.
    public var bearerToken: String? {
        guard let h = header("authorization") else { return nil }
        let parts = h.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: " \t")
    }
}

extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
