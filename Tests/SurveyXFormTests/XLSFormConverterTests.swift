import Foundation
import SurveyForms
import Testing
import TestProcesses
@testable import SurveyXForm

/// The conversion's promises around pyxform as a child process, with stand-ins for
/// `xls2xform` that behave as pyxform can: too slow, killed, silent, refusing, warning.
@Suite struct XLSFormConverterTests {
    /// A directory holding one executable script named xls2xform, and what it records.
    final class StandIn {
        let directory: URL
        var executable: String { directory.appendingPathComponent("xls2xform").path }
        var record: URL { directory.appendingPathComponent("record.txt") }

        init(_ script: String) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("xls2xform-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
            let body = "#!/bin/sh\nRECORD='\(record.path)'\n" + script + "\n"
            // Written under another name and copied by a child process: a test running in
            // parallel that forks while this process holds the script open for writing would
            // carry that descriptor into its child, and running the script fails with ETXTBSY.
            let source = directory.appendingPathComponent("script.sh")
            try Data(body.utf8).write(to: source)
            guard try SpawnedProcess.run("/bin/cp", [source.path, executable]).termination == .exited(0) else {
                throw CocoaError(.fileWriteUnknown)
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: executable)
        }

        func recorded() -> [String] {
            ((try? String(contentsOf: record, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    private func refusal(_ converter: XLSFormConverter) -> XLSFormConverter.Refusal? {
        do {
            _ = try converter.convert(Array("PK not really a workbook".utf8), isXLS: false)
            return nil
        } catch {
            return error
        }
    }

    @Test func aConversionThatOutrunsItsDeadlineIsKilledAndRefused() throws {
        // pyxform stuck on a form: the stand-in records its pid, then waits far past the deadline.
        let standIn = try StandIn(#"echo $$ > "$RECORD"; exec sleep 120"#)
        var converter = XLSFormConverter(executable: standIn.executable)
        converter.deadline = .seconds(1)
        let clock = ContinuousClock()
        let start = clock.now
        #expect(refusal(converter) == .tooCostly("converting the XLSForm took more than 1 s; it was stopped"))
        #expect(clock.now - start < .seconds(60))
        // The child is gone (killed and reaped), not left running.
        let pid = try #require(standIn.recorded().first.flatMap { Int32($0) })
        #expect(kill(pid, 0) == -1 && errno == ESRCH)
    }

    @Test func aConversionKilledByItsLimitsIsRefusedAsTooCostly() throws {
        let standIn = try StandIn("kill -KILL $$")
        #expect(refusal(XLSFormConverter(executable: standIn.executable))
                == .tooCostly("converting the XLSForm ran out of memory or time (signal 9); it was stopped"))
    }

    @Test func aConverterThatIsNotThereIsNamedWithWhatToInstall() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("nowhere-\(UUID().uuidString)/xls2xform").path
        guard case .unavailable(let message)? = refusal(XLSFormConverter(executable: missing)) else {
            Issue.record("not refused as unavailable")
            return
        }
        #expect(message.hasPrefix("pyxform is not installed where this server looks for it (\(missing)): run scripts/setup.sh"))
    }

    @Test func aConverterThatFailsSilentlyGivesASentence() throws {
        let standIn = try StandIn("exit 1")
        #expect(refusal(XLSFormConverter(executable: standIn.executable)) == .invalid("pyxform could not convert the form and gave no reason"))
    }

    @Test func aConverterThatCrashesIsRefusedWithWhatItWrote() throws {
        let standIn = try StandIn(#"echo "Traceback (most recent call last): KeyError 'survey'" >&2; exit 1"#)
        #expect(refusal(XLSFormConverter(executable: standIn.executable)) == .invalid("Traceback (most recent call last): KeyError 'survey'\n"))
    }

    @Test func pyxformsOwnRefusalIsWhatTheRefusalSays() throws {
        let standIn = try StandIn(#"echo '{"code": 999, "message": "[row : 3] Question or group with no name.", "warnings": []}'"#)
        #expect(refusal(XLSFormConverter(executable: standIn.executable)) == .invalid("[row : 3] Question or group with no name."))
    }

    @Test func aReportOfSuccessWithoutTheXFormIsRefused() throws {
        let standIn = try StandIn(#"echo '{"code": 100, "message": "Conversion complete!"}'"#)
        #expect(refusal(XLSFormConverter(executable: standIn.executable)) == .invalid("Conversion complete!"))
    }

    /// The XForm and pyxform's warnings come back; the temporary copy of the upload is removed.
    @Test func aConversionWithWarningsReturnsTheXFormAndTheWarnings() throws {
        let standIn = try StandIn(#"""
        printf '%s\n' "$@" > "$RECORD"
        for last; do :; done
        printf '<h:html/>' > "$last"
        echo 'pyxform 4.5.0' >&2
        echo '{"code": 101, "message": "Conversion complete!", "warnings": ["[row : 2] A label is missing.", 7, "[row : 4] Use a hint."]}'
        """#)
        let conversion = try XLSFormConverter(executable: standIn.executable).convert(Array("PK".utf8), isXLS: true)
        #expect(conversion.xform == Array("<h:html/>".utf8))
        #expect(conversion.warnings == ["[row : 2] A label is missing.", "[row : 4] Use a hint."])
        let arguments = standIn.recorded()
        #expect(arguments.prefix(2) == ["--json", "--skip_validate"])
        let input = try #require(arguments.dropFirst(2).first)
        #expect(input.hasSuffix("/form.xls"))
        #expect(!FileManager.default.fileExists(atPath: URL(fileURLWithPath: input).deletingLastPathComponent().path))
    }

    /// pyxform starts while the server holds thousands of descriptors (Foundation's
    /// `Process.run()` crashed there), and gets none of them.
    @Test func aConversionStartsWhileTheProcessHoldsThreeThousandDescriptors() throws {
        let standIn = try StandIn(#"""
        for fd in /proc/$$/fd/*; do echo "${fd##*/} $(readlink "$fd")"; done > "$RECORD"
        for last; do :; done
        printf '<h:html/>' > "$last"
        echo '{"code": 100, "message": "Ok!", "warnings": []}'
        """#)
        let conversion = try OpenDescriptors.holding(3_000) {
            try XLSFormConverter(executable: standIn.executable).convert(Array("PK".utf8), isXLS: false)
        }
        #expect(conversion.xform == Array("<h:html/>".utf8))
        // The child's descriptors, each "number target": none of the thousands held here (all
        // /dev/null) above 0, 1 and 2. (The shell's own — the script, a pipe of the moment —
        // may come and go, so they are not counted.)
        let open = standIn.recorded()
        #expect(!open.isEmpty)
        let inherited = open.filter { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            return parts.count == 2 && (Int(parts[0]) ?? 0) > 2 && parts[1] == "/dev/null"
        }
        #expect(inherited == [], "\(open)")
    }

    /// Conversions beyond the converter's slots are refused at once (the door answers 429), and
    /// a slot is free again when its conversion ends.
    @Test func aConversionBeyondTheSlotsIsRefusedUntilOneIsFree() throws {
        let standIn = try StandIn(#"""
        echo started > "$RECORD"
        sleep 2
        for last; do :; done
        printf '<h:html/>' > "$last"
        echo '{"code": 100, "message": "Ok!", "warnings": []}'
        """#)
        var converter = XLSFormConverter(executable: standIn.executable)
        converter.slots = XLSFormConverter.Slots(limit: 1)
        let first = converter
        let done = DispatchSemaphore(value: 0)
        Thread { _ = try? first.convert(Array("PK".utf8), isXLS: false); done.signal() }.start()
        let clock = ContinuousClock(), start = clock.now
        while standIn.recorded().isEmpty && clock.now - start < .seconds(20) { Thread.sleep(forTimeInterval: 0.05) }
        #expect(refusal(converter) == .busy("the server is converting 1 XLSForms already"))
        done.wait()
        #expect(try converter.convert(Array("PK".utf8), isXLS: false).xform == Array("<h:html/>".utf8))
    }
}
