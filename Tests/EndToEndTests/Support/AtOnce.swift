import Foundation

/// Runs `body(0..<n)` on `n` threads of its own, released together, and waits for all of them
/// (`DispatchQueue.concurrentPerform` runs only as many at once as there are cores).
func atOnce(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let start = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for i in 0..<n {
        done.enter()
        Thread.detachNewThread {
            start.wait()
            body(i)
            done.leave()
        }
    }
    for _ in 0..<n { start.signal() }
    done.wait()
}
