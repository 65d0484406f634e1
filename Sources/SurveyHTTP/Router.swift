import SurveyDomain

/// Maps (method, path) to a handler. Patterns are literal segments and `{name}` parameters.
public struct Router: Sendable {
    public typealias Handler = @Sendable (HTTPRequest) throws -> HTTPResponse
    /// Opens the sink of a streaming route once the headers are in; throwing refuses the request
    /// before its body is read.
    public typealias SinkOpener = @Sendable (RequestHead) throws -> any BodySink

    /// Where a handler runs. libmicrohttpd polls every connection from a few threads, so a
    /// handler that may wait — on the writer's commit, an fsync, another request's idempotency
    /// key — must not run there.
    public enum Execution: Sendable {
        /// On the polling thread: reads, and handlers that never wait (a handler that has a write
        /// to make answers `HTTPResponse.later` and is woken by the writer).
        case inline
        /// On a blocking thread, the connection parked until the handler returns.
        case blocking
    }

    /// A pattern segment, as bytes: every route is tried on every request, and comparing bytes
    /// avoids `Character` (grapheme) work on each segment.
    enum Segment: Sendable {
        case literal([UInt8])
        /// `{name}`, or `{name}.svc`: the value is the segment without its literal `suffix`
        /// (which is not empty then, and counts as a literal match: it beats a bare `{name}`).
        case parameter(String, suffix: [UInt8] = [])
    }

    struct Route: Sendable {
        let method: String
        let pattern: String
        /// Who may call it, as the door declared it (the door checks it; the router lists it).
        let access: String
        let segments: [Segment]
        let bodyLimit: Int?
        let opener: SinkOpener?
        /// A form route: the body is decoded as it streams in, within these limits.
        let form: FormDecoder.Limits?
        /// The body is a form only when it is `multipart/form-data`; any other is buffered up to `bodyLimit`.
        let formOnlyIfMultipart: Bool
        /// Checked once the headers are in, before a byte of a form's body is taken: a caller the
        /// route would refuse sends no file to disk.
        var admitsFirst: (@Sendable (RequestHead) throws -> Void)? = nil
        let execution: Execution
        /// The handler reads `RequestHead.clientAddress` (asked of libmicrohttpd only then).
        let needsClientAddress: Bool
        let handler: Handler
    }

    enum Match {
        case found(Route, [String: String])
        case methodNotAllowed(allow: [String])
        case notFound
    }

    private var routes: [Route] = []
    public init() {}

    /// How the server's own refusals (no such route, method not allowed, body too large) read
    /// under a path prefix — the console's are pages, not problem+json.
    public typealias RefusalPage = @Sendable (_ error: ApiError, _ status: Int, _ path: String) -> HTTPResponse
    private var refusalPages: [(prefix: String, page: RefusalPage)] = []

    public mutating func refusals(under prefix: String, _ page: @escaping RefusalPage) {
        refusalPages.append((prefix, page))
    }

    /// The server's refusal of a request for `path`: a page where one is declared, else problem+json.
    func refusal(_ error: ApiError, status: Int? = nil, path: String, headers: [(String, String)] = []) -> HTTPResponse {
        guard let page = refusalPages.first(where: { path == $0.prefix || path.hasPrefix($0.prefix + "/") })?.page else {
            return .problem(error, status: status, headers: headers)
        }
        var r = page(error, status ?? error.code.httpStatus, path)
        r.headers += headers
        r.errorCode = error.code.rawValue
        return r
    }

    /// `bodyLimit` overrides the server's JSON body limit for this route. By default GET and
    /// HEAD handlers (reads) run inline and every other method's on a blocking thread.
    /// `needsClientAddress`: the handler reads the peer's address (most do not, and asking for it
    /// costs every request). `form`: the body is a form (urlencoded or multipart), decoded into
    /// `request.form` within these limits; any other body is refused.
    /// Every route declares who may call it (`access`, the door's own declaration): there is no
    /// route without one. The router keeps it as a label; the door checks it — before `handler`
    /// runs, or inside the operation the handler calls (`Access`).
    /// `admit` (a form route) runs once the headers are in, before the form's body is read.
    public mutating func add(_ method: String, _ pattern: String, access: some CustomStringConvertible & Sendable, bodyLimit: Int? = nil,
                             form: FormDecoder.Limits? = nil, runs execution: Execution? = nil, needsClientAddress: Bool = false,
                             admit: (@Sendable (RequestHead) throws -> Void)? = nil, _ handler: @escaping Handler) {
        routes.append(Route(method: method, pattern: pattern, access: access.description, segments: Self.patternSegments(pattern), bodyLimit: form?.maxBytes ?? bodyLimit,
                            opener: nil, form: form, formOnlyIfMultipart: false, admitsFirst: admit, execution: execution ?? Self.defaultExecution(method),
                            needsClientAddress: needsClientAddress, handler: handler))
    }

