import Foundation
import Testing

/// `--instance-name` names the process on every `/metrics` series, so an operator running
/// several processes on one database tells them apart; a name that could break the exposition
/// format is refused before anything starts.
@Suite struct ProcessLabelTests {
    @Test func theInstanceNameLabelsEverySeries() throws {
        let server = ServerProcess()
        try server.start(extra: ["--instance-name", "field-node-2"])
        defer { _ = server.terminate() }
        let seed = try server.seed()
        let m = try server.client.get("/metrics", token: seed.operatorToken)
        #expect(m.status == 200)
        let samples = m.text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(!samples.isEmpty && samples.allSatisfy { $0.contains("{process=\"field-node-2\"") }, "\(m.text.prefix(600))")
        #expect(m.text.contains("surveyd_process_info{process=\"field-node-2\",hostname=\""))
        #expect(m.text.contains("surveyd_http_requests_total{process=\"field-node-2\",route=\""), "\(m.text.prefix(600))")
    }

    /// An operator reading `top -H` or a profile sees which thread writes: Linux keeps a thread's
    /// name only when it fits in 15 bytes.
    @Test func theWritingThreadsAreNamedWhereTheKernelShowsThem() throws {
        let server = ServerProcess()
        try server.start(extra: TestEngine.isPostgres ? ["--database-writers", "2"] : [])
        defer { _ = server.terminate() }
        let pid = try #require(server.process?.pid)
        func names() throws -> Set<String> {
            let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
            return Set(tasks.compactMap { try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8) }
                .map { $0.trimmingCharacters(in: .newlines) })
        }
        let writers: Set<String> = TestEngine.isPostgres ? ["surveyd-pgw0", "surveyd-pgw1"] : ["surveyd-writer"]
        // A writer names itself when its thread starts, which may be just after the server answers
        // (under load, well after): a survey and a version are written through the server first, so
        // its writer has run.
        _ = try server.seed()
        var seen = try names()
        let deadline = Date().addingTimeInterval(10)
        while !writers.isSubset(of: seen) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            seen = try names()
        }
        #expect(writers.isSubset(of: seen), "threads: \(seen.sorted())")
    }

    @Test(arguments: ["two words", "quote\"d", String(repeating: "n", count: 129)])
    func aNameThatCannotBeALabelIsRefused(name: String) throws {
        let dir = try CommandLineTests.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = try CommandLineTests.run(["serve", "--port", "0", "--instance-name", name], in: dir)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("--instance-name must be"), "stderr: \(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing may be created")
    }

    /// `--database-writers` is PostgreSQL's (SQLite has one writer) and is bounded; either
    /// refusal comes before anything is created or connected to.
    @Test(arguments: [
        (["--database-writers", "2"], "--database-writers applies to --database-url only"),
        (["--database-url", "postgresql:///nowhere?host=/nonexistent", "--database-writers", "0"], "--database-writers must be 1-64"),
        (["--database-url", "postgresql:///nowhere?host=/nonexistent", "--database-writers", "65"], "--database-writers must be 1-64"),
        (["--database-url", "postgresql:///nowhere?host=/nonexistent", "--database-writers", "many"], "--database-writers must be 1-64"),
    ])
    func writerCountsThatCannotBeUsedAreRefused(arguments: [String], message: String) throws {
        let dir = try CommandLineTests.emptyDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outcome = try CommandLineTests.run(["serve", "--port", "0"] + arguments, in: dir)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains(message), "stderr: \(outcome.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "nothing may be created")
    }
}
