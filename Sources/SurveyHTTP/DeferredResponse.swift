import Dispatch
import Synchronization
import SurveyDomain

/// An answer that is not ready when its handler returns: the work runs elsewhere (a writer job, a
/// blocking thread). The server parks the connection (libmicrohttpd's suspend) instead of holding
/// an HTTP thread, and answers once `complete` is called. The answer itself is built on the HTTP
/// thread that resumes the connection, so the writer thread only hands over a result.
public final class DeferredResponse: Sendable {
    public typealias Build = @Sendable () throws -> HTTPResponse
    private enum State {
        case waiting(wake: (@Sendable () -> Void)?)
        case ready(Build)
        case taken
    }
    private let state = Mutex(State.waiting(wake: nil))

    public init() {}

    /// Hands over the answer, once, from any thread. `build` runs later, where the answer is sent.
    public func complete(_ build: @escaping Build) {
        let wake = state.withLock { s -> (@Sendable () -> Void)? in
            guard case .waiting(let wake) = s else { return nil }
            s = .ready(build)
            return wake
        }
        wake?()
    }

    /// `wake` runs once the answer is ready: now, if it already is (then on this thread).
    func onReady(_ wake: @escaping @Sendable () -> Void) {
        let readyNow = state.withLock { s -> Bool in
            guard case .waiting = s else { return true }
            s = .waiting(wake: wake)
            return false
        }
        if readyNow { wake() }
    }

    /// The connection is gone (server stopping): nobody is to be woken any more.
    func abandon() {
        state.withLock { s in if case .waiting = s { s = .waiting(wake: nil) } }
    }

    /// The answer's builder if it is ready; nil otherwise. Only the first call gets it.
    func take() -> Build? {
        state.withLock { s -> Build? in
            guard case .ready(let build) = s else { return nil }
            s = .taken
            return build
        }
    }

    /// Blocks until ready (requests served in process, without a socket).
    func wait() -> Build {
        let done = DispatchSemaphore(value: 0)
        onReady { done.signal() }
        done.wait()
        // Only this waiter takes it; nil would be a defect, answered rather than trapped on.
        return take() ?? { throw ApiError(.internalError) }
    }
}
