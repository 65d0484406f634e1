import Foundation
import SurveyForms
import Synchronization

/// The durable outbox on the device. Every capture is committed to SQLite before the call returns:
/// when `captureResponse` returns, the app may show "Saved on this device"; when it throws,
/// nothing was saved and the app must say so (`OutboxError.message`).
public final class Outbox: Sendable {
    public struct Configuration: Sendable {
        /// Caps the store's size in SQLite pages (of 4 KiB). nil: bounded by the disk only.
        public var maxStorePages: Int?
        /// The clock for capture times and backoff; tests pass their own.
        public var now: @Sendable () -> Date

        public init(maxStorePages: Int? = nil, now: @escaping @Sendable () -> Date = { Date() }) {
            self.maxStorePages = maxStorePages
            self.now = now
        }
    }

    let store: OutboxStore
    let configuration: Configuration
    /// Where the files of uploads are copied at capture (beside the store).
    let filesDirectory: URL
    let quarantineDirectory: URL
    private let session = Mutex<Session?>(nil)

    /// Opens the store at `url`, creating it, or migrating one written by an older version of the
    /// library. A store that cannot be read whole is moved aside (see `quarantinedStores`) and a
    /// new one is opened; it is never reported as an empty outbox.
    public init(at url: URL, configuration: Configuration = Configuration()) throws {
        self.configuration = configuration
        let base = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        filesDirectory = base.appendingPathComponent(url.lastPathComponent + ".files")
        quarantineDirectory = base.appendingPathComponent(url.lastPathComponent + ".quarantine")
        do {
            store = try OutboxStore(path: url.path, maxPageCount: configuration.maxStorePages)
        } catch let error as SQLiteError where error.isFull {
            throw OutboxError.storageFull
        } catch let error where Self.isDamage(error) {
            // Kept aside whole, never written over; a new store takes new work.
            // The technical reason, for a support report (an `OutboxError` describes itself with the person's sentence).
            let reason = if case OutboxError.unreadable(let why) = error { why } else { String(describing: error) }
            _ = try QuarantinedStore.quarantine(storePath: url.path, reason: reason, root: quarantineDirectory)
            store = try OutboxStore(path: url.path, maxPageCount: configuration.maxStorePages)
        } catch let error as OutboxError {
            throw error
        } catch {
            throw OutboxError.unavailable(String(describing: error))
        }
        try FileManager.default.createDirectory(at: filesDirectory, withIntermediateDirectories: true)
    }

    /// Damage means the file's content cannot be trusted; anything else (a locked or busy file) is not.
    private static func isDamage(_ error: any Error) -> Bool {
        if let error = error as? SQLiteError { return error.isDamage }
        if case OutboxError.unreadable = error { return true }
        return false
    }

    /// Closes the database; the object must not be used afterwards.
    public func close() { store.close() }

    // MARK: who is signed in

    /// The person whose queue is shown and sent. Signing in again as the same owner resumes their
    /// queue; a token other than the one the server refused lifts a "sign in again" request.
    public func signIn(_ newSession: Session) {
        session.withLock { $0 = newSession }
    }

    /// Suspends the signed-in person's queue: it stays on the device untouched, is not sent and
    /// not shown until they sign in again.
    public func signOut() {
        session.withLock { $0 = nil }
    }

    public var currentSession: Session? { session.withLock { $0 } }

    func requireOwner() throws -> Owner {
        guard let owner = currentSession?.owner else { throw OutboxError.notSignedIn }
        return owner
    }

    // MARK: capture

    /// A file a response cites: copied into the outbox at capture, sent through tus before the response.
    public struct Attachment: Sendable {
        public let questionId: String
        public let file: URL
        public let contentType: String
        public init(questionId: String, file: URL, contentType: String) {
            self.questionId = questionId
            self.file = file
            self.contentType = contentType
        }
    }

