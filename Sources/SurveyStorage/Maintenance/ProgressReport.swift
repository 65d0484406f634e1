import Foundation

/// What a long maintenance command (`migrate`, `backup`, `check`) has done of what, how fast, and
/// how long it has left, on standard error. On a terminal one line is redrawn about once a
/// second (a carriage return before it); anywhere else (a log, a pipe) a plain line every few
/// seconds and one at the end of each phase; `quiet`, nothing.
///
/// The loops that do the work drive it: `begin` a phase with its totals (counted up front, in the
/// snapshot the work reads), `advance` per row or file, `end` it. `advance` is cheap enough for
/// every row: it counts, and looks at the clock only after as many calls as take about a tenth
/// of a second at the rate seen so far.
public final class ProgressReport {
    public enum Mode: Sendable {
        /// Nothing is written.
        case quiet
        /// One line, redrawn in place about once a second.
        case terminal
        /// Plain lines, one every `lineInterval` seconds and one per phase.
        case lines
    }

    /// What a phase counts.
    public enum Unit: String, Sendable {
        case rows, files, pages, checks
    }

    public let mode: Mode
    /// Put before every phase's name: a command that runs another's phases (migrate runs the
    /// check) says so ("check: responses").
    public var stage = ""
    /// The command's name, at the head of every line ("surveyd migrate").
    private let command: String
    private let write: (String) -> Void
    private let now: () -> UInt64
    /// Nanoseconds between redraws on a terminal, and between plain lines.
    private let redraw: UInt64
    private let lineInterval: UInt64

    private var phase = ""
    private var unit = Unit.rows
    private var total: Int64 = 0
    /// False for a phase that counts nothing (one long statement): it tells its time only.
    private var counted = true
    private var totalBytes: Int64 = 0
    private var done: Int64 = 0
    private var bytes: Int64 = 0
    /// Calls of `advance` in this phase (a call may count many rows: a fetched batch).
    private var calls: Int64 = 0
    /// What the phase is at now (a table's name), shown beside the counts.
    private var detail = ""
    private var started: UInt64 = 0
    private var shown: UInt64 = 0
    /// Calls to `advance` left before the clock is read again, and how many to allow next time.
    private var countdown = 1
    private var stride = 1
    /// The width of the line on the terminal, to blank what a shorter line leaves.
    private var drawn = 0
    private var active = false

    /// `write` receives each piece of output as it is due (standard error by default); `now` is
    /// a monotonic clock in nanoseconds (tests pass their own).
    public init(command: String, mode: Mode, refreshSeconds: Double = 1, lineSeconds: Double = 5,
                now: @escaping () -> UInt64 = { DispatchTime.now().uptimeNanoseconds },
                write: @escaping (String) -> Void = ProgressReport.standardError) {
        self.command = command
        self.mode = mode
        self.now = now
        self.write = write
        redraw = UInt64(min(max(0, refreshSeconds), 3600) * 1e9)
        lineInterval = UInt64(min(max(0, lineSeconds), 3600) * 1e9)
    }

    /// Nothing written: for callers that do not report.
    public static func quiet() -> ProgressReport { ProgressReport(command: "", mode: .quiet) }

    /// On standard error: redrawn in place when it is a terminal, plain lines when not,
    /// nothing with `quiet`.
    public static func onStandardError(command: String, quiet: Bool) -> ProgressReport {
        ProgressReport(command: command, mode: quiet ? .quiet : isatty(STDERR_FILENO) == 1 ? .terminal : .lines)
    }

    public static func standardError(_ text: String) {
        var rest = Array(text.utf8)[...]
        while !rest.isEmpty {
            let n = rest.withUnsafeBytes { Foundation.write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }  // a closed stderr costs the report, never the command
            rest = rest.dropFirst(n)
        }
    }

    /// A new phase: `total` things to do (and `totalBytes` of them, when they are files); nil
    /// when the work cannot be counted (one statement), and only its time is told.
    public func begin(_ phase: String, total: Int64?, unit: Unit = .rows, totalBytes: Int64 = 0) {
        guard mode != .quiet else { return }
        if active { end() }
        self.phase = stage + phase
        self.unit = unit
        counted = total != nil
        self.total = max(0, total ?? 0)
        self.totalBytes = max(0, totalBytes)
        done = 0
        bytes = 0
        calls = 0
        detail = ""
        started = now()
        shown = started
        countdown = 1
        stride = 1
        active = true
        if mode == .terminal { draw() }
    }

    /// What the phase works on now (a table); shown from the next line on.
    public func at(_ detail: String) {
        guard mode != .quiet else { return }
        self.detail = detail
    }

