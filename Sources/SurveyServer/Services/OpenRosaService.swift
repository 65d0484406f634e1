import Dispatch
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage
import SurveyExports
import SurveyXForm

/// The OpenRosa door (`Docs/odk-collect.md`): what ODK Collect, KoboCollect and Enketo call at
/// `{server}/v1/key/{token}/orgs/{orgId}` — the form list, the XForm download, and submissions,
/// which run the same submission operation as the JSON API. Every answer carries
/// `X-OpenRosa-Version: 1.0`; a refusal is an OpenRosaResponse whose message a collector can act
/// on, with the contract's code in `Surveyd-Error-Code`.
struct OpenRosaService {
    let services: Services
    static let base = "/v1/key/{token}/orgs/{orgId}"

    func register(into router: inout Router) {
        // The server's own refusals under the door (no such path, a method it does not take, a
        // body over the limit) are OpenRosa documents too.
        router.refusals(under: "/v1/key") { error, status, path in
            // `/v1/key//…`: no route has an empty token, but for the phone it is a missing token.
            if error.code == .notFound, path.hasPrefix("/v1/key//") {
                return Self.refusal(OpenRosaSubmissionDoor.notACollectorsToken, status: 403)
            }
            return Self.refusal(error, status: status)
        }
        let collectors = Submissions.access
        router.add("GET", Self.base + "/formList", access: collectors) { request in answer { try formList(request) } }
        router.add("GET", Self.base + "/forms/{surveyVersionId}/form.xml", access: collectors) { request in answer { try download(request) } }
        router.add("GET", Self.base + "/forms/{surveyVersionId}/manifest", access: collectors) { request in answer { try manifest(request) } }
        router.add("GET", Self.base + "/forms/{surveyVersionId}/attachments/{fileName}", access: collectors) { request in
            answer { try attachment(request) }
        }
        for method in ["HEAD", "GET"] {
            router.add(method, Self.base + "/submission", access: collectors) { request in answer { try submissionProbe(request) } }
        }
        var limits = FormDecoder.Limits(maxBytes: maxBodyBytes)
        limits.maxFiles = 1_000
        // Inline like the JSON door's: its reads do not wait, the write is queued; a submission with
        // files stores them on a thread of its own first (`submit`).
        // The app token and its collector are checked once the headers are in, before a byte of
        // a large body is read: nobody without a token stores a file or holds the server
        // receiving. A small body (answers alone, a small photo) is taken whole first: the
        // submission's own snapshot checks the caller before anything else, and a read is saved.
        let admit: @Sendable (RequestHead) throws -> Void = { [services] head in
            if let length = head.header("content-length").flatMap({ Int($0) }), length <= Self.bodyTakenBeforeAdmission { return }
            let token = head.pathParameters["token"] ?? "", orgId = head.pathParameters["orgId"] ?? ""
            _ = try services.database.read { try Self.collector(token: token, orgId: orgId, in: $0, operations: services.operations) }
        }
        router.add("POST", Self.base + "/submission", access: collectors, form: limits, runs: .inline, admit: admit) { request in
            let r = answer { try submit(request) }
            // Refused before the operation's outcome (which `render` counts).
            if r.deferred == nil && r.status >= 300 { services.metrics.openRosaSubmission(.refused(code: r.errorCode ?? 0)) }
            return r
        }
        // The draft door: the same routes for one survey's draft, its submissions kept apart.
        OpenRosaDraftDoor(services: services).register(into: &router, form: limits, admit: admit)
    }

    /// The largest submission body taken: the largest file, and room for the instance.
    var maxBodyBytes: Int { services.limits.maxFileBytes + (10 << 20) }

    // MARK: - Forms

    func formList(_ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let listed = try services.database.read { db in
            try admitCollector(request, in: db)
            return try services.operations.openRosaForms.forms(in: db, orgId: orgId, formId: request.query["formID"])
        }
        let base = request.origin + "/v1/key/\(request.parameter("token"))/orgs/\(orgId)"
        let body = try OpenRosaDocuments.formList(listed.map { form in
            OpenRosaDocuments.ListedForm(formId: form.xform.formId ?? "", name: OpenRosaDocuments.carried(form.survey.title), version: form.xform.version,
                                         md5: form.xform.md5, downloadURL: "\(base)/forms/\(form.version.surveyVersionId)/form.xml",
                                         manifestURL: form.attachments.isEmpty && form.entityLists.isEmpty ? nil : "\(base)/forms/\(form.version.surveyVersionId)/manifest")
        })
        return Self.document(200, body)
    }