    /// Captures one response (and its files) for the signed-in person, committed in one
    /// transaction. `answers` is the JSON object of answers; each attachment's answer is set to
    /// `{"clientUploadId": ...}` here. `entity`: what the response does to an entity of the form's
    /// list (`{"id", "create": true, "label"}` or `{"id", "update": true, "baseVersion"}`), sent with
    /// it and applied with it. `entities`: the entities of a form's groups and repeats (Entities
    /// 2025.1), each `entity` with its `"container"` and, in a repeat, `"index"`, the repeat
    /// instance from 0 (Docs/entities.md), sent and applied with it too. `form`: the version's
    /// form; with `entity`, the change shows in `entities(in:)` at once, before it is sent.
    /// Returns the response's command (its id is the `clientSubmissionId`).
    @discardableResult
    public func captureResponse(title: String = "", surveyVersionId: String, contentHash: String, answers: [String: any Sendable],
                                attachments: [Attachment] = [], fieldTaskId: String? = nil, entity: [String: any Sendable]? = nil,
                                entities: [[String: any Sendable]] = [], form: SurveyForm? = nil,
                                clientSubmissionId: String = UUID().uuidString.lowercased()) throws -> OutboxCommand {
        let owner = try requireOwner()
        let now = configuration.now()
        var answers = answers
        var uploads: [OutboxCommand] = []
        var copied: [URL] = []
        do {
            for attachment in attachments {
                let uploadId = UUID().uuidString.lowercased()
                let copy = filesDirectory.appendingPathComponent(uploadId)
                let (size, sha256) = try copyFile(attachment.file, to: copy)
                copied.append(copy)
                answers[attachment.questionId] = ["clientUploadId": uploadId]
                let metadata = ["clientUploadId": uploadId, "surveyVersionId": surveyVersionId,
                                "questionId": attachment.questionId, "contentType": attachment.contentType]
                uploads.append(newCommand(id: uploadId, owner: owner, kind: .upload, title: title, method: "POST",
                                          path: "/v1/orgs/\(owner.organization)/uploads/resumable",
                                          headers: ["Upload-Metadata": ResumableUpload.metadataHeader(metadata)], body: [],
                                          file: (copy.path, size, sha256), dependsOn: [], now: now))
            }
            var envelope: [String: any Sendable] = ["clientSubmissionId": clientSubmissionId, "surveyVersionId": surveyVersionId,
                                                    "contentHash": contentHash, "answers": answers,
                                                    "capturedAt": ISO8601DateFormatter().string(from: now)]
            if let fieldTaskId { envelope["fieldTaskId"] = fieldTaskId }
            if let entity { envelope["entity"] = entity }
            if !entities.isEmpty { envelope["entities"] = entities }
            let response = newCommand(id: clientSubmissionId, owner: owner, kind: .response, title: title, method: "POST",
                                      path: "/v1/orgs/\(owner.organization)/responses",
                                      headers: ["Content-Type": "application/json"], body: try jsonBytes(envelope),
                                      file: nil, dependsOn: uploads.map(\.id), now: now)
            let change = entity.flatMap { entity in form?.entityChange(entity, answers: answers) }
            try commit(uploads + [response], entityChanges: change.map { [clientSubmissionId: $0] } ?? [:])
            return response
        } catch {
            for url in copied { try? FileManager.default.removeItem(at: url) }
            throw error
        }
    }

    /// Captures a correction of a response a reviewer returned. `expectedRevision` is the revision
    /// the person corrected (from `OutboxCommand.revision` or the changes feed).
    @discardableResult
    public func captureResubmission(title: String = "", responseId: String, expectedRevision: Int, surveyVersionId: String,
                                    contentHash: String, answers: [String: any Sendable],
                                    idempotencyKey: String = UUID().uuidString.lowercased()) throws -> OutboxCommand {
        let owner = try requireOwner()
        let body: [String: any Sendable] = ["expectedRevision": expectedRevision, "surveyVersionId": surveyVersionId,
                                            "contentHash": contentHash, "answers": answers]
        var command = newCommand(id: idempotencyKey, owner: owner, kind: .resubmission, title: title, method: "POST",
                                 path: "/v1/orgs/\(owner.organization)/responses/\(responseId)/resubmit",
                                 headers: ["Content-Type": "application/json", "Idempotency-Key": idempotencyKey],
                                 body: try jsonBytes(body), file: nil, dependsOn: [], now: configuration.now())
        command.responseId = responseId
        try commit([command])
        return command
    }

    private func newCommand(id: String, owner: Owner, kind: CommandKind, title: String, method: String, path: String,
                            headers: [String: String], body: [UInt8], file: (String, Int64, String)?, dependsOn: [String],
                            now: Date) -> OutboxCommand {
        OutboxCommand(id: id, owner: owner, kind: kind, title: title, method: method, path: path, headers: headers, body: body,
                      filePath: file?.0, fileSize: file?.1 ?? 0, fileSHA256: file?.2, dependsOn: dependsOn,
                      state: .savedOnDevice, attempts: 0, nextAttemptAt: now, ambiguous: false, lastAnswer: nil, attention: [],
                      responseId: nil, revision: nil, uploadLocation: nil, uploadOffset: 0, capturedAt: now, updatedAt: now)
    }

    private func commit(_ commands: [OutboxCommand], entityChanges: [String: CapturedEntityChange] = [:]) throws {
        for c in commands where !ClientIdentifier.isValid(c.id) {
            throw OutboxError.invalidCapture("the id \(c.id) is not 8-128 characters of A-Z a-z 0-9 _ - : .")
        }
        do {
            try store.insert(commands, entityChanges: entityChanges)
        } catch let error as SQLiteError where error.isFull {
            throw OutboxError.storageFull
        } catch let error as SQLiteError where error.isIO {
            throw OutboxError.storageFailed
        }
    }

