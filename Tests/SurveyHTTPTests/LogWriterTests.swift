import Foundation
import Testing
@testable import SurveyHTTP

/// The request log's writer on a real pipe.
@Suite struct LogWriterTests {
    /// Reads `fd` to its end on a thread of its own.
    final class Drain: @unchecked Sendable {
        // @unchecked: `bytes` is written by the drain thread and read after `done` is signalled.
        private(set) var bytes: [UInt8] = []
        private let done = DispatchSemaphore(value: 0)
        init(_ fd: Int32) {
            Thread {
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if n > 0 { self.bytes += buffer[0..<n] } else if n < 0 && errno == EINTR { continue } else { break }
                }
                self.done.signal()
            }.start()
        }
        func wait() -> String { done.wait(); return String(decoding: bytes, as: UTF8.self) }
    }

    @Test func everyLineArrivesInOrderAndStopWritesTheRest() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let drain = Drain(fds[0])
        let writer = LogWriter(descriptor: fds[1])
        for i in 0..<5_000 { writer.append(Array("{\"n\":\(i)}\n".utf8)) }
        writer.stop()  // nothing waits for the 20 ms batching: stop writes what is buffered
        writer.append(Array("{\"after\":true}\n".utf8))  // after stop: written at once
        close(fds[1])
        let lines = drain.wait().split(separator: "\n").map(String.init)
        #expect(lines.count == 5_001)
        #expect(lines.first == "{\"n\":0}")
        #expect(lines[4_999] == "{\"n\":4999}")
        #expect(lines.last == "{\"after\":true}")
        close(fds[0])
    }

    /// A reader that stops reading must cost log lines, not memory or the server's threads: lines
    /// beyond what may wait are dropped without blocking whoever appends, and once the reader is
    /// back a note says how many were lost. (If `append` blocked, this test would hang.)
    @Test(.timeLimit(.minutes(1))) func aReaderThatStopsReadingCostsLinesNotTheServer() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let writer = LogWriter(descriptor: fds[1])
        let line = [UInt8](repeating: UInt8(ascii: "x"), count: 199) + [10]
        let count = 2 * LogWriter.maxPendingBytes / line.count  // twice what may wait in memory
        for _ in 0..<count { writer.append(line) }
        // The reader comes back.
        let drain = Drain(fds[0])
        writer.append(Array("{\"after\":true}\n".utf8))
        writer.stop()
        close(fds[1])
        let text = drain.wait()
        let xLines = text.split(separator: "\n").filter { $0.first == "x" }.count
        #expect(xLines < count)
        #expect(xLines > 0)
        #expect(text.contains("request log lines dropped: the log's reader did not keep up"))
        #expect(text.contains("{\"after\":true}\n"))
        close(fds[0])
    }
}
