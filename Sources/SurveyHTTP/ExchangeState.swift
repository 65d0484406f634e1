import SurveyDomain

/// Where a request's body goes while it arrives.
enum BodyTarget {
    /// JSON routes: kept in memory up to `limit` bytes.
    case buffer([UInt8], limit: Int)
    /// Streaming routes (uploads): written as it arrives.
    case sink(any BodySink)
    /// Form routes: decoded as it arrives.
    case form(any FormBody)
}

/// A form body being decoded (`FormDecoder`; a test double in tests).
protocol FormBody: AnyObject {
    func write(_ chunk: UnsafeRawBufferPointer) throws(ApiError)
    func finish() throws(ApiError) -> FormFields
}

/// One request's life as a value: the phase it is in decides what each of libmicrohttpd's calls
/// does, and each transition answers what the server is to do next. Pure but for the body
/// targets it feeds, so it is tested without a socket (`ExchangeStateTests`).
struct ExchangeState {
    enum Phase {
        /// Routed; the body is arriving.
        case receiving(BodyTarget)
        /// Refused before its body ended: `answer` is sent once it has (libmicrohttpd cannot
        /// answer a body still arriving); the rest is discarded, up to `maxDiscardBytes`.
        case refusing(HTTPResponse, discarded: Int)
        /// The handler runs (on a blocking thread, or inline).
        case running
        /// The handler's answer comes later; the connection is suspended meanwhile.
        case parked(DeferredResponse)
        /// The answer is queued: nothing more to do but clean up.
        case answered
    }

    /// What to do with a piece of the body.
    enum ChunkAction: Equatable {
        case consumed
        /// A refused request's body is too long to discard: close the connection.
        case cutOff
    }

    /// What to do when libmicrohttpd calls with no more body.
    enum EndAction {
        /// Nothing (already answered, or a spurious call while the answer is not ready).
        case wait
        case answer(HTTPResponse)
        /// Run the route's handler on this request.
        case run(HTTPRequest)
        /// A parked request's answer is ready: build and send it.
        case finish(DeferredResponse.Build)
    }

    /// What the completion callback is to do.
    enum CompletedAction {
        case nothing
        /// Parked, answer ready, and the connection is closing: write it straight onto the socket.
        case answerOnClose(DeferredResponse.Build)
    }

    static let maxDiscardBytes = 16 << 20

    private(set) var phase: Phase
    /// A streaming route's sink, kept after its body ended: whatever it wrote and did not commit
    /// is dropped when the request ends (disconnect, refusal, shutdown).
    private var sink: (any BodySink)?

    init(_ phase: Phase) {
        self.phase = phase
        if case .receiving(.sink(let s)) = phase { sink = s }
    }

    var isAnswered: Bool { if case .answered = phase { true } else { false } }

    /// The next `chunk` of the body. `refuse` renders a refusal the way this path's door does
    /// (errors of a sink or the store included).
    mutating func receive(_ chunk: UnsafeRawBufferPointer, refuse: (any Error) -> HTTPResponse) -> ChunkAction {
        switch phase {
        case .answered, .running, .parked:
            return .consumed
        case .refusing(let answer, let discarded):
            let total = discarded + chunk.count
            phase = .refusing(answer, discarded: total)
            return total > Self.maxDiscardBytes ? .cutOff : .consumed
        case .receiving(.buffer(var bytes, let limit)):
            guard bytes.count + chunk.count <= limit else {
                phase = .refusing(refuse(ApiError(.payloadTooLarge, "The body is over the limit of \(limit) bytes.")), discarded: 0)
                return .consumed
            }
            phase = .running  // not a copy of `bytes` while it grows: the array is moved out and back
            bytes.append(contentsOf: chunk)
            phase = .receiving(.buffer(bytes, limit: limit))
            return .consumed
        case .receiving(.sink(let sink)):
            do {
                try sink.write(chunk)
            } catch {
                sink.abort()
                phase = .refusing(refuse(error), discarded: 0)
            }
            return .consumed
        case .receiving(.form(let form)):
            do throws(ApiError) {
                try form.write(chunk)
            } catch {
                phase = .refusing(refuse(error), discarded: 0)
            }
            return .consumed
        }
    }

    /// The body has ended (or libmicrohttpd calls again after a resume).
    mutating func bodyEnded(_ head: @autoclosure () -> RequestHead, refuse: (any Error) -> HTTPResponse) -> EndAction {
        switch phase {
        case .answered, .running:
            return .wait
        case .parked(let deferred):
            // Resumed: the parked answer is ready (a call before that would be spurious).
            guard let build = deferred.take() else { return .wait }
            phase = .running
            return .finish(build)
        case .refusing(let answer, _):
            return .answer(answer)
        case .receiving(let target):
            phase = .running
            switch target {
            case .buffer(let bytes, _):
                return .run(HTTPRequest(head: head(), body: bytes))
            case .sink(let sink):
                return .run(HTTPRequest(head: head(), body: [], sink: sink))
            case .form(let form):
                do throws(ApiError) {
                    return .run(HTTPRequest(head: head(), body: [], form: try form.finish()))
                } catch {
                    return .answer(refuse(error))
                }
            }
        }
    }

    /// The handler's answer will come later; nil when it is ready already (send it now).
    mutating func park(_ deferred: DeferredResponse) -> DeferredResponse.Build? {
        if let build = deferred.take() { return build }
        phase = .parked(deferred)
        return nil
    }

    /// An answer was queued.
    mutating func answered() { phase = .answered }

    /// libmicrohttpd is done with the request, answered or not.
    mutating func completed() -> CompletedAction {
        var action = CompletedAction.nothing
        if case .parked(let deferred) = phase {
            if let build = deferred.take() {
                action = .answerOnClose(build)
            } else {
                deferred.abandon()
            }
        }
        if case .answerOnClose = action { phase = .answered }
        // Whatever a streaming request wrote and did not commit is dropped. After a commit this
        // does nothing.
        sink?.abort()
        sink = nil
        return action
    }
}
