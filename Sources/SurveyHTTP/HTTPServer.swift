// Under 400 lines on purpose: one request's whole life (first callback, body, park and
// resume, answer, completion, stop) reads top to bottom here; its state is `Exchange`, the C
// entry points are in `MHDCallbacks.swift`.

import CMicroHTTPD
import Foundation
import Synchronization
import SurveyDomain

/// The HTTP engine over libmicrohttpd, in one of two models (`Configuration.pollingThreads`):
/// - N > 0, the default: N threads polling every connection with poll(). Reads are answered on
///   them; a handler that may wait runs on a blocking thread, and a write queued on the writer
///   parks its connection (suspend) until the group commit wakes it (resume), so waiting clients
///   hold no thread. libmicrohttpd 0.9.75 reads a resumed connection before answering it: for a
///   client that half-closed after sending it sees the FIN and closes, and the completion
///   callback then sends the ready answer itself (`ClosingAnswer`).
/// - 0: a thread per connection. Every handler runs on its connection's thread and may wait
///   there; ~15 % more CPU per submission (`Docs/performance.md`).
public final class HTTPServer: @unchecked Sendable {
    // @unchecked: `daemon` is written by start()/stop() only, before and after serving; the
    // router and configuration are immutable; counters are atomics.
    public struct Configuration: Sendable {
        public var host: String = "127.0.0.1"
        public var port: UInt16 = 8080
        /// JSON bodies larger than this are refused with 413/1013 without being read.
        public var maxBodyBytes: Int = 1 << 20
        public var connectionLimit: UInt32 = 2048
        /// One address may hold at most this many connections, so a slow client holding many
        /// (slowloris) cannot take them all from everyone else.
        public var perIPConnectionLimit: UInt32 = 512
        public var idleTimeoutSeconds: UInt32 = 60
        public var threadStackBytes: Int = 512 << 10
        /// Peers whose `X-Forwarded-For` (its last address: the one the proxy saw) and
        /// `X-Forwarded-Proto` are believed. Anyone else's are ignored: a client could send them.
        public var trustedProxies: Set<String> = []
        /// Where a form's file parts are written as they arrive (unlinked at once).
        public var temporaryDirectory: String = NSTemporaryDirectory()
        /// N > 0: N polling threads with suspend/resume (the default: one per core, at least 2).
        /// 0: a thread per connection (see the type's comment).
        public var pollingThreads: UInt32 = defaultPollingThreads
        public static let defaultPollingThreads = UInt32(min(16, max(2, ProcessInfo.processInfo.activeProcessorCount)))
        public init(host: String = "127.0.0.1", port: UInt16 = 8080) { self.host = host; self.port = port }
    }

    public let configuration: Configuration
    let router: Router
    let errorMapper: @Sendable (any Error) -> ApiError
    let log: RequestLog
    /// Told of every answered request (route pattern, status, seconds), e.g. for metrics.
    public var observer: (@Sendable (String, Int, Double) -> Void)?
    private var daemon: OpaquePointer?
    /// Requests begun and not yet completed. An atomic, not a Mutex: it is touched twice per
    /// request by every connection thread (a contended Mutex cost up to 17 % of a read's CPU).
    private let inFlight = Atomic<Int>(0)
    /// Set first thing in `stop`: a request that begins after it is refused without running, so
    /// every request that may suspend was counted in `inFlight` before `stop` waits for it
    /// (libmicrohttpd aborts the process if it is stopped while a connection is suspended).
    private let stopping = Atomic<Bool>(false)
    /// Requests answered since start (read by housekeeping to notice an idle server).
    public let answered = Atomic<Int>(0)
    private let blocking: BlockingPool

    public init(configuration: Configuration, router: Router, log: RequestLog = RequestLog(),
                errorMapper: @escaping @Sendable (any Error) -> ApiError = { ($0 as? ApiError) ?? ApiError(.internalError) }) {
        self.configuration = configuration
        self.router = router
        self.errorMapper = errorMapper
        self.log = log
        self.blocking = BlockingPool(stackBytes: configuration.threadStackBytes)
    }

    /// The bound port (useful with port 0).
    public private(set) var port: UInt16 = 0

    public func start() throws {
        Self.raiseDescriptorLimit(to: rlim_t(configuration.connectionLimit) + 1024)
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard let d = cmhd_start(configuration.host, configuration.port, configuration.pollingThreads, configuration.connectionLimit,
                                 configuration.perIPConnectionLimit, configuration.idleTimeoutSeconds, configuration.threadStackBytes,
                                 accessHandler, me, completedHandler, me) else {
            throw ApiError(.internalError, "cannot listen on \(configuration.host):\(configuration.port) (address in use or invalid)")
        }
        daemon = d
        port = cmhd_bound_port(d)
    }

