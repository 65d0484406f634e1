import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage
import SurveyExports
import SurveyXForm

/// The draft door (`Docs/odk-collect.md`, "Testing a draft"): `{server}/v1/key/{token}/orgs/
/// {orgId}/drafts/{surveyId}` serves one survey's draft to a test phone — its form list (the
/// draft alone), the form, its manifest and files — and takes test submissions through the
/// OpenRosa door's own submission code (`OpenRosaService.submit`, `SubmissionStore.draft`),
/// with the door's rules and refusals. A survey without a draft is 404 / 1005 on every route.
struct OpenRosaDraftDoor {
    let services: Services
    static let base = OpenRosaService.base + "/drafts/{surveyId}"

    func register(into router: inout Router, form limits: FormDecoder.Limits, admit: @escaping @Sendable (RequestHead) throws -> Void) {
        let collectors = Submissions.access
        let door = OpenRosaService(services: services)
        router.add("GET", Self.base + "/formList", access: collectors) { request in door.answer { try formList(request) } }
        router.add("GET", Self.base + "/form.xml", access: collectors) { request in door.answer { try download(request) } }
        router.add("GET", Self.base + "/manifest", access: collectors) { request in door.answer { try manifest(request) } }
        router.add("GET", Self.base + "/attachments/{fileName}", access: collectors) { request in door.answer { try attachment(request) } }
        for method in ["HEAD", "GET"] {
            router.add(method, Self.base + "/submission", access: collectors) { request in
                door.answer {
                    _ = try draft(request)
                    return HTTPResponse(status: 204, headers: OpenRosaService.headers + [("X-OpenRosa-Accept-Content-Length", String(door.maxBodyBytes))])
                }
            }
        }
        let services = services
        router.add("POST", Self.base + "/submission", access: collectors, form: limits, runs: .inline, admit: admit) { request in
            let r = door.answer { try door.submit(request, draftOf: request.parameter("surveyId")) }
            if r.deferred == nil && r.status >= 300 { services.metrics.openRosaSubmission(.refused(code: r.errorCode ?? 0)) }
            return r
        }
    }

    /// The caller admitted as the OpenRosa door admits one, then the survey's draft (404 / 1005
    /// when it has none). `also` reads more in the same snapshot.
    private func draft<T>(_ request: HTTPRequest, also: (ReadContext, OpenRosaForms.Listed) throws -> T = { _, _ in () }) throws
        -> (listed: OpenRosaForms.Listed, more: T) {
        let ops = services.operations, orgId = request.parameter("orgId"), surveyId = request.parameter("surveyId")
        return try services.database.read { db in
            _ = try OpenRosaService.collector(token: request.parameter("token"), orgId: orgId, in: db, operations: ops)
            guard let listed = try ops.openRosaForms.draft(in: db, orgId: orgId, surveyId: surveyId) else {
                throw ApiError(.notFound, "This survey has no draft to test: ask your admin to publish one, then scan its code again.")
            }
            return (listed, try also(db, listed))
        }
    }

    private func base(_ request: HTTPRequest) -> String {
        request.origin + "/v1/key/\(request.parameter("token"))/orgs/\(request.parameter("orgId"))/drafts/\(request.parameter("surveyId"))"
    }

    /// The entity lists a draft reads that exist already.
    private func entityLists(_ listed: OpenRosaForms.Listed, in db: ReadContext) throws -> [EntityListRecord] {
        try listed.entityLists.compactMap { try db.entityList(orgId: listed.version.orgId, name: $0) }
    }

    func formList(_ request: HTTPRequest) throws -> HTTPResponse {
        let (form, lists) = try draft(request) { db, listed in try entityLists(listed, in: db) }
        let base = base(request)
        let body = try OpenRosaDocuments.formList([
            OpenRosaDocuments.ListedForm(formId: form.xform.formId ?? "", name: OpenRosaDocuments.carried(form.survey.title + " (draft)"),
                                         version: form.xform.version, md5: form.xform.md5, downloadURL: "\(base)/form.xml",
                                         manifestURL: form.attachments.isEmpty && lists.isEmpty ? nil : "\(base)/manifest"),
        ])
        return OpenRosaService.document(200, body)
    }

    func download(_ request: HTTPRequest) throws -> HTTPResponse {
        let (_, xform) = try draft(request) { db, listed in
            try FormSources.xform(of: listed.version, kept: try db.versionSource(orgId: listed.version.orgId, surveyVersionId: listed.version.surveyVersionId))
        }
        return OpenRosaService.document(200, xform)
    }

    func manifest(_ request: HTTPRequest) throws -> HTTPResponse {
        let (form, lists) = try draft(request) { db, listed in try entityLists(listed, in: db) }
        let base = base(request) + "/attachments/"
        var files = form.attachments.map { a in
            OpenRosaDocuments.MediaFile(fileName: a.fileName, md5: a.md5, downloadURL: base + OpenRosaService.pathSegment(a.fileName))
        }
        for list in lists {
            let name = list.name + ".csv"
            files.append(OpenRosaDocuments.MediaFile(fileName: name, md5: OpenRosaForms.entityListMD5(orgId: form.version.orgId, list),
                                                     downloadURL: base + OpenRosaService.pathSegment(name), type: "entityList"))
        }
        return OpenRosaService.document(200, try OpenRosaDocuments.manifest(files))
    }

    func attachment(_ request: HTTPRequest) throws -> HTTPResponse {
        let fileName = request.parameter("fileName")
        let (form, lists) = try draft(request) { db, listed in try entityLists(listed, in: db) }
        if let list = lists.first(where: { fileName == $0.name + ".csv" }) {
            let snapshot = try services.database.snapshot()
            let csv: EntityListCSV
            do { csv = try EntityListCSV(snapshot: snapshot, orgId: form.version.orgId, list: list.name) } catch { snapshot.close(); throw error }
            return .stream(ExportStream(csv), headers: [OpenRosaService.headers[0], ("Content-Type", "text/csv; charset=utf-8")])
        }
        guard let found = form.attachments.first(where: { $0.fileName == fileName }) else {
            throw ApiError(.notFound, "This form has no such file: refresh the list of blank forms.")
        }
        return try SurveyService.attachmentResponse(found, blobs: services.operations.blobs, headers: [OpenRosaService.headers[0]])
    }
}
