import Foundation
import Synchronization

/// Sends the signed-in person's outbox. There is no hidden timer: the app calls `syncNow()` when it
/// comes to the foreground, when the network returns, from a background task, or when the person
/// asks; each call is one pass and returns when it is over.
public final class SyncEngine: Sendable {
    let outbox: Outbox
    let transport: any HTTPTransport
    let configuration: SyncConfiguration
    private let passRunning = Mutex(false)

    public init(outbox: Outbox, transport: any HTTPTransport, configuration: SyncConfiguration = SyncConfiguration()) {
        self.outbox = outbox
        self.transport = transport
        self.configuration = configuration
    }

    var store: OutboxStore { outbox.store }
    var now: Date { outbox.configuration.now() }

    /// One pass: check a lapsed subscription, send every command that is due (files before the
    /// responses that cite them, a few at a time), follow the changes feed, then bring the
    /// phone's copies of entity lists up to date.
    public func syncNow() async -> SyncReport {
        var report = SyncReport()
        // One pass at a time: a foreground pass and a background task must not send a command twice at once.
        guard passRunning.withLock({ running in
            defer { running = true }
            return !running
        }) else {
            report.alreadyRunning = true
            return report
        }
        defer { passRunning.withLock { $0 = false } }
        guard let session = outbox.currentSession else {
            report.notSignedIn = true
            return report
        }
        let owner = session.owner
        do {
            if try store.ownerRecord(owner).refusedTokenSHA256 == session.tokenSHA256 {
                report.signInRequired = true
                return report
            }
            if try store.renewalRequired(server: owner.server, organization: owner.organization) {
                guard try await subscriptionIsActiveAgain(session, &report) else { return report }
            }
            try await sendDueCommands(session, &report)
            if !report.signInRequired { try await followChanges(session, &report) }
            if !report.signInRequired { try await refreshEntityLists(session, &report) }
            if report.reachedServer {
                var record = try store.ownerRecord(owner)
                record.lastSyncAt = now
                try store.saveOwnerRecord(owner, record)
            }
        } catch {
            // The store failed under us (disk full while recording). Everything recorded so far is
            // committed; the next pass starts from there.
            report.storeError = String(describing: error)
        }
        return report
    }

    // MARK: renewal

    /// After a 1001 nothing is sent for the organization until its subscription reads active;
    /// then its waiting commands go again, identical.
    private func subscriptionIsActiveAgain(_ session: Session, _ report: inout SyncReport) async throws -> Bool {
        let owner = session.owner
        guard let answer = try? await send(session, "GET", "/v1/orgs/\(owner.organization)/subscription") else { return false }
        if (300..<400).contains(answer.status) {
            // Not surveyd's answer, and nothing about the subscription: the organization keeps waiting.
            report.redirectedTo = AttemptOutcome.redirectTarget(answer.header("Location"), server: owner.server)
            report.renewalRequired = true
            return false
        }
        report.reachedServer = true
        if answer.status == 401 { try markSignInRequired(session, &report); return false }
        struct Subscription: Decodable { let status: String }
        guard answer.status == 200, (try? JSONDecoder().decode(Subscription.self, from: Data(answer.body)))?.status == "active" else {
            report.renewalRequired = true
            return false
        }
        try store.setRenewalRequired(false, server: owner.server, organization: owner.organization)
        for var c in try store.commands(of: owner) where c.state == .waitingForRenewal {
            c.state = .waitingToSync
            c.nextAttemptAt = now
            c.updatedAt = now
            try store.update(c)
        }
        return true
    }

    // MARK: sending

    private func sendDueCommands(_ session: Session, _ report: inout SyncReport) async throws {
        var finished = Set<String>()
        var running = Set<String>()
        var stop = false
        try await withThrowingTaskGroup(of: (OutboxCommand, AttemptOutcome).self) { group in
            while true {
                if !stop {
                    for c in try dueCommands(session.owner, excluding: finished.union(running)).prefix(configuration.maxConcurrentRequests - running.count) {
                        running.insert(c.id)
                        report.attempted += 1
                        group.addTask { (c, await self.attempt(c, session)) }
                    }
                }
                guard let (command, outcome) = try await group.next() else { break }
                running.remove(command.id)
                finished.insert(command.id)
                configuration.beforeRecordingAnswer?(command)
                try record(outcome, for: command.id, session: session, &report)
                if report.signInRequired || report.renewalRequired { stop = true }
            }
        }
    }

