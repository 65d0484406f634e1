import Foundation
import Synchronization
import SurveyForms

/// Converts an XLSForm (`.xlsx`, or `.xls`) into an XForm with pyxform — the converter ODK Central
/// and KoboToolbox use, so a form converts here exactly as it does there. pyxform runs as a child
/// process on a temporary copy of the upload, under a CPU-time and memory limit and a wall-clock
/// deadline; its own message (with the sheet and row it names) is what a refusal says.
public struct XLSFormConverter: Sendable {
    /// pyxform's `xls2xform` command.
    public let executable: String
    /// Wall-clock time a conversion may take before the child is killed.
    public var deadline: Duration = .seconds(60)
    /// The child's address space, in bytes.
    public var memoryLimit = 2 << 30

    public init(executable: String) {
        self.executable = executable
    }

    /// Where the project's setup installs pyxform: `.build/venv-forms/bin/xls2xform`, found by
    /// walking up from the running executable (`.build/debug/surveyd` is a link into
    /// `.build/<triple>/debug/`); the nearest place is named even when nothing is there, so that
    /// a refusal can say where it looked.
    public static var installedBesideExecutable: String {
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "surveyd").standardizedFileURL
        var candidates: [String] = []
        for start in [executable, executable.resolvingSymlinksInPath()] {
            var directory = start.deletingLastPathComponent()
            for _ in 0..<3 {
                directory = directory.deletingLastPathComponent()
                candidates.append(directory.appendingPathComponent("venv-forms/bin/xls2xform").path)
            }
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates.first ?? "xls2xform"
    }

    public struct Conversion: Sendable {
        public let xform: [UInt8]
        /// pyxform's warnings, each a sentence; shown with the version, never a refusal.
        public let warnings: [String]
    }

    public enum Refusal: Error, Sendable, Equatable {
        /// pyxform refused the form: its message, as it wrote it.
        case invalid(String)
        /// pyxform is not there (or cannot run): what to install.
        case unavailable(String)
        /// The conversion ran out of time or memory.
        case tooCostly(String)
        /// As many conversions as the server runs at once are running: try again shortly.
        case busy(String)
    }

    /// How many conversions run at once, shared by every copy of this converter (a server has
    /// one): each is a Python process of up to `memoryLimit` and a CPU for up to `deadline`.
    public var slots = Slots(limit: max(2, ProcessInfo.processInfo.activeProcessorCount))

    public final class Slots: Sendable {
        public let limit: Int
        private let running = Atomic<Int>(0)
        public init(limit: Int) { self.limit = limit }

        func take() -> Bool {
            guard running.add(1, ordering: .acquiringAndReleasing).newValue <= limit else {
                running.subtract(1, ordering: .acquiringAndReleasing)
                return false
            }
            return true
        }

        func give() { running.subtract(1, ordering: .acquiringAndReleasing) }
    }

    /// `formName`: the name the upload is converted under, which pyxform makes the form's id
    /// when its `settings` sheet names none (letters, digits, `_`, `-` and `.` only; else `form`).
    public func convert(_ bytes: [UInt8], isXLS: Bool, formName: String = "form") throws(Refusal) -> Conversion {
        guard slots.take() else { throw .busy("the server is converting \(slots.limit) XLSForms already") }
        defer { slots.give() }
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw .unavailable("pyxform is not installed where this server looks for it (\(executable)): run scripts/setup.sh, or install pyxform 4.5.0 (pip install pyxform==4.5.0) and start surveyd with --pyxform pointing at its xls2xform")
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("surveyd-xlsform-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: false)
        } catch {
            throw .unavailable("no temporary directory for the conversion: \(error.localizedDescription)")
        }
        defer { try? FileManager.default.removeItem(at: work) }
        let safeName = !formName.isEmpty && formName.utf8.count <= 128 && formName.first != "." && formName.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" || $0 == "."
        }
        let input = work.appendingPathComponent((safeName ? formName : "form") + (isXLS ? ".xls" : ".xlsx"))
        let output = work.appendingPathComponent("form.xml")
        guard FileManager.default.createFile(atPath: input.path, contents: Data(bytes)) else {
            throw .unavailable("the XLSForm could not be written to a temporary file")
        }
        let report = try run(arguments: ["--json", "--skip_validate", input.path, output.path])
        // `--json` reports {"code": 100 (done) | 101 (done, with warnings) | 999 (refused), "message": ..., "warnings": [...]}
        // on a line of its own (on standard error; both streams are read).
        let line = report.split(separator: UInt8(ascii: "\n")).last { $0.first == UInt8(ascii: "{") }
        let parsed = line.flatMap { try? JSONParser.parse(Array($0)) }
        let message = parsed?["message"]?.stringValue ?? String(decoding: report.prefix(2_000), as: UTF8.self)
        let warnings = (parsed?["warnings"]?.arrayValue ?? []).compactMap(\.stringValue)
        let code = parsed?["code"]?.doubleValue
        guard code == 100 || code == 101, let xform = FileManager.default.contents(atPath: output.path) else {
            throw .invalid(message.isEmpty ? "pyxform could not convert the form and gave no reason" : message)
        }
        return Conversion(xform: [UInt8](xform), warnings: warnings)
    }

    /// Runs xls2xform under `ulimit` (memory, CPU seconds) and the deadline; what it wrote to
    /// standard output and standard error.
    private func run(arguments: [String]) throws(Refusal) -> [UInt8] {
        let seconds = Int(deadline.components.seconds)
        let child: ChildProcess
        do {
            // `exec "$0" "$@"`: the limits apply to pyxform itself, and no argument is ever read by the shell.
            child = try ChildProcess("/bin/sh", arguments: ["-c", "ulimit -v \(memoryLimit / 1024) && ulimit -t \(seconds) && exec \"$0\" \"$@\"", executable] + arguments)
        } catch {
            throw .unavailable("pyxform could not be started (\(executable)): \(error.message)")
        }
        // Read while it runs, so that a large report cannot fill the pipe and stall the child.
        let collected = Collected()
        let output = child.output
        let reader = Thread { collected.set(output.readDataToEndOfFile()) }
        reader.start()
        guard let exit = child.waitForExit(within: .seconds(seconds)) else {
            throw .tooCostly("converting the XLSForm took more than \(seconds) s; it was stopped")
        }
        collected.wait()
        if case .signalled(let signal) = exit {
            throw .tooCostly("converting the XLSForm ran out of memory or time (signal \(signal)); it was stopped")
        }
        return [UInt8](collected.data)
    }
}

/// What the reading thread collected, handed over once.
private final class Collected: @unchecked Sendable {
    // @unchecked: `data` is written once by the reader before `done` is signalled, and read after.
    private(set) var data = Data()
    private let done = DispatchSemaphore(value: 0)
    func set(_ d: Data) { data = d; done.signal() }
    func wait() { done.wait() }
}