    /// Graceful stop: no new connections; requests already begun (their body still arriving, their
    /// handler running, their write waiting for its commit) are answered, up to `grace`; then
    /// every connection is closed.
    public func stop(grace: Duration = .seconds(10)) {
        guard let d = daemon else { return }
        // Before counting: a request whose first callback comes after the count below sees
        // `stopping` and is refused (503) without running.
        stopping.store(true, ordering: .sequentiallyConsistent)
        let fd = MHD_quiesce_daemon(d)
        if fd >= 0 { close(fd) }
        let deadline = ContinuousClock.now + grace
        while inFlight.load(ordering: .sequentiallyConsistent) > 0 && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        MHD_stop_daemon(d)
        daemon = nil
        log.flush()
    }

    /// Answers a request in process, without a socket (the demo seeding and tests use it):
    /// routed, its body received and the handler run through the same states as on the wire, so
    /// the status, headers and body are the ones a client would get.
    public var declaredRoutes: [(method: String, pattern: String, access: String)] { router.declaredRoutes }

    public func respond(method: String, path: String, headers: [String: String] = [:], body: [UInt8] = []) -> HTTPResponse {
        let headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        func head(_ route: Router.Route?, _ params: [String: String]) -> RequestHead {
            RequestHead(method: method, path: path, route: route?.pattern ?? "", pathParameters: params, query: [:], headers: headers)
        }
        var route: Router.Route?, params: [String: String] = [:]
        var state: ExchangeState
        switch routed(method: method, path: path, headers: headers, connection: nil, head: head) {
        case .answerNow(let response): return response
        case .receive(let r, let p, let s): (route, params, state) = (r, p, s)
        }
        if !body.isEmpty {
            let action = body.withUnsafeBytes { state.receive($0, refuse: { refusal($0, path) }) }
            if action == .cutOff { return refusal(ApiError(.payloadTooLarge, "The body is too large."), path) }
        }
        switch state.bodyEnded(head(route, params), refuse: { refusal($0, path) }) {
        case .answer(let response): return response
        case .finish(let build): return answer(build)
        case .wait: return .problem(ApiError(.internalError))
        case .run(let request):
            guard let route else { return .problem(ApiError(.internalError)) }
            let response = answer(Self.finished(route.handler, request))
            _ = state.completed()
            return response
        }
    }

    /// Every connection holds a descriptor, and the soft limit is often 1,024: it is raised toward
    /// the hard limit so that the connection limit, not the descriptor limit, decides (`wanted`
    /// leaves room for the database, blobs and uploads in flight).
    static func raiseDescriptorLimit(to wanted: rlim_t) {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < wanted else { return }
        limit.rlim_cur = min(wanted, limit.rlim_max)
        _ = setrlimit(resource, &limit)
    }

    /// Gives heap freed after a burst of connection threads back to the system (glibc keeps it
    /// in per-thread arenas otherwise).
    public static func releaseFreedMemory() { _ = malloc_trim(0) }

    // MARK: - libmicrohttpd callbacks

