import Foundation
import SurveyDomain
import SurveyForms
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// ODK Central's REST API as one more door (Docs/central-api.md), so that a team's pyodk scripts
/// run against surveyd by changing `base_url`: a project is an organization (its integer
/// `projectId`), an actor is a user (`actorId`), a form is a survey by its XForm's id. Each
/// route maps onto an operation that already exists, in the contract's order of checks:
/// authenticate (401) → project visible (404) → role (403) → the operation. A refusal is
/// surveyd's problem document plus Central's `message` and numeric `code`; a Central route
/// this door does not offer is 501 / 1050 naming what surveyd offers instead.
struct CentralService {
    let services: Services
    /// The OData feeds this door serves under Central's paths (`CentralService+OData`).
    let surveyFeeds: ODataService
    let entityFeeds: EntityListODataService

    func register(into router: inout Router) {
        for prefix in CentralRefusal.prefixes {
            router.refusals(under: prefix) { error, status, path in CentralRefusal.routerRefusal(error, status: status, path: path) }
        }
        // Signing in reads the peer's address for the throttle; never gated (it writes no data).
        router.add("POST", "/v1/sessions", access: Access.anyone, runs: .blocking, needsClientAddress: true) { request in
            CentralRefusal.answer { try signIn(request) }
        }
        router.add("GET", "/v1/users/current", access: Access.anyCaller) { request in CentralRefusal.answer { try currentUser(request) } }
        router.add("DELETE", "/v1/sessions/{token}", access: Access.anyCaller) { request in CentralRefusal.answer { try signOut(request) } }
        router.add("GET", "/v1/projects", access: Access.anyCaller) { request in CentralRefusal.answer { try projects(request) } }
        let members = Access.memberOrOperator(anyOf: [])
        router.add("GET", "/v1/projects/{projectId}", access: members) { request in CentralRefusal.answer { try project(request) } }
        router.add("GET", "/v1/projects/{projectId}/forms", access: members) { request in CentralRefusal.answer { try forms(request) } }
        router.add("GET", "/v1/projects/{projectId}/forms/{xmlFormId}", access: members) { request in CentralRefusal.answer { try form(request) } }
        router.add("GET", "/v1/projects/{projectId}/forms/{xmlFormId}.xml", access: members) { request in CentralRefusal.answer { try formXML(request) } }
        // Inline like the other doors' submissions: the reads do not wait, the write is queued.
        router.add("POST", "/v1/projects/{projectId}/forms/{xmlFormId}/submissions", access: Submissions.access,
                   bodyLimit: 10 << 20, runs: .inline) { request in CentralRefusal.answer { try submit(request) } }
        let readers = Access.member(anyOf: [])
        router.add("GET", "/v1/projects/{projectId}/forms/{xmlFormId}/submissions", access: readers) { request in
            CentralRefusal.answer { try submissions(request) }
        }
        router.add("GET", "/v1/projects/{projectId}/forms/{xmlFormId}/submissions/{instanceId}", access: readers) { request in
            CentralRefusal.answer { try submission(request) }
        }
        router.add("PATCH", "/v1/projects/{projectId}/forms/{xmlFormId}/submissions/{instanceId}", access: readers) { request in
            CentralRefusal.answer { try review(request) }
        }
        router.add("PUT", "/v1/projects/{projectId}/forms/{xmlFormId}/submissions/{instanceId}", access: readers,
                   bodyLimit: 10 << 20, runs: .blocking) { request in CentralRefusal.answer { try editSubmission(request) } }
        registerAttachments(into: &router)
        registerComments(into: &router)
        registerForms(into: &router)
        registerDatasets(into: &router)
        registerAppUsers(into: &router)
        registerOData(into: &router)
    }

    var operations: Operations { services.operations }

    // MARK: - Sessions and users

    func signIn(_ request: HTTPRequest) throws -> HTTPResponse {
        let body = try JSONBody(request.body)
        let email = try body.string("email"), password = try body.string("password")
        let started = try operations.centralSessions.signIn(email: email, password: password, from: request.head.clientAddress)
        return .json(200, ["token": .string(started.token), "csrf": .string(started.csrf), "createdAt": .string(Timestamp.format(started.createdAt)),
                           "expiresAt": .string(Timestamp.format(started.expiresAt))])
    }