    /// A route whose body is either buffered (up to `bodyLimit`) or, when it is
    /// `multipart/form-data`, a form decoded as it streams in (`request.form`) within `multipart`.
    /// `admit` runs once the headers are in, before a form's body is read (a refusal is answered at once).
    public mutating func add(_ method: String, _ pattern: String, access: some CustomStringConvertible & Sendable, bodyLimit: Int?,
                             multipart: FormDecoder.Limits, runs execution: Execution? = nil, admit: (@Sendable (RequestHead) throws -> Void)? = nil,
                             _ handler: @escaping Handler) {
        routes.append(Route(method: method, pattern: pattern, access: access.description, segments: Self.patternSegments(pattern), bodyLimit: bodyLimit,
                            opener: nil, form: multipart, formOnlyIfMultipart: true, admitsFirst: admit, execution: execution ?? Self.defaultExecution(method),
                            needsClientAddress: false, handler: handler))
    }

    /// Whether a Content-Type is `multipart/form-data` (parameters ignored).
    public static func isMultipartForm(_ contentType: String?) -> Bool {
        guard let type = contentType?.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first else { return false }
        let trimmed = type.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
        return String(trimmed).lowercased() == "multipart/form-data"
    }

    /// A streaming route: the body goes to the sink `opener` returns (on the polling thread: it
    /// must not wait), then `handler` runs with `request.sink` set, on a blocking thread.
    public mutating func add(_ method: String, _ pattern: String, access: some CustomStringConvertible & Sendable,
                             streamingTo opener: @escaping SinkOpener, _ handler: @escaping Handler) {
        routes.append(Route(method: method, pattern: pattern, access: access.description, segments: Self.patternSegments(pattern), bodyLimit: nil,
                            opener: opener, form: nil, formOnlyIfMultipart: false, execution: .blocking, needsClientAddress: false, handler: handler))
    }

    /// Every route with its declared access, in registration order: what `DeclaredAccessTests`
    /// sends a request to, checking each answers what its declaration promises.
    public var declaredRoutes: [(method: String, pattern: String, access: String)] {
        routes.map { ($0.method, $0.pattern, $0.access) }
    }

    static func defaultExecution(_ method: String) -> Execution { method == "GET" || method == "HEAD" ? .inline : .blocking }

    /// Among the patterns that fit the path, the most specific wins (literal segments beat
    /// `{parameters}`, so `/uploads/resumable` is never read as an upload id); then the method
    /// decides between the handler and 405.
    func match(method: String, path: String) -> Match {
        var path = path
        return path.withUTF8 { bytes in
            let parts = Array(bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst())
            var best: [Route] = []
            var bestLiterals = -1
            for route in routes {
                guard let literals = Self.literalsMatched(route.segments, parts) else { continue }
                if literals > bestLiterals { best = []; bestLiterals = literals }
                if literals == bestLiterals { best.append(route) }
            }
            if let hit = best.first(where: { $0.method == method }) ?? best.first(where: { method == "HEAD" && $0.method == "GET" }) {
                return .found(hit, Self.parameters(hit.segments, parts))
            }
            return best.isEmpty ? .notFound : .methodNotAllowed(allow: best.map(\.method))
        }
    }

    /// Splits on the byte `/`, never on Characters: a combining mark after a slash (`/\u{1032}`)
    /// forms one grapheme with it, and a Character split would then not see the slash at all.
    static func patternSegments(_ pattern: String) -> [Segment] {
        // Split as paths are (empty segments kept), so `/console/` matches its trailing slash.
        pattern.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst().map { bytes in
            if bytes.first == UInt8(ascii: "{") && bytes.last == UInt8(ascii: "}") {
                return .parameter(String(decoding: bytes.dropFirst().dropLast(), as: UTF8.self))
            }
            if bytes.first == UInt8(ascii: "{"), let close = bytes.firstIndex(of: UInt8(ascii: "}")), close != bytes.index(before: bytes.endIndex) {
                return .parameter(String(decoding: bytes[bytes.index(after: bytes.startIndex)..<close], as: UTF8.self),
                                  suffix: Array(bytes[bytes.index(after: close)...]))
            }
            return .literal(Array(bytes))
        }
    }

    /// How many literal segments of `pattern` the path matches, or nil when it does not fit
    /// (checked without allocating).
    private static func literalsMatched(_ pattern: [Segment], _ parts: [Slice<UnsafeBufferPointer<UInt8>>]) -> Int? {
        guard pattern.count == parts.count else { return nil }
        var literals = 0
        for (p, v) in zip(pattern, parts) {
            switch p {
            case .parameter(_, let suffix) where suffix.isEmpty:
                guard !v.isEmpty else { return nil }
            case .parameter(_, let suffix):
                guard v.count > suffix.count, v.suffix(suffix.count).elementsEqual(suffix) else { return nil }
                literals += 1
            case .literal(let bytes):
                guard bytes.elementsEqual(v) else { return nil }
                literals += 1
            }
        }
        return literals
    }

    private static func parameters(_ pattern: [Segment], _ parts: [Slice<UnsafeBufferPointer<UInt8>>]) -> [String: String] {
        var params: [String: String] = [:]
        for (p, v) in zip(pattern, parts) {
            if case .parameter(let name, let suffix) = p { params[name] = String(decoding: v.dropLast(suffix.count), as: UTF8.self) }
        }
        return params
    }
}
