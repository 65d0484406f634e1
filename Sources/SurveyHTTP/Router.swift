import SurveyDomain

/// Maps (method, path) to a handler. Patterns are literal segments and `{name}` parameters.
public struct Router: Sendable {
    public typealias Handler = @Sendable (HTTPRequest) throws -> HTTPResponse
    /// Opens the sink of a streaming route once the headers are in; throwing refuses the request
    /// before its body is read.
    public typealias SinkOpener = @Sendable (RequestHead) throws -> any BodySink

    struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Substring]
        let bodyLimit: Int?
        let opener: SinkOpener?
        let handler: Handler
    }

    enum Match {
        case found(Route, [String: String])
        case methodNotAllowed(allow: [String])
        case notFound
    }

    private var routes: [Route] = []
    public init() {}

    /// `bodyLimit` overrides the server's JSON body limit for this route.
    public mutating func add(_ method: String, _ pattern: String, bodyLimit: Int? = nil, _ handler: @escaping Handler) {
        routes.append(Route(method: method, pattern: pattern, segments: Self.segments(pattern).filter { !$0.isEmpty }, bodyLimit: bodyLimit,
                            opener: nil, handler: handler))
    }

    /// A streaming route: the body goes to the sink `opener` returns, then `handler` runs with
    /// `request.sink` set.
    public mutating func add(_ method: String, _ pattern: String, streamingTo opener: @escaping SinkOpener, _ handler: @escaping Handler) {
        routes.append(Route(method: method, pattern: pattern, segments: Self.segments(pattern).filter { !$0.isEmpty }, bodyLimit: nil,
                            opener: opener, handler: handler))
    }

    /// Among the patterns that fit the path, the most specific wins (literal segments beat
    /// `{parameters}`, so `/uploads/resumable` is never read as an upload id); then the method
    /// decides between the handler and 405.
    func match(method: String, path: String) -> Match {
        let parts = Array(Self.segments(path).dropFirst())
        var best: [(Route, [String: String])] = []
        var bestLiterals = -1
        for route in routes {
            guard let params = Self.bind(route.segments, parts) else { continue }
            let literals = route.segments.count - params.count
            if literals > bestLiterals { best = []; bestLiterals = literals }
            if literals == bestLiterals { best.append((route, params)) }
        }
        if let hit = best.first(where: { $0.0.method == method }) ?? best.first(where: { method == "HEAD" && $0.0.method == "GET" }) {
            return .found(hit.0, hit.1)
        }
        return best.isEmpty ? .notFound : .methodNotAllowed(allow: best.map(\.0.method))
    }

    /// Splits on the byte `/`, never on Characters: a combining mark after a slash (`/\u{1032}`)
    /// forms one grapheme with it, and a Character split would then not see the slash at all.
    static func segments(_ path: String) -> [Substring] {
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map { Substring($0) }
    }

    private static func bind(_ pattern: [Substring], _ parts: [Substring]) -> [String: String]? {
        guard pattern.count == parts.count else { return nil }
        var params: [String: String] = [:]
        for (p, v) in zip(pattern, parts) {
            if p.first == "{" && p.last == "}" {
                guard !v.isEmpty else { return nil }
                params[String(p.dropFirst().dropLast())] = String(v)
            } else if p != v {
                return nil
            }
        }
        return params
    }
}