    /// Commands that may go now: queued, due, and every command they depend on held by the server.
    private func dueCommands(_ owner: Owner, excluding: Set<String>) throws -> [OutboxCommand] {
        let all = try store.commands(of: owner)
        let held = Set(all.filter { $0.state.isHeldByServer }.map(\.id))
        let moment = now
        return all.filter { c in
            (c.state == .savedOnDevice || c.state == .waitingToSync) && c.nextAttemptAt <= moment && !excluding.contains(c.id)
                && c.dependsOn.allSatisfy(held.contains)
        }
    }

    private func attempt(_ c: OutboxCommand, _ session: Session) async -> AttemptOutcome {
        switch c.kind {
        case .upload:
            let store = self.store
            return await ResumableUpload(session: session, transport: transport, chunkSize: configuration.uploadChunkSize,
                                         persist: { try store.update($0) }).run(c)
        case .response:
            if c.ambiguous {
                // The last attempt may have been stored: ask before sending it again.
                guard let answer = try? await send(session, "GET", "/v1/orgs/\(c.owner.organization)/responses?clientSubmissionId=\(c.id)") else {
                    return .ambiguous("no answer to the reconciliation")
                }
                if answer.status == 200 { return Self.held(answer, note: "reconciled: the server had it") }
                if answer.status != 404 { return AttemptOutcome.of(answer) }
            }
            return await sendCaptured(c, session)
        case .resubmission:
            // Its Idempotency-Key makes the identical resend safe: a stored one answers the stored answer.
            return await sendCaptured(c, session)
        }
    }

    /// Sends the request exactly as captured.
    private func sendCaptured(_ c: OutboxCommand, _ session: Session) async -> AttemptOutcome {
        let answer: IncomingAnswer
        do {
            answer = try await send(session, c.method, c.path, headers: c.headers, body: c.body)
        } catch {
            return .ambiguous("no answer: \(error.localizedDescription)")
        }
        guard (200..<300).contains(answer.status) else { return AttemptOutcome.of(answer) }
        let replayed = answer.header("Idempotent-Replayed") == "true" || answer.status == 200
        return Self.held(answer, note: replayed ? "HTTP \(answer.status) replayed: already stored" : "HTTP \(answer.status) stored")
    }

    /// A receipt or response body: the state the server gives it.
    static func held(_ answer: IncomingAnswer, note: String) -> AttemptOutcome {
        struct Receipt: Decodable { let responseId: String?; let reviewState: String?; let revision: Int? }
        let receipt = try? JSONDecoder().decode(Receipt.self, from: Data(answer.body))
        return .held(state(ofReviewState: receipt?.reviewState), responseId: receipt?.responseId, revision: receipt?.revision, note: note)
    }

    static func state(ofReviewState reviewState: String?) -> CommandState {
        switch reviewState {
        case "none"?, "approved"?: .completed
        case "returned"?: .returnedForCorrection
        case "rejected"?: .rejected
        default: .submitted
        }
    }

    /// Writes an attempt's outcome to the store (re-reading the command: an upload wrote progress).
    private func record(_ outcome: AttemptOutcome, for id: String, session: Session, _ report: inout SyncReport) throws {
        guard var c = try store.command(id) else { return }
        let moment = now
        c.updatedAt = moment
        switch outcome {
        case .held(let state, let responseId, let revision, let note):
            report.reachedServer = true
            report.nowHeld += 1
            c.state = state
            c.responseId = responseId ?? c.responseId
            c.revision = revision ?? c.revision
            c.ambiguous = false
            c.attention = []
            c.lastAnswer = note
        case .ambiguous(let note):
            c.attempts += 1
            c.state = .waitingToSync
            c.ambiguous = true
            c.lastAnswer = note
            c.nextAttemptAt = moment.addingTimeInterval(configuration.backoff(afterAttempts: c.attempts))
        case .retryLater(let after, let note):
            report.reachedServer = true
            c.attempts += 1
            c.state = .waitingToSync
            c.lastAnswer = note
            c.nextAttemptAt = moment.addingTimeInterval(after ?? configuration.backoff(afterAttempts: c.attempts))
        case .renewalRequired:
            report.reachedServer = true
            report.renewalRequired = true
            c.state = .waitingForRenewal
            c.lastAnswer = "HTTP 402 errorCode 1001"
            try store.setRenewalRequired(true, server: c.owner.server, organization: c.owner.organization)
            // Everything else queued for the organization waits too: it would meet the same gate.
            for var other in try store.commands(of: c.owner) where other.id != c.id && (other.state == .savedOnDevice || other.state == .waitingToSync) {
                other.state = .waitingForRenewal
                other.updatedAt = moment
                try store.update(other)
            }
        case .signInRequired:
            report.reachedServer = true
            c.lastAnswer = "HTTP 401"
            try markSignInRequired(session, &report)
        case .refused(let sentences, let note):
            report.reachedServer = true
            c.ambiguous = false
            try needAttention(&c, sentences, note: note)
        case .redirected(let status, let location):
            // Not surveyd's answer, so no successful sync; kept as captured until a person acts
            // (retrying by itself would meet the same redirect). `ambiguous` stays as it was: a
            // redirect says nothing about whether an earlier unclear attempt was stored.
            let target = AttemptOutcome.redirectTarget(location, server: c.owner.server)
            report.redirectedTo = target
            try needAttention(&c, [SyncWords.redirect(to: target)], note: "HTTP \(status) redirect" + (target.isEmpty ? "" : " to \(target)"))
        case .pointedElsewhere(let status, let location):
            // Treated as a redirect: kept (the file too) until a person acts, not a successful sync.
            let target = AttemptOutcome.redirectTarget(location, server: c.owner.server)
            report.uploadPointedTo = target
            let answer = status.map { "HTTP \($0) upload Location" } ?? "stored upload Location"
            try needAttention(&c, [SyncWords.uploadElsewhere(to: target)],
                              note: "\(answer) on another origin" + (target.isEmpty ? "" : ", \(target)") + ": nothing sent there")
        }
        try store.update(c)
    }

