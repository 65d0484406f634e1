import Foundation
import SurveyDomain

/// Writes the request log's lines in batches: request threads append to a buffer and one thread
/// writes it out every 20 ms (sooner once 64 KiB wait). A `write` per request was 3.5 % of a
/// replay's CPU. The price: a `kill -9` can lose the last ~20 ms of log lines (never data — the
/// log is not the audit); `stop()` writes everything before a clean exit.
///
/// A reader of the log that stops reading (a full pipe) must cost log lines, not the service:
/// at most `maxPendingBytes` wait in memory (later lines are dropped and counted, and a note
/// says how many once writing resumes), and a write that cannot proceed for `stallTimeout`
/// drops its batch, so neither memory nor a graceful stop depends on the reader.
final class LogWriter: @unchecked Sendable {
    // @unchecked: `pending`, `dropped`, `stopping` and `stopped` are guarded by `cond`.
    private let cond = NSCondition()
    private var pending: [UInt8] = []
    private var stopping = false
    private var stopped = false
    private let descriptor: Int32
    static let interval = 0.02
    static let batchBytes = 64 << 10
    static let maxPendingBytes = 4 << 20
    static let stallTimeoutMillis: Int32 = 1000
    /// Lines dropped since the last note about them.
    private var dropped = 0

    /// A file never blocks a write; a pipe or socket is written in pieces its buffer takes at once.
    private let pieceBytes: Int

    init(descriptor: Int32) {
        self.descriptor = descriptor
        var info = stat()
        let isFile = fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        pieceBytes = isFile ? Self.batchBytes : Int(PIPE_BUF)
        pending.reserveCapacity(Self.batchBytes)
        // The thread holds the writer (not `unowned`): a server dropped without `stop()` must not
        // leave it pointing at freed memory.
        let t = Thread {
            ThreadName.set("surveyd-log")
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
        guard pending.count + line.count <= Self.maxPendingBytes else {
            dropped += 1
            cond.unlock()
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
            let droppedNow = dropped
            dropped = 0
            cond.unlock()
            if droppedNow > 0 {
                batch.append(contentsOf: "{\"note\":\"\(droppedNow) request log lines dropped: the log's reader did not keep up\"}\n".utf8)
            }
            if !writeAll(batch) {
                let lines = batch.lazy.filter { $0 == 10 }.count  // some may have been written: a bound
                cond.lock()
                dropped += lines
                cond.unlock()
            }
            batch.removeAll(keepingCapacity: true)
            cond.lock()
            if last && pending.isEmpty { break }
        }
        stopped = true
        cond.broadcast()
        cond.unlock()
    }

    /// The whole buffer, across short writes and signals, in pieces; false (the rest dropped) when
    /// the descriptor stays unwritable for `stallTimeoutMillis` or fails.
    @discardableResult
    private func writeAll(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                var p = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&p, 1, Self.stallTimeoutMillis)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0, p.revents & Int16(POLLOUT) != 0 else { return false }
                let n = Foundation.write(descriptor, raw.baseAddress! + offset, min(raw.count - offset, pieceBytes))
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return false }
            }
            return true
        }
    }
}
