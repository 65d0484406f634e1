import Foundation
import Testing
@testable import SurveyStorage

/// The progress report's output on a clock the test moves: what each mode writes and when.
@Suite struct ProgressReportTests {
    final class Capture: @unchecked Sendable {
        // @unchecked: one test's report writes here on the test's own thread.
        var text = ""
        var now: UInt64 = 0
    }

    static func report(_ mode: ProgressReport.Mode, _ capture: Capture) -> ProgressReport {
        ProgressReport(command: "surveyd test", mode: mode, refreshSeconds: 1, lineSeconds: 5,
                       now: { capture.now }, write: { capture.text += $0 })
    }

    @Test func plainLinesComeEveryFewSecondsAndOnePerPhase() {
        let c = Capture()
        let p = Self.report(.lines, c)
        p.begin("rows", total: 1_000, unit: .rows)
        p.at("responses")
        for _ in 0..<100 { p.advance() }
        #expect(c.text.isEmpty, "nothing before the interval")
        c.now = 6_000_000_000
        p.advance()
        #expect(c.text == "surveyd test: rows 101 of 1,000 rows (10 %), responses, 16 rows/s, about 53 s left\n", "\(c.text)")
        c.text = ""
        c.now = 7_000_000_000
        for _ in 0..<899 { p.advance() }
        #expect(c.text.isEmpty, "the next line only 5 s after the last")
        c.now = 8_000_000_000
        p.end()
        #expect(c.text == "surveyd test: rows: 1,000 rows in 8.0 s, 125 rows/s\n", "\(c.text)")
    }

    @Test func filesCountBytesAndAStatementItsTime() {
        let c = Capture()
        let p = Self.report(.lines, c)
        p.begin("files", total: 2, unit: .files, totalBytes: 3_000_000)
        c.now = 2_000_000_000
        p.advance(1, bytes: 1_000_000)
        p.advance(1, bytes: 2_000_000)
        p.stage = "check: "
        p.begin("SQLite integrity_check", total: nil)
        p.at("12.5 MB")
        c.now = 2_500_000_000
        p.end()
        #expect(c.text == """
            surveyd test: files: 2 files, 3.0 MB in 2.0 s, 1 files/s, 1.5 MB/s
            surveyd test: check: SQLite integrity_check (12.5 MB) done in 0.5 s

            """, "\(c.text)")
    }

    @Test func aTerminalLineIsRedrawnInPlace() {
        let c = Capture()
        let p = Self.report(.terminal, c)
        p.begin("rows", total: 10, unit: .rows)
        #expect(c.text == "\rsurveyd test: rows 0 of 10 rows (0 %)")
        c.text = ""
        c.now = 1_000_000_000
        p.advance(5)
        #expect(c.text == "\rsurveyd test: rows 5 of 10 rows (50 %), 5 rows/s, about 1.0 s left", "\(c.text)")
        c.text = ""
        p.advance(5)
        p.close()
        #expect(c.text.hasPrefix("\rsurveyd test: rows: 10 rows in 1.0 s, 10 rows/s") && c.text.hasSuffix("\n"), "\(c.text)")
        // The shorter closing line blanks what the longer one left on the terminal.
        #expect(c.text.count == "\rsurveyd test: rows 5 of 10 rows (50 %), 5 rows/s, about 1.0 s left".count + 1, "\(c.text)")
    }

    @Test func quietWritesNothing() {
        let c = Capture()
        let p = Self.report(.quiet, c)
        p.begin("rows", total: 10, unit: .rows)
        c.now = 10_000_000_000
        p.advance(10)
        p.end()
        p.close()
        #expect(c.text.isEmpty)
    }

    @Test func numbersAndDurations() {
        #expect(ProgressReport.count(0) == "0" && ProgressReport.count(999) == "999" && ProgressReport.count(1_234_567) == "1,234,567")
        #expect(ProgressReport.megabytes(1_234_567_890) == "1,234.5")
        #expect(ProgressReport.duration(3.25) == "3.3 s" && ProgressReport.duration(75) == "1 min 15 s" && ProgressReport.duration(3_900) == "1 h 05 min")
        #expect(ProgressReport.duration(.infinity) == "?" && ProgressReport.duration(1e30) == "more than 100 h")
    }
}
