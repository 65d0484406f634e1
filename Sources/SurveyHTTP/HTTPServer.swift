// Slightly over 300 lines on purpose: one request's whole life (first callback, body, park and
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
    static let maxDiscardBytes = 16 << 20
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

    /// Routes a request in process, without a socket (the demo seeding uses it).
    public func respond(method: String, path: String, headers: [String: String] = [:], body: [UInt8] = []) -> HTTPResponse {
        switch router.match(method: method, path: path) {
        case .found(let route, let params):
            let head = RequestHead(method: method, path: path, route: route.pattern, pathParameters: params, query: [:],
                                   headers: Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a }))
            return answer(Self.finished(route.handler, HTTPRequest(head: head, body: body)))
        case .methodNotAllowed, .notFound:
            return .problem(ApiError.notFound())
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
            if stopping.load(ordering: .sequentiallyConsistent) {
                // Begun after `stop` counted the requests it waits for: it is not run at all, so
                // nothing is written that might never be answered.
                queue(ex, .problem(ApiError(.storageUnavailable, "The server is shutting down; nothing was written. Retry the request."),
                                   headers: [("Connection", "close")]))
                return .YES
            }
            if ex.conflictingFraming {
                // Two Content-Length values (or one beside Transfer-Encoding) make the body's end
                // ambiguous: answering and closing leaves nothing to smuggle (RFC 9112 §6.3).
                queue(ex, .problem(ApiError.malformed("The request's body framing is ambiguous (conflicting Content-Length / Transfer-Encoding)."),
                                   headers: [("Connection", "close")]))
                return .YES
            }
            if ex.authorizationHeaders > 1 {
                // Which credential would count is up to each proxy and server on the way: none does.
                queue(ex, .problem(ApiError.malformed("The request has more than one Authorization header; send exactly one."),
                                   headers: [("Connection", "close")]))
                return .YES
            }
            switch router.match(method: method, path: url) {
            case .found(let route, let params):
                ex.route = route
                ex.params = params
                if let opener = route.opener {
                    do {
                        ex.sink = try opener(ex.head)
                    } catch {
                        queue(ex, .problem(errorMapper(error), headers: [("Connection", "close")]))
                    }
                } else {
                    let limit = route.bodyLimit ?? configuration.maxBodyBytes
                    if let len = ex.headers["content-length"].flatMap(Int.init), len > limit {
                        queue(ex, router.refusal(ApiError(.payloadTooLarge, "The body is \(len) bytes; the limit is \(limit)."), path: url,
                                                 headers: [("Connection", "close")]))
                    } else if let limits = route.form {
                        do throws(FormDecoder.Failure) {
                            ex.form = try FormDecoder(connection: connection, contentType: ex.headers["content-type"], limits: limits,
                                                      directory: configuration.temporaryDirectory)
                        } catch {
                            queue(ex, router.refusal(error.error, path: url, headers: [("Connection", "close")]))
                        }
                    }
                }
            case .methodNotAllowed(let allow):
                ex.pending = router.refusal(ApiError(.notFound, "Method \(method) is not allowed here."), status: 405, path: url,
                                            headers: [("Allow", allow.joined(separator: ", "))])
            case .notFound:
                ex.pending = router.refusal(ApiError(.notFound, "No route for \(url)."), path: url)
            }
            return .YES
        }
        let ex = Unmanaged<Exchange>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let n = uploadSize.pointee
            uploadSize.pointee = 0
            if ex.answered { return .YES }
            if ex.pending != nil {
                // The body of a refused request is discarded, not buffered. libmicrohttpd cannot
                // answer a chunked body before its end, so an endless one is cut off instead.
                ex.discarded += n
                return ex.discarded > Self.maxDiscardBytes ? .NO : .YES
            }
            let chunk = UnsafeRawBufferPointer(start: uploadData, count: n)
            if let form = ex.form {
                do throws(FormDecoder.Failure) {
                    try form.write(chunk)
                } catch {
                    ex.form = nil
                    ex.pending = router.refusal(error.error, path: ex.path, headers: [("Connection", "close")])
                }
                return .YES
            }
            if let sink = ex.sink {
                do {
                    try sink.write(chunk)
                } catch {
                    sink.abort()
                    ex.pending = .problem(errorMapper(error), headers: [("Connection", "close")])
                }
                return .YES
            }
            let limit = ex.route?.bodyLimit ?? configuration.maxBodyBytes
            if ex.body.count + n > limit {
                ex.body = []
                ex.pending = router.refusal(ApiError(.payloadTooLarge, "The body is over the limit of \(limit) bytes."), path: ex.path,
                                            headers: [("Connection", "close")])
                return .YES
            }
            ex.body.append(contentsOf: chunk)
            return .YES
        }
        if ex.answered { return .YES }
        if let deferred = ex.deferred {
            // Resumed: the parked answer is ready (a call before that would be spurious).
            guard let build = deferred.take() else { return .YES }
            ex.deferred = nil
            queue(ex, answer(build))
            return .YES
        }
        if let pending = ex.pending {
            queue(ex, pending)
            return .YES
        }
        guard let route = ex.route else { return .NO }
        var form = FormFields()
        if let decoder = ex.form {
            ex.form = nil
            do throws(FormDecoder.Failure) {
                form = try decoder.finish()
            } catch {
                queue(ex, router.refusal(error.error, path: ex.path, headers: [("Connection", "close")]))
                return .YES
            }
        }
        let request = HTTPRequest(head: ex.head, body: ex.body, sink: ex.sink, form: form)
        ex.body = []
        if configuration.pollingThreads == 0 {
            // This connection's own thread: the handler, and any wait for its commit, run here.
            queue(ex, answer(Self.finished(route.handler, request)))
            return .YES
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
        return .YES
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
        do { return try build() } catch { return .problem(errorMapper(error)) }
    }

    /// Answers now if the deferred answer is already there; otherwise suspends the connection
    /// until it is (the completing thread resumes it, and libmicrohttpd calls the handler again).
    private func park(_ ex: Exchange, _ deferred: DeferredResponse) {
        if let build = deferred.take() {
            queue(ex, answer(build))
            return
        }
        ex.deferred = deferred
        let connection = ConnectionHandle(pointer: ex.connection)
        MHD_suspend_connection(connection.pointer)
        deferred.onReady { MHD_resume_connection(connection.pointer) }
    }

    private func queue(_ ex: Exchange, _ response: HTTPResponse) {
        ex.answered = true
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
        if let deferred = ex.deferred, let build = deferred.take() {
            // Resumed with its answer ready, and closed before the final call could queue it
            // (a half-closed client, `ClosingAnswer`): the answer is written here instead.
            let response = answer(build)
            ClosingAnswer.send(response, on: cmhd_connection_fd(connection), headOnly: ex.method == "HEAD")
            ex.deferred = nil
            ex.answered = true
            answered.add(1, ordering: .relaxed)
            record(ex, response, note: "answered as the connection closed (the client had half-closed)")
        }
        ex.deferred?.abandon()
        // Whatever a streaming request wrote and did not commit is dropped (disconnect mid-body,
        // refusal, shutdown). After a commit this does nothing.
        ex.sink?.abort()
        if !ex.answered { log.write(ex: ex, response: nil, note: "client disconnected before the request was complete") }
    }
}
