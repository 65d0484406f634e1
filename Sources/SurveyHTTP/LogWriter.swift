import Foundation

/// Writes the request log's lines in batches: request threads append to a buffer and one thread
/// writes it out every 20 ms (sooner once 64 KiB wait). A `write` per request was 3.5 % of a
/// replay's CPU. The price: a `kill -9` can lose the last ~20 ms of log lines (never data — the
/// log is not the audit); `stop()` writes everything before a clean exit.
final class LogWriter: @unchecked Sendable {
    // @unchecked: `pending`, `stopping` and `stopped` are guarded by `cond`.
    private let cond = NSCondition()
    private var pending: [UInt8] = []
    private var stopping = false
    private var stopped = false
    private let descriptor: Int32
    static let interval = 0.02
    static let batchBytes = 64 << 10

    init(descriptor: Int32) {
        self.descriptor = descriptor
        pending.reserveCapacity(Self.batchBytes)
        // The thread holds the writer (not `unowned`): a server dropped without `stop()` must not
        // leave it pointing at freed memory.
        let t = Thread {
            Thread.current.name = "surveyd-log"
            self.loop()
        }
        t.stackSize = 256 << 10
        t.start()
    }

    func append(_ line: [UInt8]) {
        cond.lock()
        if stopped {
            cond.unlock()
            writeAll(line)
            return
        }
        let wasEmpty = pending.isEmpty
        pending.append(contentsOf: line)
        // The first line wakes the thread, which then gathers lines for `interval`.
        if wasEmpty || pending.count >= Self.batchBytes { cond.signal() }
        cond.unlock()
    }

    /// Writes what is buffered and ends the thread; later lines are written at once, unbatched.
    func stop() {
        cond.lock()
        stopping = true
        cond.broadcast()
        while !stopped { cond.wait() }
        cond.unlock()
    }

    private func loop() {
        var batch: [UInt8] = []
        batch.reserveCapacity(Self.batchBytes)
        cond.lock()
        while true {
            // Idle: no timer runs until a line arrives.
            while pending.isEmpty && !stopping { cond.wait() }
            if !stopping && pending.count < Self.batchBytes {
                _ = cond.wait(until: Date(timeIntervalSinceNow: Self.interval))
            }
            swap(&batch, &pending)
            let last = stopping
            cond.unlock()
            writeAll(batch)
            batch.removeAll(keepingCapacity: true)
            cond.lock()
            if last && pending.isEmpty { break }
        }
        stopped = true
        cond.broadcast()
        cond.unlock()
    }

    /// The whole buffer, across short writes and signals; a log that cannot be written is dropped.
    private func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Foundation.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
            }
        }
    }
}
