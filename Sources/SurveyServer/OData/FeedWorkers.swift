import Foundation
import SurveyDomain
import SurveyHTTP
#if canImport(Glibc)
import Glibc
#endif

/// The threads that read and write the OData feed's pages: at most `limit` pages at once (half
/// the cores), each below everything else's CPU priority (nice `niceness`). A feed is a bulk
/// read that clients (Power BI, Excel, scripts) refresh in a loop, as fast as pages come; four
/// of them, a page each at once, left new submissions a third of their rate on two cores, and
/// with the pages' snapshots overlapping the WAL could never start over (Docs/performance.md).
/// Here feeds take what collection leaves, all of it when nothing else runs, and a page waiting
/// for its turn holds no snapshot. A request's own thread waits for its page. (A thread lowers
/// its own priority once, as it starts: raising it again needs privileges.)
final class FeedWorkers: Sendable {
    private let pool: BlockingPool

    init(limit: Int = ProcessInfo.processInfo.activeProcessorCount / 2, niceness: Int32 = 19, idleSeconds: Double = 10) {
        pool = BlockingPool(stackBytes: 1 << 20, idleSeconds: idleSeconds, limit: limit) {
            ThreadName.set("surveyd-feed")
            #if os(Linux)
            // Linux: PRIO_PROCESS with 0 is the calling thread alone (elsewhere it would be the process).
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
            #endif
        }
    }

    /// `job`'s result, computed on one of the threads.
    func run<T>(_ job: @escaping () throws -> T) throws -> T {
        let done = Completion<T>()
        pool.run { done.finish(Result(catching: job)) }
        return try done.wait().get()
    }

    /// One job's result, handed from the thread that ran it to the one that waits.
    private final class Completion<T>: @unchecked Sendable {
        // @unchecked: `result` is guarded by `cond`.
        private let cond = NSCondition()
        private var result: Result<T, Error>?

        func finish(_ r: Result<T, Error>) {
            cond.lock()
            result = r
            cond.signal()
            cond.unlock()
        }

        func wait() -> Result<T, Error> {
            cond.lock()
            defer { cond.unlock() }
            while true {
                if let result { return result }
                cond.wait()
            }
        }
    }
}