    /// `count` more done (and `bytes` of them). Reads the clock only every so many calls.
    @inline(__always)
    public func advance(_ count: Int64 = 1, bytes: Int64 = 0) {
        guard active else { return }
        done += count
        self.bytes += bytes
        calls += 1
        countdown -= 1
        if countdown <= 0 { tick() }
    }

    /// The phase's closing line: everything it did, in how long, at what rate.
    public func end() {
        guard active else { return }
        active = false
        let seconds = Double(now() &- started) / 1e9
        var text: String
        if !counted {
            // A phase that counts nothing (one statement): how long it took.
            text = "\(command): \(phase)" + (detail.isEmpty ? "" : " (\(detail))") + " done in \(Self.duration(seconds))"
        } else {
            text = "\(command): \(phase): \(Self.count(done)) \(unit.rawValue)"
            if totalBytes > 0 || bytes > 0 { text += ", \(Self.megabytes(bytes)) MB" }
            text += " in \(Self.duration(seconds))"
        }
        if seconds > 0 && done > 0 {
            text += ", \(Self.count(Int64(Double(done) / seconds))) \(unit.rawValue)/s"
            if bytes > 0 { text += ", \(Self.megabytes(Int64(Double(bytes) / seconds))) MB/s" }
        }
        if mode == .terminal { emit("\r" + padded(text) + "\n") } else { emit(text + "\n") }
        drawn = 0
    }

    /// Ends a line left open on a terminal (before an error message is printed after it).
    public func close() {
        if active { end() }
    }

    private func tick() {
        let t = now()
        let elapsed = t &- started
        // The next look at the clock about a tenth of a second from now, at the rate so far.
        if elapsed > 0 {
            let perTenth = Double(calls) / (Double(elapsed) / 1e9) / 10
            stride = Int(min(65_536, max(1, perTenth.isFinite ? perTenth : 1)))
        }
        countdown = stride
        switch mode {
        case .terminal where t &- shown >= redraw:
            shown = t
            draw()
        case .lines where t &- shown >= lineInterval:
            shown = t
            emit(line(at: t) + "\n")
        default: break
        }
    }

    private func draw() {
        emit("\r" + padded(line(at: now())))
    }

    private func padded(_ text: String) -> String {
        let width = text.count
        defer { drawn = width }
        return width < drawn ? text + String(repeating: " ", count: drawn - width) : text
    }

    /// "surveyd migrate: rows 412,000 of 1,020,031 (40 %), responses, 51,200 rows/s, about 12 s left"
    func line(at t: UInt64) -> String {
        let seconds = Double(t &- started) / 1e9
        if !counted {
            return "\(command): \(phase)" + (detail.isEmpty ? "" : " (\(detail))") + ", \(Self.duration(seconds)) so far"
        }
        var text = "\(command): \(phase) \(Self.count(done)) of \(Self.count(total)) \(unit.rawValue)"
        if totalBytes > 0 { text += ", \(Self.megabytes(bytes)) of \(Self.megabytes(totalBytes)) MB" }
        // Bytes say more of the work left than a count of files of different sizes.
        let fraction = totalBytes > 0 ? Double(bytes) / Double(totalBytes) : total > 0 ? Double(done) / Double(total) : 0
        text += " (\(Int(min(1, fraction) * 100)) %)"
        if !detail.isEmpty { text += ", \(detail)" }
        guard seconds >= 0.5, done > 0 else { return text }
        text += ", \(Self.count(Int64(Double(done) / seconds))) \(unit.rawValue)/s"
        if bytes > 0 { text += ", \(Self.megabytes(Int64(Double(bytes) / seconds))) MB/s" }
        if fraction > 0 && fraction < 1 {
            text += ", about \(Self.duration(seconds / fraction - seconds)) left"
        }
        return text
    }

    private func emit(_ text: String) {
        write(text)
    }

    /// 1234567 → "1,234,567".
    static func count(_ n: Int64) -> String {
        let digits = String(n.magnitude)
        var out = n < 0 ? "-" : ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return out
    }

    /// Bytes as megabytes (10^6) with one decimal: "1,024.5".
    static func megabytes(_ bytes: Int64) -> String {
        let tenths = bytes / 100_000
        return "\(count(tenths / 10)).\(tenths.magnitude % 10)"
    }

    /// "0.4 s", "12 s", "3 min 20 s", "1 h 05 min".
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        if seconds >= 360_000 { return "more than 100 h" }
        if seconds < 10 { return "\((seconds * 10).rounded() / 10) s" }
        let s = Int(seconds.rounded())
        if s < 60 { return "\(s) s" }
        if s < 3600 { return "\(s / 60) min \(s % 60) s" }
        let minutes = (s % 3600) / 60
        return "\(s / 3600) h \(minutes < 10 ? "0" : "")\(minutes) min"
    }
}
