import Foundation
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
final class FeedWorkers: @unchecked Sendable {
    // @unchecked: every field is guarded by `cond`.
    private let cond = NSCondition()
    private var work: [() -> Void] = []
    private var threads = 0
    private var idle = 0
    private let limit: Int
    private let niceness: Int32
    private let idleSeconds: Double

    init(limit: Int = ProcessInfo.processInfo.activeProcessorCount / 2, niceness: Int32 = 19, idleSeconds: Double = 10) {
        self.limit = max(1, limit)
        self.niceness = niceness
        self.idleSeconds = idleSeconds
    }

    /// `job`'s result, computed on one of the threads.
    func run<T>(_ job: @escaping () throws -> T) throws -> T {
        let done = Completion<T>()
        cond.lock()
        work.append { done.finish(Result(catching: job)) }
        let start = work.count > idle && threads < limit
        if start { threads += 1 } else { cond.signal() }
        cond.unlock()
        if start {
            let t = Thread { self.loop() }
            t.stackSize = 1 << 20
            t.start()
        }
        return try done.wait().get()
    }

    private func loop() {
        Thread.current.name = "surveyd-feed"
        #if os(Linux)
        // Linux: PRIO_PROCESS with 0 is the calling thread alone (elsewhere it would be the process).
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
        #endif
        cond.lock()
        while true {
            if !work.isEmpty {
                let job = work.removeFirst()
                cond.unlock()
                job()
                cond.lock()
                continue
            }
            idle += 1
            let woken = cond.wait(until: Date(timeIntervalSinceNow: idleSeconds))
            idle -= 1
            if !woken && work.isEmpty { break }
        }
        threads -= 1
        cond.unlock()
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
