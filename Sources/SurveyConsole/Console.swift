import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The web console (`/console/`): server-rendered pages for reviewers, admins and operators —
/// another door onto the same operations as the API. It signs people in, keeps their session,
/// checks the CSRF token and `Origin` of every form, and turns every refusal into a sentence.
public struct Console: Sendable {
    let operations: Operations
    let pages: Pages
    let mapAssets: MapAssets
    static let cookie = "surveyd_session"
    /// A console form: at most 1 MiB in all (a definition file is the largest part), 2,000
    /// fields (a bulk review of 500 responses sends one each), 256 KiB a field.
    static let formLimits = FormDecoder.Limits(maxBytes: 1 << 20)

    /// Where the map view's background comes from (`--map-tiles`); nil: a plain background.
    let mapTiles: MapTiles?

    /// A tile server: its URL template (`{z}`, `{x}`, `{y}`, `{s}`) and the attribution it asks for.
    public struct MapTiles: Sendable {
        public let url: String
        public let attribution: String
        public init(url: String, attribution: String) { self.url = url; self.attribution = attribution }
        /// OpenStreetMap's standard tiles, with the attribution their policy asks for.
        public static let openStreetMap = MapTiles(url: "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
                                                   attribution: "© OpenStreetMap contributors")
    }

    public init(operations: Operations, mapTiles: MapTiles? = .openStreetMap) throws {
        self.operations = operations
        self.mapTiles = mapTiles
        pages = try Pages()
        mapAssets = try MapAssets()
    }

