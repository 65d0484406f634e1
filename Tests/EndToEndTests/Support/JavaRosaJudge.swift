import Foundation
import Synchronization
import TestProcesses

/// JavaRosa — the engine of ODK Collect, from the ODK Validate jar in pyxform's wheel — filling
/// forms as Collect does and judging filled-in instances as Collect's finalization does
/// (`Tests/JavaRosa/*.java`). The Java sources are compiled against the jar into
/// `.build/javarosa-judge` when the classes are missing or older than a source (`javac`, from
/// `openjdk-17-jdk-headless`, which `scripts/setup.sh` installs); one JVM then serves the whole
/// test run, one JSON request and one JSON answer a line.
final class JavaRosaJudge: @unchecked Sendable {
    // @unchecked: the pipes are only used under `lock`.

    static let sources = ODKValidate.projectRoot.appendingPathComponent("Tests/JavaRosa")
    static let classes = ODKValidate.projectRoot.appendingPathComponent(".build/javarosa-judge")

    struct Instance {
        /// What it is: `filled #3`, or `#3: constraint broken: /data/age = -1`.
        let label: String
        let xml: [UInt8]
        /// The files its file questions name (`1700000123456.jpg`), to send beside it.
        let files: [String]
    }

    /// One thing JavaRosa finds wrong with an instance.
    struct Failure: CustomStringConvertible {
        /// The question as XPath names it, repeat instances from 1: `/data/household/people[2]/age`.
        let question: String
        /// The answer's path as the server names it: `people[1].age`.
        let path: String
        let reason: String
        let value: String
        var description: String { "\(path): \(reason) [\(value)]" }
    }

    /// JavaRosa's verdict: valid, or the failures in the instance's order (the first is where Collect stops).
    struct Verdict {
        let failures: [Failure]
        var valid: Bool { failures.isEmpty }
    }

    struct Unavailable: Error, CustomStringConvertible {
        let description: String
    }

    private let process: SpawnedProcess
    private let lock = NSLock()
    private var buffer: [UInt8] = []

    private static let running = Mutex<JavaRosaJudge?>(nil)

    /// The judge of this test run, compiled and started on first use.
    static func shared() throws -> JavaRosaJudge {
        try running.withLock { judge in
            if let judge, judge.process.isRunning { return judge }
            try compile()
            let started = try JavaRosaJudge()
            judge = started
            return started
        }
    }

    private init() throws {
        // A write to a JVM that has ended must fail with EPIPE, not end the test process.
        signal(SIGPIPE, SIG_IGN)
        process = try SpawnedProcess("/usr/bin/env", [
            // UTF-8 as on Android (JavaRosa reads a CSV file in the default charset).
            "java", "-Djava.awt.headless=true", "-Dfile.encoding=UTF-8", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            // Collect writes times with the phone's offset: one west of Greenwich, so the offset is never `Z`.
            "-Duser.timezone=America/Lima",
            "-cp", Self.classes.path + ":" + ODKValidate.jar.path, "FormJudge",
        ], input: true, output: .pipe, error: .file(Self.classes.appendingPathComponent("stderr.log").path))
    }

    deinit {
        process.killNow()
    }

    /// `javac` over `Tests/JavaRosa/*.java` unless the classes are newer than every source.
    static func compile() throws {
        let fm = FileManager.default
        guard fm.fileExists(atPath: ODKValidate.jar.path) else {
            throw Unavailable(description: "ODK_Validate.jar is not at \(ODKValidate.jar.path): run scripts/setup.sh")
        }
        let sources = try fm.contentsOfDirectory(atPath: Self.sources.path).filter { $0.hasSuffix(".java") }.sorted()
            .map { Self.sources.appendingPathComponent($0).path }
        func modified(_ path: String) -> Date? { (try? fm.attributesOfItem(atPath: path))?[.modificationDate] as? Date }
        let newestSource = sources.compactMap(modified).max() ?? .distantFuture
        let stamp = Self.classes.appendingPathComponent("FormJudge.class").path
        if let built = modified(stamp), built > newestSource, modified(ODKValidate.jar.path).map({ built > $0 }) ?? true { return }

        // Compiled aside, then put in place, so a run that stops half way leaves no half-built classes.
        let aside = Self.classes.path + ".building-\(getpid())"
        try? fm.removeItem(atPath: aside)
        try fm.createDirectory(atPath: aside, withIntermediateDirectories: true)
        let ended: SpawnedProcess.Termination, output: Data
        do {
            (ended, output) = try SpawnedProcess.run("/usr/bin/env", ["javac", "-encoding", "UTF-8", "-nowarn", "-Xlint:none",
                                                                      "-cp", ODKValidate.jar.path, "-d", aside] + sources,
                                                     error: .standardOutput, timeout: 300)
        } catch {
            throw Unavailable(description: "javac could not start (\(error)): scripts/setup.sh installs openjdk-17-jdk-headless")
        }
        guard ended == .exited(0) else {
            try? fm.removeItem(atPath: aside)
            throw Unavailable(description: "javac refused Tests/JavaRosa (\(ended)):\n" + String(decoding: output, as: UTF8.self))
        }
        try? fm.removeItem(at: Self.classes)
        do {
            try fm.moveItem(atPath: aside, toPath: Self.classes.path)
        } catch {
            // Another test process put its own in place meanwhile: the same sources, compiled.
            try? fm.removeItem(atPath: aside)
            guard modified(stamp) != nil else { throw error }
        }
    }