    func download(_ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let xform = try services.database.read { db in
            try admitCollector(request, in: db)
            return try services.operations.openRosaForms.xform(in: db, orgId: orgId, surveyVersionId: request.parameter("surveyVersionId"))
        }
        guard let xform else { throw ApiError(.notFound, "This form is not published here: refresh the list of blank forms.") }
        return Self.document(200, xform)
    }

    /// The files an app downloads with a form: each by name, `md5:` hash and absolute URL; the
    /// entity lists it reads as `type="entityList"`, each hash changing exactly when the copy this
    /// collector receives does (`EntityListCopy`).
    func manifest(_ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId"), surveyVersionId = request.parameter("surveyVersionId")
        let forms = services.operations.openRosaForms
        let (attachments, copies) = try services.database.read { db in
            let collector = try admittedCollector(request, in: db)
            return (try forms.attachments(in: db, orgId: orgId, surveyVersionId: surveyVersionId),
                    try forms.entityListCopies(in: db, orgId: orgId, surveyVersionId: surveyVersionId, collector: collector))
        }
        guard let attachments else { throw ApiError(.notFound, "This form is not published here: refresh the list of blank forms.") }
        let base = request.origin + "/v1/key/\(request.parameter("token"))/orgs/\(orgId)/forms/\(surveyVersionId)/attachments/"
        var files = attachments.map { a in
            OpenRosaDocuments.MediaFile(fileName: a.fileName, md5: a.md5, downloadURL: base + Self.pathSegment(a.fileName))
        }
        for copy in copies {
            let name = copy.list.name + ".csv"
            files.append(OpenRosaDocuments.MediaFile(fileName: name, md5: copy.md5, downloadURL: base + Self.pathSegment(name), type: "entityList"))
        }
        return Self.document(200, try OpenRosaDocuments.manifest(files))
    }

    /// One file of a form's manifest, byte for byte; an entity list the form reads, streamed
    /// from one snapshot of its entities (memory stays flat however many there are).
    func attachment(_ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId"), surveyVersionId = request.parameter("surveyVersionId"), fileName = request.parameter("fileName")
        let forms = services.operations.openRosaForms
        let (found, copy) = try services.database.read { db in
            let collector = try admittedCollector(request, in: db)
            let copies = try forms.entityListCopies(in: db, orgId: orgId, surveyVersionId: surveyVersionId, collector: collector)
            if let copy = copies.first(where: { fileName == $0.list.name + ".csv" }) { return (nil as VersionAttachmentRecord?, copy as EntityListCopy?) }
            return (try db.versionAttachment(orgId: orgId, surveyVersionId: surveyVersionId, fileName: fileName), nil)
        }
        if let copy {
            let snapshot = try services.database.snapshot()
            let csv: EntityListCSV
            let assignment = copy.assignee.map { EntityListCSV.Assignment(surveyId: copy.surveyId, assignee: $0) }
            do { csv = try EntityListCSV(snapshot: snapshot, orgId: orgId, list: copy.list.name, assignment: assignment) } catch {
                snapshot.close(); throw error
            }
            return .stream(ExportStream(csv), headers: [Self.headers[0], ("Content-Type", "text/csv; charset=utf-8")])
        }
        guard let found else { throw ApiError(.notFound, "This form has no such file: refresh the list of blank forms.") }
        return try SurveyService.attachmentResponse(found, blobs: services.operations.blobs, headers: [Self.headers[0]])
    }

