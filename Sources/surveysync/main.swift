import Foundation
import SurveySync

/// `surveysync`: the SurveySync library from a shell, for demos and for tests that need a real
/// process (killed with SIGKILL right after a commit). See Docs/sdk.md.
let usage = """
usage:
  surveysync capture --store FILE --server URL --org ORG --user USER --version VERSION_ID --hash CONTENT_HASH
                     --answers JSON [--file QUESTION=PATH:TYPE]... [--title TEXT] [--id CLIENT_SUBMISSION_ID] [--hold]
  surveysync sync    --store FILE --server URL --org ORG --user USER [--token TOKEN] [--timeout SECONDS] [--stop-after-answer]
                     [--entity-list NAME]...
  surveysync status  --store FILE --server URL --org ORG --user USER [--entity-list NAME]...
  surveysync export-quarantine --store FILE --to DIR

The token comes from --token or SURVEYSYNC_TOKEN; it is only held in memory.
--hold keeps the process alive after the capture is committed (to be killed, as a phone's app is);
--stop-after-answer stops (sleeps) after the first server answer arrives and before it is recorded.
--entity-list names a list the device keeps a copy of: sync refreshes it, status prints it.
"""

struct Arguments {
    var command = ""
    var values: [String: [String]] = [:]
    var flags: Set<String> = []

    init(_ args: [String]) throws {
        var rest = args[...]
        guard let first = rest.popFirst() else { throw Failure(usage) }
        command = first
        while let arg = rest.popFirst() {
            guard arg.hasPrefix("--") else { throw Failure("unexpected \(arg)\n\n\(usage)") }
            let name = String(arg.dropFirst(2))
            if ["hold", "stop-after-answer", "help"].contains(name) { flags.insert(name); continue }
            guard let value = rest.popFirst() else { throw Failure("--\(name) needs a value") }
            values[name, default: []].append(value)
        }
    }

    func value(_ name: String) throws -> String {
        guard let v = values[name]?.last else { throw Failure("--\(name) is required\n\n\(usage)") }
        return v
    }
}

/// Writes a line straight to stdout (unbuffered: a test reads it before killing the process).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

func openOutbox(_ a: Arguments) throws -> Outbox {
    try Outbox(at: URL(fileURLWithPath: try a.value("store")))
}

func signIn(_ outbox: Outbox, _ a: Arguments) throws {
    let owner = Owner(server: try a.value("server"), organization: try a.value("org"), user: try a.value("user"))
    let token = a.values["token"]?.last ?? ProcessInfo.processInfo.environment["SURVEYSYNC_TOKEN"] ?? ""
    outbox.signIn(Session(owner: owner, token: token))
}

func printStatus(_ outbox: Outbox, entityLists: [String] = []) throws {
    for notice in outbox.notices() { print("! \(notice)") }
    for c in try outbox.commands() {
        print("\(c.id)\t\(c.kind.rawValue)\t\(c.title)\t\(c.stateLabel)\t\(c.lastAnswer ?? "")")
        for sentence in c.attention { print("  - \(sentence)") }
    }
    let m = try outbox.metrics()
    let counts = m.countsByState.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.label): \($0.value)" }
    print("counts: \(counts.joined(separator: ", "))")
    print("oldest waiting: \(m.oldestQueuedAge.map { "\(Int($0)) s" } ?? "none"); last sync: \(m.lastSuccessfulSync.map { "\($0)" } ?? "never")")
    for list in entityLists {
        let entities = try outbox.entities(in: list)
        print("entity list \(list): \(entities.count)")
        for e in entities {
            let properties = e.properties.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            print("  \(e.id)\tv\(e.version)\(e.isLocal ? " (on this device only)" : e.hasLocalChanges ? " (changed on this device)" : "")\t\(e.label)\t\(properties)")
        }
    }
}

func run() async throws {
    let a = try Arguments(Array(CommandLine.arguments.dropFirst()))
    if a.flags.contains("help") { print(usage); return }
    switch a.command {
    case "capture":
        let outbox = try openOutbox(a)
        try signIn(outbox, a)
        let answers = try AnswersJSON.decode(Data(try a.value("answers").utf8))
        let attachments = try (a.values["file"] ?? []).map { spec -> Outbox.Attachment in
            guard let eq = spec.firstIndex(of: "="), let colon = spec.lastIndex(of: ":") else { throw Failure("--file QUESTION=PATH:TYPE") }
            return Outbox.Attachment(questionId: String(spec[..<eq]), file: URL(fileURLWithPath: String(spec[spec.index(after: eq)..<colon])),
                                     contentType: String(spec[spec.index(after: colon)...]))
        }
        let command: OutboxCommand
        if let id = a.values["id"]?.last {
            command = try outbox.captureResponse(title: a.values["title"]?.last ?? "", surveyVersionId: try a.value("version"),
                                                 contentHash: try a.value("hash"), answers: answers, attachments: attachments, clientSubmissionId: id)
        } else {
            command = try outbox.captureResponse(title: a.values["title"]?.last ?? "", surveyVersionId: try a.value("version"),
                                                 contentHash: try a.value("hash"), answers: answers, attachments: attachments)
        }
        say("\(command.stateLabel)\t\(command.id)")
        if a.flags.contains("hold") { while true { sleep(60) } }
    case "sync":
        let outbox = try openOutbox(a)
        try signIn(outbox, a)
        var configuration = SyncConfiguration()
        configuration.entityLists = a.values["entity-list"] ?? []
        if a.flags.contains("stop-after-answer") {
            configuration.beforeRecordingAnswer = { command in
                say("answer received\t\(command.id)")
                while true { sleep(60) }
            }
        }
        let timeout = TimeInterval(a.values["timeout"]?.last ?? "") ?? 60
        let engine = SyncEngine(outbox: outbox, transport: URLSessionTransport(timeout: timeout), configuration: configuration)
        let report = await engine.syncNow()
        print("attempted \(report.attempted), now held by the server \(report.nowHeld)")
        if let target = report.redirectedTo { print("! \(SyncWords.redirect(to: target))") }
        if let target = report.uploadPointedTo { print("! \(SyncWords.uploadElsewhere(to: target))") }
        for list in report.entityListsRefreshed { print("entity list \(list): downloaded") }
        for list in report.entityListsUnchanged { print("entity list \(list): unchanged") }
        for (list, why) in report.entityListsFailed.sorted(by: { $0.key < $1.key }) { print("entity list \(list): not refreshed, \(why)") }
        try printStatus(outbox, entityLists: configuration.entityLists)
    case "status":
        let outbox = try openOutbox(a)
        try signIn(outbox, a)
        try printStatus(outbox, entityLists: a.values["entity-list"] ?? [])
    case "export-quarantine":
        let outbox = try openOutbox(a)
        let destination = URL(fileURLWithPath: try a.value("to"))
        for (index, q) in outbox.quarantinedStores.enumerated() {
            try q.export(to: destination.appendingPathComponent("store-\(index + 1)"))
            print("\(q.message)\t\(q.reason)")
        }
    default:
        throw Failure(usage)
    }
}

do {
    try await run()
} catch let error as OutboxError {
    FileHandle.standardError.write(Data("\(error.message)\n".utf8))
    exit(1)
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