    public func register(into router: inout Router) {
        // The server's own refusals under /console (no such page, a method a page does not take,
        // a form over the limit) are pages too.
        let pages = self.pages
        router.refusals(under: "/console") { error, status, _ in
            let (heading, sentence) = Console.sentence(error)
            return pages.message(heading, sentence, frame: Pages.Frame(title: heading), status: status)
        }
        publicPage(&router, "GET", "/console") { _ in Pages.redirect("/console/") }
        publicPage(&router, "GET", "/console/assets/console.css") { _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "text/css; charset=utf-8"), ("Cache-Control", "public, max-age=3600"),
                                                 ("X-Content-Type-Options", "nosniff")], body: pages.stylesheet)
        }
        let assets = mapAssets
        publicPage(&router, "GET", "/console/assets/map.js") { _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "text/javascript; charset=utf-8"), ("Cache-Control", "public, max-age=3600"),
                                                 ("X-Content-Type-Options", "nosniff")], body: assets.script)
        }
        publicPage(&router, "GET", "/console/assets/leaflet/{file}") { request in
            guard let r = assets.response(request.parameter("file")) else { throw ApiError.notFound() }
            return r
        }
        publicPage(&router, "GET", "/console/assets/leaflet/images/{file}") { request in
            guard let r = assets.response("images/" + request.parameter("file")) else { throw ApiError.notFound() }
            return r
        }
        let signIn = SignInPages(console: self)
        publicPage(&router, "GET", "/console/sign-in", signIn.form)
        publicPage(&router, "POST", "/console/sign-in", needsClientAddress: true, signIn.signIn)  // throttled per address
        page(&router, "POST", "/console/sign-out", .anyCaller, signIn.signOut)
        publicPage(&router, "GET", "/console/invitations/{invitationSecret}", signIn.invitation)
        publicPage(&router, "POST", "/console/invitations/{invitationSecret}", signIn.acceptInvitation)
        let desk = ReviewDesk(console: self)
        let anyMember = Access.member(anyOf: [])
        page(&router, "GET", "/console/", .anyCaller, desk.home)
        page(&router, "GET", "/console/orgs/{orgId}/surveys/{surveyId}/responses", anyMember, desk.queue)
        page(&router, "POST", "/console/orgs/{orgId}/surveys/{surveyId}/bulk", anyMember, desk.bulk)
        page(&router, "GET", "/console/orgs/{orgId}/responses/{responseId}", anyMember, desk.response)
        page(&router, "POST", "/console/orgs/{orgId}/responses/{responseId}/review", anyMember, desk.review)
        page(&router, "POST", "/console/orgs/{orgId}/responses/{responseId}/answers", anyMember, desk.editAnswers)
        page(&router, "GET", "/console/orgs/{orgId}/uploads/{clientUploadId}", anyMember, desk.file)
        let views = DataPages(console: self, tiles: mapTiles)
        page(&router, "GET", "/console/orgs/{orgId}/surveys/{surveyId}/data", DataViews.access, views.data)
        page(&router, "GET", "/console/orgs/{orgId}/surveys/{surveyId}/summary", DataViews.access, views.summary)
        page(&router, "GET", "/console/orgs/{orgId}/surveys/{surveyId}/map", DataViews.access, views.map)
        let versionFiles = VersionFiles(console: self)
        page(&router, "GET", "/console/orgs/{orgId}/survey-versions/{surveyVersionId}/source", anyMember, versionFiles.source)
        page(&router, "GET", "/console/orgs/{orgId}/survey-versions/{surveyVersionId}/xform", anyMember, versionFiles.xform)
        page(&router, "GET", "/console/orgs/{orgId}/survey-versions/{surveyVersionId}/attachments/{fileName}", anyMember, versionFiles.attachment)
        let admins = Access.member(anyOf: [.admin])
        // Every member reads entity lists, as through the API; only admins resolve a conflict.
        let entities = EntityPages(console: self)
        page(&router, "GET", "/console/orgs/{orgId}/entity-lists", anyMember, entities.lists)
        page(&router, "GET", "/console/orgs/{orgId}/entity-lists/{name}", anyMember, entities.list)
        page(&router, "GET", "/console/orgs/{orgId}/entity-lists/{name}/entities/{entityId}", anyMember, entities.entity)
        page(&router, "POST", "/console/orgs/{orgId}/entity-lists/{name}/entities/{entityId}/resolve", admins, entities.resolve)
        page(&router, "POST", "/console/orgs/{orgId}/entity-lists/{name}/entities/{entityId}/edit", admins, entities.edit)
        let admin = AdminPages(console: self)
        page(&router, "GET", "/console/orgs/{orgId}/users", admins, admin.users)
        page(&router, "POST", "/console/orgs/{orgId}/users", admins, admin.createUser)
        page(&router, "GET", "/console/orgs/{orgId}/users/{userId}", admins, admin.user)
        page(&router, "POST", "/console/orgs/{orgId}/users/{userId}/roles", admins, admin.setRoles)
        page(&router, "POST", "/console/orgs/{orgId}/users/{userId}/invitation", admins, admin.invite)
        page(&router, "POST", "/console/orgs/{orgId}/users/{userId}/tokens", admins, admin.newToken)
        page(&router, "POST", "/console/orgs/{orgId}/users/{userId}/tokens/{tokenId}/revoke", admins, admin.revokeToken)
        page(&router, "POST", "/console/orgs/{orgId}/users/{userId}/deactivate", admins, admin.deactivate)
        page(&router, "GET", "/console/orgs/{orgId}/surveys", admins, admin.surveys)
        page(&router, "POST", "/console/orgs/{orgId}/surveys", admins, admin.createSurvey)
        page(&router, "GET", "/console/orgs/{orgId}/surveys/{surveyId}", admins, admin.survey)
        page(&router, "POST", "/console/orgs/{orgId}/surveys/{surveyId}/state", admins, admin.setSurveyState)
        page(&router, "POST", "/console/orgs/{orgId}/surveys/{surveyId}/draft/publish", admins, admin.publishDraft)
        page(&router, "POST", "/console/orgs/{orgId}/surveys/{surveyId}/draft/discard", admins, admin.discardDraft)
        page(&router, "POST", "/console/orgs/{orgId}/surveys/{surveyId}/draft/code", admins, admin.draftCode)
        // An XLSForm or XForm up to the server's form limit, with the files it names up to the
        // limit of a form upload, and room for the form's other fields.
        var publishing = FormDecoder.Limits(maxBytes: operations.limits.maxFormUploadBytes + (64 << 10))
        publishing.maxFiles = 1_000
        page(&router, "POST", "/console/orgs/{orgId}/surveys/{surveyId}/versions", admins, formLimits: publishing, admitsFirst: true, admin.publish)
        page(&router, "GET", "/console/orgs/{orgId}/surveys/{surveyId}/exports", Exports.access, admin.exports)
        page(&router, "GET", "/console/orgs/{orgId}/tasks", admins, admin.tasks)
        page(&router, "POST", "/console/orgs/{orgId}/tasks", admins, admin.createTask)
        page(&router, "GET", "/console/orgs/{orgId}/subscription", admins, admin.subscription)
        let webhooks = WebhookPages(admin: admin)
        page(&router, "GET", "/console/orgs/{orgId}/webhooks", admins, webhooks.list)
        page(&router, "POST", "/console/orgs/{orgId}/webhooks", admins, webhooks.create)
        page(&router, "GET", "/console/orgs/{orgId}/webhooks/{webhookId}", admins, webhooks.webhook)
        page(&router, "POST", "/console/orgs/{orgId}/webhooks/{webhookId}/enabled", admins, webhooks.setEnabled)
        page(&router, "POST", "/console/orgs/{orgId}/webhooks/{webhookId}/rotate-secret", admins, webhooks.rotate)
        page(&router, "POST", "/console/orgs/{orgId}/webhooks/{webhookId}/delete", admins, webhooks.delete)
        page(&router, "POST", "/console/orgs/{orgId}/webhooks/{webhookId}/deliveries/{deliveryId}/retry", admins, webhooks.retry)
        let operators = OperatorPages(console: self)
        page(&router, "GET", "/console/operator/orgs", .operatorOnly, operators.orgs)
        page(&router, "POST", "/console/operator/orgs", .operatorOnly, operators.create)
        page(&router, "POST", "/console/operator/orgs/{orgId}/renew", .operatorOnly, operators.renew)
        page(&router, "POST", "/console/operator/orgs/{orgId}/end", .operatorOnly, operators.end)
    }

    /// A page anyone may open: a refusal becomes a page. Every POST passes the form checks first.
    private func publicPage(_ router: inout Router, _ method: String, _ pattern: String, needsClientAddress: Bool = false,
                            _ handler: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse) {
        let console = self
        // Every console POST is a form: decoded as it streams in, within the form limits.
        router.add(method, pattern, access: Access.anyone, form: method == "POST" ? Self.formLimits : nil,
                   needsClientAddress: needsClientAddress) { request in
            do {
                if method == "POST" { try console.checkOrigin(request) }
                return try handler(request)
            } catch {
                return console.failure(error, request)
            }
        }
    }

    /// A page for signed-in people: without a session it goes to the sign-in page (and back
    /// after); a POST must carry the session's CSRF token; then the visitor is admitted to
    /// `access` exactly as the API admits a token. The operator's pages are not found for
    /// anyone else, rather than forbidden: a user has no reason to learn they exist.
    /// `formLimits`: a form that carries more than the default (a published XLSForm).
    /// `admitsFirst`: a form that may be large (a version with its files) is taken only from a
    /// signed-in person the page admits, checked before a byte of it goes to disk.
    public func page(_ router: inout Router, _ method: String, _ pattern: String, _ access: Access, runs execution: Router.Execution? = nil,
                     formLimits: FormDecoder.Limits? = nil, admitsFirst: Bool = false,
                     _ handler: @escaping @Sendable (Visit, HTTPRequest) throws -> HTTPResponse) {
        let console = self
        let admit: (@Sendable (RequestHead) throws -> Void)? = admitsFirst ? { @Sendable head in try console.admitBeforeForm(head, access) } : nil
        router.add(method, pattern, access: access, form: method == "POST" ? formLimits ?? Self.formLimits : nil, runs: execution,
                   admit: admit) { request in
            do {
                if method == "POST" { try console.checkOrigin(request) }
                let (v, form) = method == "POST" ? try console.signedInForm(request) : (try console.signedIn(request), FormFields())
                let admission: Admission
                do {
                    admission = try console.operations.admit(v.caller, to: access, orgId: request.parameter("orgId"))
                } catch let e as ApiError where access == .operatorOnly && e.code == .forbidden {
                    throw ApiError.notFound()
                }
                return try handler(Visit(visitor: v, admission: admission, form: form, origin: request.origin), request)
            } catch {
                return console.failure(error, request)
            }
        }
    }

    /// The session a form's headers carry, admitted to `access` (its CSRF token and origin are
    /// checked with the form, as for every page).
    private func admitBeforeForm(_ head: RequestHead, _ access: Access) throws {
        let id = head.header("cookie")?.split(separator: ";").lazy.map { $0.split(separator: "=", maxSplits: 1) }
            .first { $0.count == 2 && $0[0].trimmingCharacters(in: .whitespaces) == Self.cookie }.map { $0[1].trimmingCharacters(in: .whitespaces) }
        guard let id, let session = try operations.consoleSessions.session(id) else {
            throw ApiError(.unauthenticated, "Sign in to the console first, then send the form again.")
        }
        _ = try operations.admit(session.caller, to: access, orgId: head.parameter("orgId"))
    }

    // MARK: sessions and forms

    /// The signed-in person, their session and the frame around their pages.
    struct Visitor {
        let session: ConsoleSessions.Session
        let sessionId: String
        var caller: Caller { session.caller }
        var csrf: String { session.csrfToken }
        var who: String {
            switch session.caller {
            case .operatorToken: "Operator"
            case .user(let u, _): u.name
            }
        }
    }

    struct SignInNeeded: Error { let next: String }

    func visitor(_ request: HTTPRequest) throws -> Visitor? {
        guard let id = request.cookie(Self.cookie), let s = try operations.consoleSessions.session(id) else { return nil }
        return Visitor(session: s, sessionId: id)
    }

    /// The visitor, or a trip to the sign-in page (and back here after).
    func signedIn(_ request: HTTPRequest) throws -> Visitor {
        guard let v = try visitor(request) else {
            let query = request.query.sorted { $0.key < $1.key }.map { "\($0.key)=\(urlEncoded($0.value))" }.joined(separator: "&")
            throw SignInNeeded(next: request.method != "GET" ? "/console/" : query.isEmpty ? request.path : request.path + "?" + query)
        }
        return v
    }

    /// A form of a signed-in visitor: its CSRF token must be theirs.
    func signedInForm(_ request: HTTPRequest) throws -> (Visitor, FormFields) {
        let v = try signedIn(request)
        let form = request.form
        guard let token = form["csrf"], Digest.constantTimeEqual(Array(token.utf8), Array(v.csrf.utf8)) else {
            throw ApiError(.forbidden, "This form has expired or did not come from this console. Go back, reload the page and try again.")
        }
        return (v, form)
    }

    /// A POST from a page of another site is refused, whatever it carries.
    func checkOrigin(_ request: HTTPRequest) throws {
        guard let origin = request.header("origin") else { return }  // not a browser's cross-site form: the CSRF token still decides
        let host = request.header("host") ?? ""
        guard origin == "http://" + host || origin == "https://" + host else {
            throw ApiError(.forbidden, "This form was sent from another site (\(origin)), so it was refused.")
        }
    }



    func sessionCookie(_ id: String, _ request: HTTPRequest, maxAge: Int64 = ConsoleSessions.absoluteMillis / 1000) -> (String, String) {
        let secure = request.head.isHTTPS ? "; Secure" : ""
        return ("Set-Cookie", "\(Self.cookie)=\(id); Path=/console; HttpOnly; SameSite=Lax; Max-Age=\(maxAge)\(secure)")
    }

    /// The layout's frame: who is signed in, and the sections their roles open.
    func frame(_ title: String, _ v: Visitor?, section: String = "") -> Pages.Frame {
        var f = Pages.Frame(title: title, who: v?.who, csrf: v?.csrf)
        switch v?.caller {
        case .operatorToken?:
            f.nav = [("Organizations", "/console/operator/orgs", section == "orgs")]
        case .user(let u, _)?:
            let org = "/console/orgs/\(u.orgId)"
            if u.has(.reviewer) || u.has(.admin) { f.nav.append(("Review", "/console/", section == "review")) }
            f.nav.append(("Entity lists", org + "/entity-lists", section == "entities"))
            if u.has(.admin) {
                f.nav += [("Users", org + "/users", section == "users"), ("Surveys", org + "/surveys", section == "surveys"),
                          ("Tasks", org + "/tasks", section == "tasks"), ("Webhooks", org + "/webhooks", section == "webhooks"),
                          ("Subscription", org + "/subscription", section == "subscription")]
            }
        case nil:
            break
        }
        return f
    }

    /// The banner of an expired organization, in the gate's own terms (nil when it is active).
    func expiredNotice(_ orgId: String) -> String? {
        guard let org = try? operations.organizations.organization(orgId), operations.gate.isExpired(org) else { return nil }
        return "The subscription of \(org.name) has expired. Reading and exporting still work; reviews and other changes wait until it is renewed."
    }

    // MARK: refusals as sentences

    func failure(_ error: any Error, _ request: HTTPRequest) -> HTTPResponse {
        if let s = error as? SignInNeeded {
            return Pages.redirect("/console/sign-in?next=" + urlEncoded(s.next))
        }
        let v = try? visitor(request)
        let e = (error as? ApiError) ?? storageApiError(error)
        var headers: [(String, String)] = []
        if let r = e.retryAfterSeconds { headers.append(("Retry-After", String(r))) }
        let (heading, sentence) = Self.sentence(e)
        return pages.message(heading, sentence, frame: frame(heading, v), status: e.code.httpStatus, headers: headers)
    }

    /// What a person reads for a refusal: the operation's own sentence, headed by what kind of
    /// refusal it is (never an error code).
    static func sentence(_ e: ApiError) -> (String, String) {
        switch e.code {
        case .notFound: ("Not found", "There is nothing here, or you may not see it. Check the link, or go back to the console.")
        case .forbidden: ("Not allowed", e.detail)
        case .subscriptionExpired: ("Subscription expired", "The organization's subscription has expired, so nothing was changed. It works again once the subscription is renewed.")
        case .tooManyPendingRequests: ("Please wait", e.detail)
        case .unauthenticated: ("Sign in again", e.detail)
        case .storageUnavailable: ("Try again shortly", "The server cannot store anything right now; nothing was changed. Try again in a moment.")
        case .payloadTooLarge: ("Too large", "What you sent is too large: it is larger than this form takes, so nothing was changed.")
        default: ("Something went wrong", e.detail)
        }
    }
}
