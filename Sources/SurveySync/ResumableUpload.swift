import Foundation

/// Sends one upload command's file through tus 1.0 (creation, checksum), resuming at the offset
/// the server confirms. The location and offset are written to the store after every chunk, so a
/// killed app or a dropped connection resumes instead of starting over. No request goes to an
/// address on another origin than the server's, whatever `Location` the server gave.
struct ResumableUpload: Sendable {
    let session: Session
    let transport: any HTTPTransport
    let chunkSize: Int
    /// Writes the command's progress to the store.
    let persist: @Sendable (OutboxCommand) throws -> Void

    static func metadataHeader(_ values: [String: String]) -> String {
        values.sorted { $0.key < $1.key }.map { "\($0.key) \(Data($0.value.utf8).base64EncodedString())" }.joined(separator: ",")
    }

    func run(_ command: OutboxCommand) async -> AttemptOutcome {
        var c = command
        do {
            // After an unclear earlier attempt the file may be complete already (its last answer lost).
            if c.attempts > 0 || c.ambiguous {
                let probe = try await send("GET", path: metadataPath(c))
                if probe.status == 200 { return verified(c, probe, note: "found complete on the server") }
                if probe.status != 404 { return AttemptOutcome.of(probe) }
            }
            var resumedFrom: Int64?
            if let location = c.uploadLocation {
                let head = try await send("HEAD", url: location, headers: ["Tus-Resumable": "1.0.0"])
                if head.status == 200 || head.status == 204, let offset = head.header("Upload-Offset").flatMap(Int64.init) {
                    c.uploadOffset = offset
                    resumedFrom = offset
                } else if head.status == 404 || head.status == 410 {
                    c.uploadLocation = nil  // expired or removed: start a new upload from byte 0
                    c.uploadOffset = 0
                } else {
                    return AttemptOutcome.of(head)
                }
                try persist(c)
            }
            if c.uploadLocation == nil {
                let created = try await send("POST", path: c.path, headers: [
                    "Tus-Resumable": "1.0.0", "Upload-Length": String(c.fileSize), "Upload-Metadata": c.headers["Upload-Metadata"] ?? "",
                ])
                guard created.status == 201 || created.status == 200, let location = created.header("Location") else { return AttemptOutcome.of(created) }
                // Not stored: the bearer token would go with every chunk to wherever it points.
                guard ServerAddress.onServer(location, server: session.owner.server) != nil else {
                    return .pointedElsewhere(status: created.status, location: location)
                }
                c.uploadLocation = location
                c.uploadOffset = 0
                try persist(c)
            }
            guard let path = c.filePath, let file = FileHandle(forReadingAtPath: path) else {
                return .refused(["The file saved with this response is missing from this device. Attach it again in a new copy."],
                                note: "file missing")
            }
            defer { try? file.close() }
            while c.uploadOffset < c.fileSize, let location = c.uploadLocation {
                try file.seek(toOffset: UInt64(c.uploadOffset))
                let chunk = try file.read(upToCount: chunkSize) ?? Data()
                guard !chunk.isEmpty else { return .refused(["The file saved with this response changed on this device."], note: "file short") }
                let answer = try await send("PATCH", url: location, headers: [
                    "Tus-Resumable": "1.0.0", "Content-Type": "application/offset+octet-stream",
                    "Upload-Offset": String(c.uploadOffset), "Upload-Checksum": "sha256 \(SHA256Digest.base64(chunk))",
                ], body: Array(chunk))
                if answer.status == 204, let offset = answer.header("Upload-Offset").flatMap(Int64.init) {
                    c.uploadOffset = offset
                    c.lastAnswer = resumedFrom.map { "resumed at byte \($0)" }
                    try persist(c)
                } else if answer.status == 409, let offset = answer.header("Upload-Offset").flatMap(Int64.init) {
                    c.uploadOffset = offset  // the server holds a different offset: continue from its
                    try persist(c)
                } else {
                    return AttemptOutcome.of(answer)
                }
            }
            let stored = try await send("GET", path: metadataPath(c))
            guard stored.status == 200 else { return AttemptOutcome.of(stored) }
            return verified(c, stored, note: resumedFrom.map { "uploaded; resumed at byte \($0)" } ?? "uploaded")
        } catch let elsewhere as OtherOrigin {
            // An address kept by a version that used any `Location`: forgotten, so a retry creates
            // the upload again; nothing was sent there.
            c.uploadLocation = nil
            c.uploadOffset = 0
            try? persist(c)
            return .pointedElsewhere(status: nil, location: elsewhere.location)
        } catch {
            return .ambiguous("no answer: \(error.localizedDescription)")
        }
    }

    /// A request was about to go to another origin than the server's; it did not leave.
    private struct OtherOrigin: Error { let location: String }

    private func metadataPath(_ c: OutboxCommand) -> String { "/v1/orgs/\(c.owner.organization)/uploads/\(c.id)" }

    /// The server's record of the upload must name the bytes this device holds.
    private func verified(_ c: OutboxCommand, _ metadata: IncomingAnswer, note: String) -> AttemptOutcome {
        struct Metadata: Decodable { let sha256: String? }
        let held = (try? JSONDecoder().decode(Metadata.self, from: Data(metadata.body)))?.sha256
        guard let expected = c.fileSHA256, held != expected else { return .held(.completed, responseId: nil, revision: nil, note: note) }
        return .refused(["The server holds other bytes for this file than this device has. Attach the file again in a new copy."],
                        note: "sha256 \(held ?? "missing") on the server, \(expected) here")
    }

    private func send(_ method: String, path: String, headers: [String: String] = [:], body: [UInt8] = []) async throws -> IncomingAnswer {
        guard let target = URL(string: session.owner.server + path) else { throw URLError(.badURL) }
        return try await send(method, target, headers: headers, body: body)
    }

    /// `url`: an upload address the server gave, read against the server address; refused
    /// (`OtherOrigin`) before anything is sent if it is on another origin.
    private func send(_ method: String, url: String, headers: [String: String] = [:], body: [UInt8] = []) async throws -> IncomingAnswer {
        guard let target = ServerAddress.onServer(url, server: session.owner.server) else { throw OtherOrigin(location: url) }
        return try await send(method, target, headers: headers, body: body)
    }

    private func send(_ method: String, _ target: URL, headers: [String: String], body: [UInt8]) async throws -> IncomingAnswer {
        var headers = headers
        headers["Authorization"] = "Bearer \(session.token)"
        return try await transport.send(OutgoingRequest(method: method, url: target, headers: headers, body: body))
    }
}