    /// pyodk's check of a cached token: the calling user as Central's actor.
    func currentUser(_ request: HTTPRequest) throws -> HTTPResponse {
        let caller = try services.authenticate(request.head)
        guard let user = caller.user else {
            throw ApiError(.forbidden, "An operator token is no user of ODK Central's API: sign in with a console user's email and password.")
        }
        let (email, created) = try services.database.read { db in (try db.email(userId: user.userId), try db.userCreatedAt(user.userId) ?? 0) }
        return .json(200, ["id": .number(Double(user.actorId)), "type": .string("user"), "displayName": .string(user.name),
                           "email": email.map(JSONValue.string) ?? .null, "createdAt": .string(Timestamp.format(created)),
                           "updatedAt": .null, "deletedAt": .null])
    }

    /// `DELETE /v1/sessions/{token}`, or `current` for the bearer token's own session.
    func signOut(_ request: HTTPRequest) throws -> HTTPResponse {
        let caller = try services.authenticate(request.head)
        let named = request.parameter("token")
        let token = named == "current" ? request.head.bearerToken ?? "" : named
        try operations.centralSessions.signOut(token: token, by: caller)
        return .json(200, ["success": .bool(true)])
    }

    // MARK: - Projects

    /// A user: its organization; an operator: every one.
    func projects(_ request: HTTPRequest) throws -> HTTPResponse {
        let caller = try services.authenticate(request.head)
        let orgs = try services.database.read { db -> [OrgRecord] in
            if let user = caller.user { return try db.org(user.orgId).map { [$0] } ?? [] }
            return try db.orgsByProjectId()
        }
        return .json(200, .array(orgs.map(CentralJSON.project)))
    }

    func project(_ request: HTTPRequest) throws -> HTTPResponse {
        let (_, org) = try admit(request, .memberOrOperator(anyOf: []))
        return .json(200, CentralJSON.project(org))
    }

    // MARK: - Forms

    func forms(_ request: HTTPRequest) throws -> HTTPResponse {
        let (_, org) = try admit(request, .memberOrOperator(anyOf: []))
        let listed = try services.database.read { try operations.openRosaForms.forms(in: $0, orgId: org.orgId, states: Set(SurveyState.allCases)) }
        return .json(200, .array(listed.map { CentralJSON.form($0, projectId: org.projectId) } + (try draftOnlyForms(org))))
    }

    /// The forms made as drafts and not published yet, as Central lists them: `publishedAt` null.
    func draftOnlyForms(_ org: OrgRecord) throws -> [JSONValue] {
        let drafts = try services.database.read { db in
            try db.draftVersions(orgId: org.orgId).compactMap { draft -> (SurveyRecord, SurveyVersionRecord)? in
                guard try db.surveyVersions(surveyId: draft.surveyId).isEmpty, let survey = try db.survey(orgId: org.orgId, surveyId: draft.surveyId) else { return nil }
                return (survey, draft)
            }
        }
        return try drafts.map { survey, draft in
            CentralJSON.form(survey, version: draft, xform: try operations.versionFiles(of: draft).xform, projectId: org.projectId)
        }
    }

    func form(_ request: HTTPRequest) throws -> HTTPResponse {
        let (_, org) = try admit(request, .memberOrOperator(anyOf: []))
        do {
            return .json(200, CentralJSON.form(try listedForm(request, orgId: org.orgId), projectId: org.projectId))
        } catch let e as ApiError where e.code == .notFound {
            // A form made as a draft and not published yet: its draft, `publishedAt` null.
            guard let survey = try? formSurvey(request, orgId: org.orgId), let draft = try storedVersions(of: survey).draft,
                  try services.database.read({ try $0.surveyVersions(surveyId: survey.surveyId) }).isEmpty else { throw e }
            let files = try operations.versionFiles(of: draft.version)
            return .json(200, CentralJSON.form(survey, version: draft.version, xform: files.xform, projectId: org.projectId))
        }
    }