    private func jsonBytes(_ object: [String: any Sendable]) throws -> [UInt8] {
        guard JSONSerialization.isValidJSONObject(object) else { throw OutboxError.invalidCapture("the answers are not JSON") }
        return Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// Copies a file in chunks, hashing as it goes; a full disk is `storageFull`.
    private func copyFile(_ source: URL, to destination: URL) throws -> (Int64, String) {
        guard let input = FileHandle(forReadingAtPath: source.path) else {
            throw OutboxError.invalidCapture("the file \(source.lastPathComponent) cannot be read")
        }
        defer { try? input.close() }
        guard FileManager.default.createFile(atPath: destination.path, contents: nil),
              let output = FileHandle(forWritingAtPath: destination.path) else { throw OutboxError.storageFull }
        defer { try? output.close() }
        var hasher = SHA256FileHasher()
        var size: Int64 = 0
        while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
            do { try output.write(contentsOf: chunk) } catch { throw OutboxError.storageFull }
            hasher.update(chunk)
            size += Int64(chunk.count)
        }
        do { try output.synchronize() } catch { throw OutboxError.storageFull }
        return (size, hasher.finish())
    }

    // MARK: reading

    /// The signed-in person's commands in capture order; nobody signed in sees nothing.
    public func commands() throws -> [OutboxCommand] {
        guard let owner = currentSession?.owner else { return [] }
        return try store.commands(of: owner)
    }

    public func command(_ id: String) throws -> OutboxCommand? {
        guard let owner = currentSession?.owner, let c = try store.command(id), c.owner == owner else { return nil }
        return c
    }

    /// The entities of `list` as the signed-in person's phone knows them: the copy the last sync
    /// downloaded (`SyncConfiguration.entityLists`), with the changes of their captured work that
    /// the copy does not show yet laid over it, in capture order — an entity registered on the
    /// phone appears (version 1, `isLocal`), an update shows its values. The server's order (by
    /// id), then the phone's registrations in capture order. Nobody signed in, or never
    /// downloaded and nothing captured: empty.
    public func entities(in list: String) throws -> [LocalEntity] {
        guard let owner = currentSession?.owner else { return [] }
        let copy = try store.entityList(owner, list)
        return EntityOverlay.entities(server: copy?.list.entities ?? [], pending: try store.pendingEntityChanges(owner, list: list))
    }

    /// One entity of `list` as the phone knows it (see `entities(in:)`).
    public func entity(_ id: String, in list: String) throws -> LocalEntity? {
        try entities(in: list).first { $0.id == id }
    }

    /// A person fixed the cause elsewhere (a role given back, the survey downloaded again) and
    /// asks to send a command that needs attention again, identical; it goes on the next pass.
    public func retry(_ id: String) throws {
        guard var c = try command(id), c.state == .needsAttention else { return }
        c.state = .waitingToSync
        c.attention = []
        c.nextAttemptAt = configuration.now()
        c.updatedAt = c.nextAttemptAt
        try store.update(c)
    }

    /// A person discarded a command that needs attention (the app asks for confirmation first).
    public func discard(_ id: String) throws {
        guard let c = try command(id), c.state == .needsAttention else { return }
        try store.delete(id)
        if let file = c.filePath { try? FileManager.default.removeItem(atPath: file) }
    }

    /// Stores that could not be read and were kept aside; show `message` and offer export.
    public var quarantinedStores: [QuarantinedStore] { QuarantinedStore.all(under: quarantineDirectory) }

    /// The signed-in person must sign in again before anything is sent (the server refused the token).
    public var signInRequired: Bool {
        guard let session = currentSession else { return false }
        return (try? store.ownerRecord(session.owner).refusedTokenSHA256) == session.tokenSHA256
    }

    /// The signed-in person's organization must renew its subscription before anything is sent.
    public var renewalRequired: Bool {
        guard let owner = currentSession?.owner else { return false }
        return (try? store.renewalRequired(server: owner.server, organization: owner.organization)) ?? false
    }

    /// Sentences for the top of the app's outbox screen, most urgent first.
    public func notices() -> [String] {
        var out = quarantinedStores.map(\.message)
        if signInRequired { out.append(SyncWords.signInAgain) }
        if renewalRequired { out.append(SyncWords.renewalRequired) }
        return out
    }

    public func metrics() throws -> SyncMetrics {
        let commands = try commands()
        var counts: [CommandState: Int] = [:]
        for c in commands { counts[c.state, default: 0] += 1 }
        let oldest = commands.filter { $0.state.isQueued }.map(\.capturedAt).min()
        let lastSync = try currentSession.map { try store.ownerRecord($0.owner).lastSyncAt } ?? nil
        return SyncMetrics(oldestQueuedAge: oldest.map { configuration.now().timeIntervalSince($0) }, lastSuccessfulSync: lastSync,
                           countsByState: counts, quarantinedStores: quarantinedStores.count)
    }
}