    /// Loads an XForm (as downloaded from the door) under `form`, with the files of its manifest
    /// (a CSV file's secondary instance, pulldata()'s tables).
    func load(_ form: String, xform: [UInt8], files: [(name: String, bytes: [UInt8])] = []) throws {
        var named: [String: String] = [:]
        for file in files { named[file.name] = Data(file.bytes).base64EncodedString() }
        _ = try request(["op": "load", "form": form, "xform": String(decoding: xform, as: UTF8.self), "files": named])
    }

    /// `count` instances filled as Collect fills them from a generator seeded with `seed`, each
    /// followed by its deliberately broken copies.
    func fill(_ form: String, seed: Int, count: Int) throws -> [Instance] {
        let reply = try request(["op": "fill", "form": form, "seed": seed, "count": count])
        return (reply["instances"] as? [[String: Any]] ?? []).map {
            Instance(label: $0["label"] as? String ?? "", xml: Array(($0["xml"] as? String ?? "").utf8), files: $0["files"] as? [String] ?? [])
        }
    }

    func judge(_ form: String, instance: [UInt8]) throws -> Verdict {
        let reply = try request(["op": "judge", "form": form, "xml": String(decoding: instance, as: UTF8.self)])
        return Verdict(failures: (reply["failures"] as? [[String: Any]] ?? []).map {
            Failure(question: $0["question"] as? String ?? "", path: $0["path"] as? String ?? "",
                    reason: $0["reason"] as? String ?? "", value: $0["value"] as? String ?? "")
        })
    }

    private func request(_ body: [String: Any]) throws -> [String: Any] {
        try lock.withLock {
            var line = try JSONSerialization.data(withJSONObject: body)
            line.append(0x0A)
            guard process.isRunning, let input = process.standardInput else { throw Unavailable(description: "the JavaRosa judge has ended: \(stderrTail())") }
            try input.write(contentsOf: line)
            let answer = try readLine(timeout: 120)
            guard let reply = try JSONSerialization.jsonObject(with: Data(answer)) as? [String: Any] else {
                throw Unavailable(description: "the JavaRosa judge answered \(String(decoding: answer, as: UTF8.self))")
            }
            guard reply["ok"] as? Bool == true else {
                throw Unavailable(description: "the JavaRosa judge failed on \(body["op"] ?? "?"): \(reply["error"] as? String ?? "?")")
            }
            return reply
        }
    }

    /// The next line of the judge's standard output (under `lock`).
    private func readLine(timeout: TimeInterval) throws -> [UInt8] {
        guard let out = process.standardOutput else { throw Unavailable(description: "no pipe from the JavaRosa judge") }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return line
            }
            var poller = pollfd(fd: out.fileDescriptor, events: Int16(POLLIN), revents: 0)
            let left = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
            let ready = poll(&poller, 1, left)
            if ready == 0 {
                process.killNow()
                throw Unavailable(description: "the JavaRosa judge did not answer within \(Int(timeout)) s: \(stderrTail())")
            }
            if ready < 0 { if errno == EINTR { continue }; throw Unavailable(description: "poll: \(String(cString: strerror(errno)))") }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = chunk.withUnsafeMutableBytes { read(out.fileDescriptor, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw Unavailable(description: "read: \(String(cString: strerror(errno)))") }
            if n == 0 { throw Unavailable(description: "the JavaRosa judge ended: \(stderrTail())") }
            buffer += chunk[..<n]
        }
    }

    private func stderrTail() -> String {
        let log = (try? String(contentsOf: Self.classes.appendingPathComponent("stderr.log"), encoding: .utf8)) ?? ""
        return String(log.suffix(4000))
    }
}