    /// The XForm of the form's latest published version, as the OpenRosa door serves it: never
    /// sniffed, and its markup (XHTML) never runs in the server's origin.
    func formXML(_ request: HTTPRequest) throws -> HTTPResponse {
        let (_, org) = try admit(request, .memberOrOperator(anyOf: []))
        let form = try listedForm(request, orgId: org.orgId)
        guard let xform = try services.database.read({ try operations.openRosaForms.xform(in: $0, orgId: org.orgId, surveyVersionId: form.version.surveyVersionId) }) else {
            throw ApiError.notFound()
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/xml"), ("X-Content-Type-Options", "nosniff"),
                                                   ("Content-Security-Policy", "default-src 'none'; sandbox")], body: xform)
    }

    /// The path's form, published here (in any state: a closed form is still read, its `state`
    /// says so); else the 404 of a form that does not exist.
    func listedForm(_ request: HTTPRequest, orgId: String) throws -> OpenRosaForms.Listed {
        let xmlFormId = request.parameter("xmlFormId")
        guard let form = try services.database.read({ try operations.openRosaForms.forms(in: $0, orgId: orgId, formId: xmlFormId,
                                                                                          states: Set(SurveyState.allCases)).first }) else {
            throw ApiError(.notFound, "No form \(xmlFormId) is published in this project.")
        }
        return form
    }

    // MARK: - Submissions

    /// The submission operation, exactly as the other doors run it: the operation authenticates,
    /// admits the caller to the organization and role, checks the replay, reads the XML, passes
    /// the gate and writes in one transaction. Only the project id is resolved first; an
    /// unknown one still authenticates before its 404, as every route here does.
    func submit(_ request: HTTPRequest) throws -> HTTPResponse {
        let bearer = request.head.bearerToken
        guard let org = try services.database.read({ db in try CentralIds.projectId(request.parameter("projectId")).flatMap { try db.org(projectId: $0) } }) else {
            _ = try services.authenticate(request.head)
            throw ApiError.notFound()
        }
        let door = CentralSubmissionDoor(bearerToken: bearer, xmlFormId: request.parameter("xmlFormId"), xml: request.body)
        let users = services.database, files = operations.centralSubmissionFiles
        let answer = DeferredResponse()
        operations.submissions.submit(orgId: org.orgId, from: door) { outcome in
            switch outcome {
            case .accepted(let r):
                answer.complete {
                    let actor = try users.read { try $0.user(r.submitter)?.actorId } ?? 0
                    return HTTPResponse.json(200, CentralJSON.submission(r, submitterId: actor)).logging(["responseId": r.responseId])
                }
            case .replayed(let r):
                answer.complete {
                    let actor = try users.read { try $0.user(r.submitter)?.actorId } ?? 0
                    return HTTPResponse.replayed(.json(200, CentralJSON.submission(r, submitterId: actor))).logging(["responseId": r.responseId])
                }
            case .refused(let e as ApiError) where e.code == .attachmentNotUploaded:
                // Checked in full but for files still to come (Central's order): the XML waits
                // for them, in a gated write of its own, off the writer's thread.
                Self.waitingWork.async {
                    answer.complete {
                        do {
                            let held = try files.hold(orgId: org.orgId, door: door)
                            let (w, replayed) = switch held { case .written(let w): (w, false); case .replayed(let w): (w, true) }
                            let actor = try users.read { try $0.user(w.submitter)?.actorId } ?? 0
                            let doc = HTTPResponse.json(200, CentralJSON.submission(waiting: w, submitterId: actor))
                            return replayed ? .replayed(doc) : doc
                        } catch { return CentralRefusal.problem(Self.refusal(error)) }
                    }
                }
            case .refused(let e):
                answer.complete { CentralRefusal.problem(Self.refusal(e)) }
            }
        }
        return .later(answer)
    }

    /// Where a submission's XML is put to wait for its files: never the writer's own thread.
    static let waitingWork = DispatchQueue(label: "surveyd.central-waiting", attributes: .concurrent)

    func submissions(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request)
        let form = try listedForm(request, orgId: org.orgId)
        var rows: [ResponseRecord] = []
        var after: String?
        // Central answers the whole list: read in pages, so no read holds a snapshot long.
        while true {
            let page = try operations.visibleResponses(user, orgId: org.orgId, reviewState: nil, after: after, limit: 1000,
                                                       surveyId: form.survey.surveyId)
            rows += page
            guard page.count == 1000, let last = page.last else { break }
            after = last.responseId
        }
        let actors = try actorIds(of: rows)
        return .json(200, .array(rows.map { CentralJSON.submission($0, submitterId: actors[$0.submitter] ?? 0) }))
    }

    /// A stored submission, or one whose XML waits for its files (shown to its submitter).
    func submission(_ request: HTTPRequest) throws -> HTTPResponse {
        switch try visibleOrWaiting(request) {
        case .stored(let r): return .json(200, CentralJSON.submission(r, submitterId: try actorIds(of: [r])[r.submitter] ?? 0))
        case .waiting(let w): return .json(200, CentralJSON.submission(waiting: w, submitterId: try actorIds(ofUsers: [w.submitter])[w.submitter] ?? 0))
        }
    }

    /// Central's review state set through surveyd's review steps (`CentralReviews`).
    func review(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request)
        let (_, r) = try visibleSubmission(request)
        let outcome = try operations.centralReviews.setState(orgId: org.orgId, responseId: r.responseId, by: user) {
            try JSONBody(request.body).optionalString("reviewState")
        }
        let updated: ResponseRecord
        switch outcome {
        case .unchanged(let x), .written(let x): updated = x
        }
        return .json(200, CentralJSON.submission(updated, submitterId: try actorIds(of: [updated])[updated.submitter] ?? 0))
            .logging(["responseId": updated.responseId])
    }

    /// Central's edit of a submission: an instance whose `meta/deprecatedID` is the current
    /// instanceID (`OpenRosaEdit`); the same PUT again answers the same, writing nothing.
    func editSubmission(_ request: HTTPRequest) throws -> HTTPResponse {
        let (user, org) = try admitMember(request)
        _ = try listedForm(request, orgId: org.orgId)
        let instanceId = request.parameter("instanceId")
        guard ClientIdentifier.isValid(instanceId) else { throw ApiError.notFound() }
        let outcome = try operations.openRosaEdits.edit(orgId: org.orgId, by: user, xmlFormId: request.parameter("xmlFormId"),
                                                        instanceId: instanceId, xml: request.body)
        switch outcome {
        case .edited(let r):
            return .json(200, CentralJSON.submission(r, submitterId: try actorIds(of: [r])[r.submitter] ?? 0)).logging(["responseId": r.responseId])
        case .replayed(let r):
            return HTTPResponse.replayed(.json(200, CentralJSON.submission(r, submitterId: try actorIds(of: [r])[r.submitter] ?? 0)))
                .logging(["responseId": r.responseId])
        case .notAnEdit:
            throw ApiError.malformed("The submission has no meta/deprecatedID.")
        }
    }

    /// The path's submission (by its first instanceID) of the path's form, visible to the caller.
    func visibleSubmission(_ request: HTTPRequest) throws -> (OpenRosaForms.Listed, ResponseRecord) {
        let (user, org) = try admitMember(request)
        let form = try listedForm(request, orgId: org.orgId)
        let instanceId = request.parameter("instanceId")
        guard ClientIdentifier.isValid(instanceId) else { throw ApiError.notFound() }
        let r = try operations.visibleResponse(user, orgId: org.orgId, clientSubmissionId: instanceId)
        guard r.surveyId == form.survey.surveyId else { throw ApiError.notFound() }
        return (form, r)
    }

    private func actorIds(of rows: [ResponseRecord]) throws -> [String: Int64] {
        try actorIds(ofUsers: rows.map(\.submitter))
    }

    func actorIds(ofUsers users: [String]) throws -> [String: Int64] {
        let ids = Set(users)
        return try services.database.read { db in
            var out: [String: Int64] = [:]
            for id in ids { if let u = try db.user(id) { out[id] = u.actorId } }
            return out
        }
    }

    // MARK: - Admission

    /// Steps 1–3 for a project route: the caller (401), the project visible to them (404, the
    /// same for an unknown id and another organization's), the role `access` asks (403).
    func admit(_ request: HTTPRequest, _ access: Access) throws -> (Caller, OrgRecord) {
        try services.database.read { db in
            let caller = try operations.authenticate(bearerToken: request.head.bearerToken, in: db)
            guard let projectId = CentralIds.projectId(request.parameter("projectId")), let org = try db.org(projectId: projectId) else {
                throw ApiError.notFound()
            }
            _ = try operations.admit(caller, to: access, orgId: org.orgId, in: db)
            return (caller, org)
        }
    }

    /// The same for a route of the organization's users only.
    func admitMember(_ request: HTTPRequest, _ access: Access = .member(anyOf: [])) throws -> (UserRecord, OrgRecord) {
        let (caller, org) = try admit(request, access)
        guard let user = caller.user else { throw ApiError.notFound() }
        return (user, org)
    }
}