    /// A file name as one segment of a URL path: everything but unreserved characters percent-encoded.
    static func pathSegment(_ name: String) -> String {
        var out = ""
        for b in name.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                let hex = String(b, radix: 16, uppercase: true)
                out += (hex.count == 1 ? "%0" : "%") + hex
            }
        }
        return out
    }

    private func admitCollector(_ request: HTTPRequest, in db: ReadContext) throws {
        _ = try admittedCollector(request, in: db)
    }

    /// The app token's collector, admitted (403 otherwise): their user id.
    private func admittedCollector(_ request: HTTPRequest, in db: ReadContext) throws -> String {
        try Self.collector(token: request.parameter("token"), orgId: request.parameter("orgId"), in: db, operations: services.operations).actorId
    }

    /// The app token's collector, admitted to submit in `orgId` (403 otherwise): every route of the door asks this first.
    static func collector(token: String, orgId: String, in db: ReadContext, operations: Operations) throws -> Caller {
        let caller = try OpenRosaSubmissionDoor.collector(appToken: token, orgId: orgId, in: db, operations: operations)
        _ = try operations.admit(caller, to: Submissions.access, orgId: orgId, in: db)
        return caller
    }

    // MARK: - Submissions

    /// Collect asks before it sends: 204 says this is an OpenRosa server, and how large a body it takes.
    func submissionProbe(_ request: HTTPRequest) throws -> HTTPResponse {
        try services.database.read { try admitCollector(request, in: $0) }
        return HTTPResponse(status: 204, headers: Self.headers + [("X-OpenRosa-Accept-Content-Length", String(maxBodyBytes))])
    }

    /// The filled-in form: its files received first (no snapshot is held while bytes are
    /// written), then — unless more POSTs of it are to come — the submission operation, which
    /// reads the caller, the instance, its version and what its files answer in one snapshot and
    /// commits the files with the response in one transaction.
    /// `draftOf`: the draft door's survey, whose draft the instance must name; stored then as the
    /// draft's test submission (`SubmissionStore.draft`), and never an edit or a split submission.
    func submit(_ request: HTTPRequest, draftOf: String? = nil) throws -> HTTPResponse {
        guard let instance = request.form.files["xml_submission_file"] else {
            throw ApiError.malformed("The submission has no xml_submission_file part: send the filled-in form as that part.")
        }
        // Two filled-in forms in one POST: which one was meant cannot be told, so neither is taken.
        guard request.form.fileParts.count(where: { $0.name == "xml_submission_file" }) == 1 else {
            throw ApiError.malformed("The submission has more than one xml_submission_file part: send one filled-in form per POST.")
        }
        let ops = services.operations
        let token = request.parameter("token"), orgId = request.parameter("orgId")
        let xml = try instance.bytes()
        let partial = request.form["*isIncomplete*"] != nil
        let metrics = services.metrics
        let answer = DeferredResponse()
        let parts = request.form.fileParts.filter { $0.name != "xml_submission_file" }
        let store: SubmissionStore = draftOf.map { .draft(surveyId: $0) } ?? .live
        if draftOf != nil, partial {
            throw ApiError.malformed("A draft's test form sent in parts is not taken: nothing was stored. Send it again whole.")
        }
        let submitAnswersAlone: @Sendable () -> Void = {
            let door = OpenRosaSubmissionDoor(appToken: token, orgId: orgId, instance: xml, draftOf: draftOf)
            ops.submissions.submit(orgId: orgId, from: door, store: store) { outcome in
                answer.complete { Self.render(outcome, metrics: metrics) }
            }
        }
        // An edit of a sent form (`meta/deprecatedID`): the edit operation, off this thread; an
        // instance that only looked like one goes on as a submission. (One with files is refused
        // by the submission's door.)
        if draftOf == nil, !partial, parts.isEmpty, OpenRosaEdit.mayBeAnEdit(xml) {
            Self.attachments.async {
                let outcome: OpenRosaEdit.Outcome
                do { outcome = try ops.openRosaEdits.edit(orgId: orgId, appToken: token, xml: xml) } catch {
                    answer.complete { Self.render(.refused(error), metrics: metrics) }
                    return
                }
                if case .notAnEdit = outcome {
                    submitAnswersAlone()
                } else {
                    answer.complete { Self.renderEdit(outcome, metrics: metrics) }
                }
            }
            return .later(answer)
        }
        // Answers alone, what a phone sends most: straight to the operation.
        guard partial || !parts.isEmpty else {
            submitAnswersAlone()
            return .later(answer)
        }
        let service = self
        Self.attachments.async {
            var received: [ReceivedFile] = []
            let refuse: @Sendable (any Error) -> Void = { error in
                let e = error as? ApiError ?? ApiError(.internalError, "The server could not store this form's files; it stays on your phone. Try again later.")
                metrics.openRosaSubmission(.refused(code: e.code.rawValue))
                answer.complete { Self.refusal(e, status: e.code.httpStatus) }
            }
            do {
                for (name, part) in parts where !received.contains(where: { $0.fileName == name }) {
                    let file = try ops.uploads.receive(fileName: name, contentType: Self.contentType(of: part))
                    received.append(file)
                    try part.read { try file.write($0) }
                    try file.finish()
                }
            } catch {
                for file in received { file.discard() }
                refuse(error)
                return
            }
            let carried = received
            // A split submission's earlier POST: its files stored as uploads, for the last POST to cite.
            if partial {
                do { try service.storeAsUploads(carried, of: xml, token: token, orgId: orgId) } catch {
                    for file in carried { file.discard() }
                    refuse(error)
                    return
                }
                for file in carried { file.discard() }
                metrics.openRosaSubmission(.partial)
                answer.complete { Self.document(201, OpenRosaDocuments.response(message: "Part of the form was received; the rest is on its way.")) }
                return
            }
            // An edit of a sent form with its files: the edit operation, the files kept in its
            // transaction; an instance that only looked like one goes on as a submission.
            if draftOf == nil, OpenRosaEdit.mayBeAnEdit(xml) {
                let outcome: OpenRosaEdit.Outcome
                do { outcome = try ops.openRosaEdits.edit(orgId: orgId, appToken: token, xml: xml, files: carried) } catch {
                    for file in carried { file.discard() }
                    answer.complete { Self.render(.refused(error), metrics: metrics) }
                    return
                }
                if case .notAnEdit = outcome {} else {
                    for file in carried { file.discard() }
                    answer.complete { Self.renderEdit(outcome, metrics: metrics) }
                    return
                }
            }
            let door = OpenRosaSubmissionDoor(appToken: token, orgId: orgId, instance: xml, files: carried, draftOf: draftOf)
            ops.submissions.submit(orgId: orgId, from: door, store: store) { outcome in
                // A last POST refused for a file no POST has carried yet keeps the files it did
                // carry, as a split submission's earlier POSTs do; any other refusal keeps none
                // (a draft's keeps none: its files are never the organization's uploads).
                if case .refused(let e) = outcome, (e as? ApiError)?.code == .attachmentNotUploaded, draftOf == nil {
                    Self.attachments.async {
                        try? service.storeAsUploads(carried, of: xml, token: token, orgId: orgId)
                        for file in carried { file.discard() }
                        answer.complete { Self.render(outcome, metrics: metrics) }
                    }
                    return
                }
                for file in carried { file.discard() }
                answer.complete { Self.render(outcome, metrics: metrics) }
            }
        }
        return .later(answer)
    }

    /// The largest body received before its app token is checked (`admit`).
    static let bodyTakenBeforeAdmission = 64 << 10

    /// Where attachments are stored, off the HTTP threads.
    private static let attachments = DispatchQueue(label: "surveyd.openrosa.attachments", attributes: .concurrent)

    /// A split submission's files, each stored as an upload of the version and question naming
    /// it (read in one snapshot with the caller and the instance), under the id derived from the
    /// instance and the file name: a resent POST stores nothing twice.
    private func storeAsUploads(_ received: [ReceivedFile], of xml: [UInt8], token: String, orgId: String) throws {
        let ops = services.operations
        let staged = try services.database.read { db in
            guard let user = try Self.collector(token: token, orgId: orgId, in: db, operations: ops).user else {
                throw OpenRosaSubmissionDoor.notACollectorsToken
            }
            // An edited form's earlier parts too: its files are uploads of the new instance, which
            // the last part's edit finds as it finds those of any form.
            let arrival = try OpenRosaArrival.read(xml, orgId: orgId, in: db, operations: ops)
            return try arrival.stage(received, submitter: user.userId, in: db, operations: ops)
        }
        for file in staged { try ops.uploads.keep(file) }
    }

    /// The part's declared type; for a part sent as bytes of no type, the one its name says.
    static func contentType(of part: FormFile) -> String {
        let declared = part.contentType.lowercased()
        guard declared.isEmpty || declared.hasPrefix("application/octet-stream") else { return part.contentType }
        switch part.fileName.split(separator: ".").last?.lowercased() {
        case "jpg", "jpeg": return "image/jpeg"
        case "png": return "image/png"
        case "pdf": return "application/pdf"
        case "csv": return "text/csv"
        case "osm", "xml": return "text/xml"
        case "enc": return "application/octet-stream"
        default: return part.contentType
        }
    }

    private static func renderEdit(_ outcome: OpenRosaEdit.Outcome, metrics: Metrics) -> HTTPResponse {
        switch outcome {
        case .edited(let r):
            metrics.openRosaSubmission(.accepted)
            return document(201, OpenRosaDocuments.response(message: "The edited form was received; it replaces the one sent before. Thank you."))
                .logging(["responseId": r.responseId])
        case .replayed(let r):
            return render(.replayed(r), metrics: metrics)
        case .notAnEdit:
            return refusal(ApiError.malformed("The submission has no meta/deprecatedID."), status: 400)
        }
    }

    static func render(_ outcome: SubmissionOutcome, metrics: Metrics) -> HTTPResponse {
        switch outcome {
        case .accepted(let stored):
            metrics.openRosaSubmission(.accepted)
            return document(201, OpenRosaDocuments.response(message: "The form was received. Thank you."))
                .logging(["responseId": stored.responseId])
        case .replayed(let stored):
            metrics.openRosaSubmission(.replayed)
            // 202: received before; Collect marks the form sent and does not send it again.
            return document(202, OpenRosaDocuments.response(message: "This form was already received; there is nothing more to send."))
                .logging(["responseId": stored.responseId])
        case .refused(let error):
            let e = error as? ApiError ?? ApiError(.internalError, "The server could not take this form; it stays on your phone. Try again later.")
            metrics.openRosaSubmission(.refused(code: e.code.rawValue))
            return refusal(e, status: e.code.httpStatus)
        }
    }

    // MARK: - Rendering

    /// On every answer of the door, files included: a form or a message opened in a browser (the
    /// token is in the URL, so a link is all it takes) is never sniffed, and its script — an
    /// XForm is XHTML — never runs in the server's origin, where the console lives.
    static let headers = [("X-OpenRosa-Version", "1.0"), ("X-Content-Type-Options", "nosniff"),
                          ("Content-Security-Policy", "default-src 'none'; sandbox")]

    static func document(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: headers + [("Content-Type", "text/xml; charset=utf-8")], body: body)
    }

    /// A refusal as Collect shows it: the message, in words; 403 where the API would answer 401
    /// (Collect would ask for a password, which app tokens have not).
    static func refusal(_ error: ApiError, status: Int) -> HTTPResponse {
        let status = status == 401 ? 403 : status
        var r = document(status, OpenRosaDocuments.response(message: message(error)))
        r.headers.append(("Surveyd-Error-Code", String(error.code.rawValue)))
        if let after = error.retryAfterSeconds { r.headers.append(("Retry-After", String(after))) }
        r.errorCode = error.code.rawValue
        return r
    }

    /// What a collector reads on the phone.
    static func message(_ error: ApiError) -> String {
        switch error.code {
        case .subscriptionExpired:
            return "Your organization's subscription has expired, so nothing was stored. The form stays on this phone: send it again once the subscription is renewed."
        case .validationFailed:
            let problems = error.errors.prefix(10).map { "\($0.path.replacingOccurrences(of: "answers.", with: "")): \($0.message)" }
            let more = error.errors.count > 10 ? " (and \(error.errors.count - 10) more)" : ""
            return "The form was not accepted; nothing was stored. Correct it and send it again: " + problems.joined(separator: "; ") + more + "."
        case .idempotencyConflict:
            return "A different form with this instance ID was already received, so this one was not stored. Nothing was changed."
        default:
            return error.detail
        }
    }

    /// Runs a handler of the door, answering its refusal as an OpenRosa document.
    func answer(_ handler: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try handler() } catch let e as ApiError {
            return Self.refusal(e, status: e.code.httpStatus)
        } catch {
            return Self.refusal(ApiError(.internalError, "The server could not answer; try again later."), status: 500)
        }
    }
}