    /// Needs attention with `sentences`; a response whose file cannot go cannot go either, and says so.
    private func needAttention(_ c: inout OutboxCommand, _ sentences: [String], note: String) throws {
        c.state = .needsAttention
        c.attempts += 1
        c.attention = sentences
        c.lastAnswer = note
        for var dependent in try store.commands(of: c.owner) where dependent.dependsOn.contains(c.id) && dependent.state.isQueued {
            dependent.state = .needsAttention
            dependent.attention = ["A file attached to this response could not be sent."] + sentences
            dependent.updatedAt = c.updatedAt
            try store.update(dependent)
        }
    }

    func markSignInRequired(_ session: Session, _ report: inout SyncReport) throws {
        report.signInRequired = true
        let owner = session.owner
        var record = try store.ownerRecord(owner)
        record.refusedTokenSHA256 = session.tokenSHA256
        try store.saveOwnerRecord(owner, record)
    }

    // MARK: the changes feed

    /// Follows the feed from the stored cursor so what the server holds moves on (returned,
    /// approved, rejected) without anything being sent again.
    private func followChanges(_ session: Session, _ report: inout SyncReport) async throws {
        struct Page: Decodable {
            struct Change: Decodable { let cursor: String; let kind: String; let id: String; let reviewState: String?; let revision: Int? }
            let items: [Change]
            let nextCursor: String?
        }
        let owner = session.owner
        var record = try store.ownerRecord(owner)
        for _ in 0..<100 {  // at most 100 pages a pass; the rest next time
            var path = "/v1/orgs/\(owner.organization)/changes?limit=200"
            if let cursor = record.changesCursor { path += "&after=\(cursor.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? cursor)" }
            guard let answer = try? await send(session, "GET", path) else { return }
            if answer.status == 401 { try markSignInRequired(session, &report); return }
            if (300..<400).contains(answer.status) {
                report.redirectedTo = AttemptOutcome.redirectTarget(answer.header("Location"), server: owner.server)
                return
            }
            if answer.status == 422, record.changesCursor != nil {
                // A cursor the server no longer reads (a server that now seals its cursors):
                // follow the feed from its start; applying a change twice changes nothing.
                record.changesCursor = nil
                try store.saveOwnerRecord(owner, record)
                continue
            }
            guard answer.status == 200, let page = try? JSONDecoder().decode(Page.self, from: Data(answer.body)) else { return }
            report.reachedServer = true
            let commands = try store.commands(of: owner)
            for change in page.items where change.kind == "response" {
                for var c in commands where c.responseId == change.id && c.state.isHeldByServer {
                    c.state = Self.state(ofReviewState: change.reviewState)
                    c.revision = change.revision ?? c.revision
                    c.updatedAt = now
                    try store.update(c)
                }
            }
            if let last = page.items.last { record.changesCursor = page.nextCursor ?? last.cursor }
            try store.saveOwnerRecord(owner, record)
            if page.nextCursor == nil || page.items.isEmpty { return }
        }
    }

    func send(_ session: Session, _ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8] = []) async throws -> IncomingAnswer {
        guard let url = URL(string: session.owner.server + path) else { throw URLError(.badURL) }
        var headers = headers
        headers["Authorization"] = "Bearer \(session.token)"
        return try await transport.send(OutgoingRequest(method: method, url: url, headers: headers, body: body))
    }
}