    func handle(connection: OpaquePointer, url: String, method: String,
                            uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
                            state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let raw = state.pointee else {
            // First call: headers are in, the body is not. Route now so a request that will be
            // refused anyway (oversized, unauthorized upload) is answered before its body is read.
            let ex = Exchange(method: method, path: url, connection: connection, trustedProxies: configuration.trustedProxies)
            state.pointee = Unmanaged.passRetained(ex).toOpaque()
            inFlight.add(1, ordering: .sequentiallyConsistent)
            if let refusal = begin(ex) { queue(ex, refusal) }
            return .YES
        }
        let ex = Unmanaged<Exchange>.fromOpaque(raw).takeUnretainedValue()
        let path = ex.path
        if uploadSize.pointee > 0 {
            let chunk = UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee)
            uploadSize.pointee = 0
            switch ex.state.receive(chunk, refuse: { refusal($0, path) }) {
            case .consumed: return .YES
            // libmicrohttpd cannot answer a chunked body before its end, so an endless one is cut off.
            case .cutOff: return .NO
            }
        }
        switch ex.state.bodyEnded(ex.head, refuse: { refusal($0, path) }) {
        case .wait:
            return .YES
        case .answer(let response):
            queue(ex, response)
        case .finish(let build):
            queue(ex, answer(build))
        case .run(let request):
            guard let route = ex.route else { return .NO }
            run(route, request, ex)
        }
        return .YES
    }

    /// The first call's checks and routing: the answer to queue at once, or nil with the
    /// exchange's state set for its body.
    private func begin(_ ex: Exchange) -> HTTPResponse? {
        if stopping.load(ordering: .sequentiallyConsistent) {
            // Begun after `stop` counted the requests it waits for: it is not run at all, so
            // nothing is written that might never be answered.
            return .problem(ApiError(.storageUnavailable, "The server is shutting down; nothing was written. Retry the request."),
                            headers: [("Connection", "close")])
        }
        if ex.conflictingFraming {
            // Two Content-Length values (or one beside Transfer-Encoding) make the body's end
            // ambiguous: answering and closing leaves nothing to smuggle (RFC 9112 §6.3).
            return .problem(ApiError.malformed("The request's body framing is ambiguous (conflicting Content-Length / Transfer-Encoding)."),
                            headers: [("Connection", "close")])
        }
        if ex.authorizationHeaders > 1 {
            // Which credential would count is up to each proxy and server on the way: none does.
            return .problem(ApiError.malformed("The request has more than one Authorization header; send exactly one."),
                            headers: [("Connection", "close")])
        }
        switch routed(method: ex.method, path: ex.path, headers: ex.headers, connection: ex.connection, head: { route, params in
            ex.route = route
            ex.params = params
            return ex.head
        }) {
        case .answerNow(let response):
            return response
        case .receive(let route, let params, let state):
            ex.route = route
            ex.params = params
            ex.state = state
            return nil
        }
    }

    /// Routing, the same for a request from the wire and one in process: an answer to send at
    /// once (before any of the body), or the route and the state its body starts in.
    private enum Routed {
        case answerNow(HTTPResponse)
        case receive(Router.Route?, [String: String], ExchangeState)
    }

    /// `connection`: the request's libmicrohttpd connection, which a form's decoder reads (nil in
    /// process, where forms are not decoded). `head` makes the request's head once its route and
    /// path parameters are known (a streaming route's sink is opened with it).
    private func routed(method: String, path: String, headers: [String: String], connection: OpaquePointer?,
                        head: (Router.Route, [String: String]) -> RequestHead) -> Routed {
        let close = [("Connection", "close")]
        switch router.match(method: method, path: path) {
        case .found(let route, let params):
            if let opener = route.opener {
                do {
                    return .receive(route, params, ExchangeState(.receiving(.sink(try opener(head(route, params))))))
                } catch {
                    return .answerNow(.refusal(error, mapped: errorMapper, headers: close))
                }
            }
            let asForm = route.form != nil && (!route.formOnlyIfMultipart || Router.isMultipartForm(headers["content-type"]))
            let limit = asForm ? (route.form?.maxBytes ?? configuration.maxBodyBytes) : (route.bodyLimit ?? configuration.maxBodyBytes)
            if let len = headers["content-length"].flatMap(Int.init), len > limit {
                return .answerNow(router.refusal(ApiError(.payloadTooLarge, "The body is \(len) bytes; the limit is \(limit)."), path: path, headers: close))
            }
            guard asForm, let limits = route.form else { return .receive(route, params, ExchangeState(.receiving(.buffer([], limit: limit)))) }
            if let admit = route.admitsFirst {
                do { try admit(head(route, params)) } catch {
                    return .answerNow(router.refusal(errorMapper(error), path: path, headers: close))
                }
            }
            guard let connection else {
                return .answerNow(router.refusal(ApiError.malformed("Forms are decoded only from the wire."), path: path))
            }
            do throws(FormDecoder.Failure) {
                let decoder = try FormDecoder(connection: connection, contentType: headers["content-type"], limits: limits,
                                              directory: configuration.temporaryDirectory)
                return .receive(route, params, ExchangeState(.receiving(.form(decoder))))
            } catch {
                return .answerNow(router.refusal(error.error, path: path, headers: close))
            }
        case .methodNotAllowed(let allow):
            let refusal = router.refusal(ApiError(.notFound, "Method \(method) is not allowed here."), status: 405, path: path,
                                         headers: [("Allow", allow.joined(separator: ", "))])
            return .receive(nil, [:], ExchangeState(.refusing(refusal, discarded: 0)))
        case .notFound:
            return .receive(nil, [:], ExchangeState(.refusing(router.refusal(ApiError(.notFound, "No route for \(path)."), path: path), discarded: 0)))
        }
    }

    /// A refusal while the body arrives or ends, rendered as the path's door renders it.
    private func refusal(_ error: any Error, _ path: String) -> HTTPResponse {
        if error is ProtocolRefusal { return .refusal(error, mapped: errorMapper, headers: [("Connection", "close")]) }
        return router.refusal(errorMapper(error), path: path, headers: [("Connection", "close")])
    }

    /// Runs the handler where its route says, answering now or parking the connection.
    private func run(_ route: Router.Route, _ request: HTTPRequest, _ ex: Exchange) {
        if configuration.pollingThreads == 0 {
            // This connection's own thread: the handler, and any wait for its commit, run here.
            queue(ex, answer(Self.finished(route.handler, request)))
            return
        }
        switch route.execution {
        case .blocking:
            let deferred = DeferredResponse()
            let handler = route.handler
            blocking.run { deferred.complete(Self.finished(handler, request)) }
            park(ex, deferred)
        case .inline:
            let response = answer { try route.handler(request) }
            if let deferred = response.deferred { park(ex, deferred) } else { queue(ex, response) }
        }
    }

    /// Runs a handler on a thread that may wait (a connection's own, a blocking one, the caller's
    /// in process): a deferred answer is waited for here.
    private static func finished(_ handler: Router.Handler, _ request: HTTPRequest) -> DeferredResponse.Build {
        do {
            let response = try handler(request)
            if let deferred = response.deferred { return deferred.wait() }
            return { response }
        } catch {
            return { throw error }
        }
    }

    private func answer(_ build: DeferredResponse.Build) -> HTTPResponse {
        do { return try build() } catch { return .refusal(error, mapped: errorMapper) }
    }

    /// Answers now if the deferred answer is already there; otherwise suspends the connection
    /// until it is (the completing thread resumes it, and libmicrohttpd calls the handler again).
    private func park(_ ex: Exchange, _ deferred: DeferredResponse) {
        if let build = ex.state.park(deferred) {
            queue(ex, answer(build))
            return
        }
        let connection = ConnectionHandle(pointer: ex.connection)
        MHD_suspend_connection(connection.pointer)
        deferred.onReady { MHD_resume_connection(connection.pointer) }
    }

    private func queue(_ ex: Exchange, _ response: HTTPResponse) {
        ex.state.answered()
        answered.add(1, ordering: .relaxed)
        let r: OpaquePointer?
        if let file = response.file {
            // libmicrohttpd sends the file with sendfile and closes the descriptor itself.
            r = MHD_create_response_from_fd(file.size, file.descriptor)
        } else if let source = response.stream {
            let box = Unmanaged.passRetained(StreamBox(source)).toOpaque()
            r = MHD_create_response_from_callback(response.streamSize.map(UInt64.init) ?? UInt64.max, 64 * 1024, readStream, box, freeStream)
            if r == nil { freeStream(box) }
        } else {
            r = response.body.withUnsafeBytes { buf in
                MHD_create_response_from_buffer(buf.count, UnsafeMutableRawPointer(mutating: buf.baseAddress), .RESPMEM_MUST_COPY)
            }
        }
        guard let r else { return }
        for (k, v) in response.headers { MHD_add_response_header(r, k, v) }
        MHD_queue_response(ex.connection, UInt32(response.status), r)
        MHD_destroy_response(r)
        record(ex, response)
    }

    /// The request log line and the observer (metrics) of an answered request.
    private func record(_ ex: Exchange, _ response: HTTPResponse, note: String? = nil) {
        log.write(ex: ex, response: response, note: note)
        if let observer {
            let d = ContinuousClock.now - ex.started
            observer(ex.route?.pattern ?? "(unmatched)", response.status,
                     Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18)
        }
    }

    func completed(connection: OpaquePointer, state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, code: MHD_RequestTerminationCode) {
        guard let raw = state?.pointee else { return }
        let ex = Unmanaged<Exchange>.fromOpaque(raw).takeRetainedValue()
        state?.pointee = nil
        inFlight.subtract(1, ordering: .relaxed)
        let wasAnswered = ex.state.isAnswered
        if case .answerOnClose(let build) = ex.state.completed() {
            // Resumed with its answer ready, and closed before the final call could queue it
            // (a half-closed client, `ClosingAnswer`): the answer is written here instead.
            let response = answer(build)
            ClosingAnswer.send(response, on: cmhd_connection_fd(connection), headOnly: ex.method == "HEAD")
            answered.add(1, ordering: .relaxed)
            record(ex, response, note: "answered as the connection closed (the client had half-closed)")
        } else if !wasAnswered {
            log.write(ex: ex, response: nil, note: "client disconnected before the request was complete")
        }
    }
}
