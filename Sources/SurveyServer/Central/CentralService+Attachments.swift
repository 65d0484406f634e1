import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// A submission's files under ODK Central's paths: the list (`[{name, exists}]`), each file's
/// bytes, and a file POSTed after the XML (`CentralSubmissionFiles`), streamed into a temp file
/// once the caller is known and never held in memory.
extension CentralService {
    func registerAttachments(into router: inout Router) {
        let path = "/v1/projects/{projectId}/forms/{xmlFormId}/submissions/{instanceId}/attachments"
        let readers = Access.member(anyOf: [])
        router.add("GET", path, access: readers) { request in CentralRefusal.answer { try attachments(request) } }
        router.add("GET", path + "/{name}", access: readers, runs: .blocking) { request in CentralRefusal.answer { try attachment(request) } }
        router.add("POST", path + "/{name}", access: Submissions.access, streamingTo: receiveAttachment) { request in
            CentralRefusal.answer { try attachToSubmission(request) }
        }
    }

    /// A stored submission's files are its file answers' uploads (named as its sender named them,
    /// else by their upload id), all here; a waiting one's are the files its XML names.
    func attachments(_ request: HTTPRequest) throws -> HTTPResponse {
        switch try visibleOrWaiting(request) {
        case .stored(let r):
            return .json(200, .array(try storedFiles(r).map { ["name": .string($0.fileName ?? $0.clientUploadId), "exists": .bool(true)] }))
        case .waiting(let w):
            return .json(200, .array(try operations.centralSubmissionFiles.files(of: w).map { ["name": .string($0.name), "exists": .bool($0.exists)] }))
        }
    }

    func attachment(_ request: HTTPRequest) throws -> HTTPResponse {
        let name = request.parameter("name")
        guard case .stored(let r) = try visibleOrWaiting(request),
              let u = try storedFiles(r).first(where: { ($0.fileName ?? $0.clientUploadId) == name }) else {
            throw ApiError(.notFound, "The submission has no file \(name) here.")
        }
        guard let answer = HTTPResponse.storedFile(services.blobs, sha256: u.sha256, size: u.size, headers: [
            ("Content-Type", u.contentType), ("X-Content-Type-Options", "nosniff"),
            ("Content-Disposition", "attachment; filename=\"\(Self.headerSafe(name))\""), ("Cache-Control", "private, no-store"),
        ]) else { throw ApiError(.storageUnavailable, "The file cannot be read.") }
        return answer
    }

    /// The body goes to a temp file only once its sender is known and the project is theirs.
    func receiveAttachment(_ head: RequestHead) throws -> any BodySink {
        do {
            let caller = try services.authenticate(head)
            guard let projectId = CentralIds.projectId(head.parameter("projectId")),
                  let org = try services.database.read({ try $0.org(projectId: projectId) }),
                  caller.user?.orgId == org.orgId else { throw ApiError.notFound() }
            let type = head.header("content-type") ?? ""
            return ReceivedFileSink(try operations.uploads.receive(fileName: head.parameter("name"), contentType: type.isEmpty ? "application/octet-stream" : type))
        } catch {
            throw CentralRefusal.beforeTheBody(error)
        }
    }

    /// `{success: true}` once the file is kept; the last file the XML waited for makes the
    /// submission, through the submission operation (its refusal is this answer's).
    func attachToSubmission(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let sink = request.sink as? ReceivedFileSink else { throw ApiError(.internalError) }
        defer { sink.file.discard() }
        try sink.file.finish()
        let (caller, org) = try admit(request, Submissions.access)
        _ = try listedForm(request, orgId: org.orgId)
        let instanceId = request.parameter("instanceId")
        guard ClientIdentifier.isValid(instanceId) else { throw ApiError.notFound() }
        switch try operations.centralSubmissionFiles.attach(orgId: org.orgId, instanceId: instanceId, by: caller, file: sink.file) {
        case .stored(let r):
            return .replayed(.json(200, ["success": .bool(true)])).logging(["responseId": r.responseId])
        case .waiting:
            return .json(200, ["success": .bool(true)])
        case .complete(let instance):
            let door = CentralSubmissionDoor(bearerToken: request.head.bearerToken, xmlFormId: request.parameter("xmlFormId"), xml: instance)
            let answer = DeferredResponse()
            operations.submissions.submit(orgId: org.orgId, from: door) { outcome in
                answer.complete {
                    switch outcome {
                    case .accepted(let r), .replayed(let r): return HTTPResponse.json(200, ["success": .bool(true)]).logging(["responseId": r.responseId])
                    case .refused(let e): return CentralRefusal.problem(Self.refusal(e))
                    }
                }
            }
            return .later(answer)
        }
    }

    enum StoredOrWaiting { case stored(ResponseRecord), waiting(WaitingSubmissionRecord) }

    /// The path's submission as the caller may see it: stored, or (its submitter's) waiting for files.
    func visibleOrWaiting(_ request: HTTPRequest) throws -> StoredOrWaiting {
        do {
            return .stored(try visibleSubmission(request).1)
        } catch let e as ApiError where e.code == .notFound {
            let (user, org) = try admitMember(request)
            guard let w = try operations.centralSubmissionFiles.waiting(orgId: org.orgId, instanceId: request.parameter("instanceId"), by: user),
                  w.surveyId == (try listedForm(request, orgId: org.orgId)).survey.surveyId else { throw e }
            return .waiting(w)
        }
    }

    /// The uploads a stored response's file answers cite (anywhere, repeats included), each once.
    func storedFiles(_ r: ResponseRecord) throws -> [UploadRecord] {
        var seen = Set<String>()
        let ids = Uploads.citedIds(in: (try? JSONParser.parse(Array(r.answers.utf8))) ?? .null).filter { seen.insert($0).inserted }
        return try services.database.read { db in try ids.compactMap { try db.upload(orgId: r.orgId, clientUploadId: $0) } }
    }

    static func refusal(_ e: any Error) -> ApiError {
        e as? ApiError ?? ApiError(.internalError, "The server could not take this submission; keep it and try again later.")
    }

    /// A file name as a header's quoted string carries it.
    static func headerSafe(_ name: String) -> String {
        String(name.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7f && $0 != "\"" && $0 != "\\" }.map(Character.init))
    }
}

/// A Central attachment's body, as libmicrohttpd delivers it, into the operation's `ReceivedFile`.
final class ReceivedFileSink: BodySink, Sendable {
    let file: ReceivedFile
    init(_ file: ReceivedFile) { self.file = file }
    func write(_ bytes: UnsafeRawBufferPointer) throws { try file.write(bytes) }
    func abort() { file.discard() }
}
