import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The survey page's draft (Docs/forms.md, "Drafts"): the draft with its test submissions
/// counted, the draft door's URL and — for a collector an admin picks — a new app token's QR
/// code that sets a test phone up on that door; publish and discard buttons.
extension AdminPages {
    /// The draft's card, as a one-item list (none without a draft).
    func draftCard(_ visit: Visit, _ surveyId: String, secrets: [[String: TemplateValue]]) throws -> TemplateValue {
        let orgId = visit.orgId
        let user = try visit.member()
        guard let (draft, tests) = try operations.database.read({ db in
            try operations.surveyDrafts.draft(orgId: orgId, surveyId: surveyId, in: db)
        }) else { return .list([]) }
        let base = "/console/orgs/\(orgId)/surveys/\(surveyId)/draft"
        let collectors = try operations.usersWithEmail(of: orgId, by: user).map(\.0).filter { $0.active && $0.has(.collector) }
        return .list([[
            "draftVersionId": .text(draft.surveyVersionId), "draftCreated": .text(Pages.time(draft.createdAt)),
            "draftContentHash": .text(draft.contentHash),
            "draftTests": .text("\(tests) test submission\(tests == 1 ? "" : "s")"),
            "draftDoorUrl": .text(Self.draftDoorURL(origin: visit.origin, token: "{app token}", orgId: orgId, surveyId: surveyId)),
            "draftPublishUrl": .text(base + "/publish"), "draftDiscardUrl": .text(base + "/discard"), "draftCodeUrl": .text(base + "/code"),
            "collectors": .list(collectors.map { ["userId": .text($0.userId), "name": .text($0.name)] }),
            "hasCollectors": .flag(!collectors.isEmpty),
            "draftSecrets": .html(secrets.map { pages.fragment(.secret, $0) }.joined()),
        ]])
    }

    /// The draft door an app uses for `token` (`Docs/odk-collect.md`, "Testing a draft").
    static func draftDoorURL(origin: String, token: String, orgId: String, surveyId: String) -> String {
        CollectSettings.serverURL(origin: origin, token: token, orgId: orgId) + "/drafts/\(surveyId)"
    }

    static func draftNotice(_ done: String) -> String? {
        switch done {
        case "draft": "The draft is published for testing: apps do not list it; test it through the draft door below."
        case "draftPublished": "The draft is published as the survey's latest version; its test submissions are deleted."
        case "draftDiscarded": "The draft is discarded, with its test submissions."
        default: nil
        }
    }

    func publishDraft(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        try draftWrite(visit, request, done: "draftPublished") { orgId, surveyId, user in
            _ = try operations.surveyDrafts.publish(orgId: orgId, surveyId: surveyId, by: user).unkeyed()
        }
    }

    func discardDraft(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        try draftWrite(visit, request, done: "draftDiscarded") { orgId, surveyId, user in
            try operations.surveyDrafts.discard(orgId: orgId, surveyId: surveyId, by: user)
        }
    }

    /// A draft's write from its card: done, back to the survey with a notice; refused (expired,
    /// no draft), the survey page with the refusal.
    private func draftWrite(_ visit: Visit, _ request: HTTPRequest, done: String,
                            _ write: (String, String, UserRecord) throws -> Void) throws -> HTTPResponse {
        let orgId = request.parameter("orgId"), surveyId = request.parameter("surveyId")
        do {
            try write(orgId, surveyId, try visit.member())
            return Pages.redirect("/console/orgs/\(orgId)/surveys/\(surveyId)?done=\(done)")
        } catch let e as ApiError where [.notFound, .subscriptionExpired].contains(e.code) {
            // A survey that is not found at all is the page's own 404.
            guard try operations.database.read({ try $0.survey(orgId: orgId, surveyId: surveyId) }) != nil else { throw e }
            var f = frame("Survey", visit.visitor, orgId, "surveys")
            refused(e, &f)
            if e.code == .notFound { f.problem = "The survey has no draft: it was published or discarded meanwhile." }
            return try surveyPage(visit, surveyId, frame: f, status: e.code.httpStatus)
        }
    }

    /// A new app token for the collector chosen, shown once with the QR code that sets a test
    /// phone up on the draft door (a project of its own in Collect, beside the live one).
    func draftCode(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId"), surveyId = request.parameter("surveyId")
        var f = frame("Survey", v, orgId, "surveys")
        guard let userId = visit.form["userId"], !userId.isEmpty else {
            f.problem = "Choose the collector whose phone tests the draft."
            return try surveyPage(visit, surveyId, frame: f, status: 422)
        }
        // Checked before a token is made: only an active collector's app token opens the door.
        guard try operations.usersWithEmail(of: orgId, by: try visit.member()).contains(where: { $0.user.userId == userId && $0.user.active && $0.user.has(.collector) }) else {
            f.problem = "Choose an active collector: only a collector's app token opens the draft door."
            return try surveyPage(visit, surveyId, frame: f, status: 422)
        }
        let issued = try operations.users.createToken(orgId: orgId, userId: userId, by: v.caller).unkeyed()
        let org = try operations.organizations.organization(orgId)
        let survey = try operations.visibleSurvey(surveyId, of: orgId, by: try visit.member()).0
        let url = Self.draftDoorURL(origin: request.origin, token: issued.token, orgId: orgId, surveyId: surveyId)
        let settings = CollectSettings.qrText(serverURL: url, projectName: "\(org.name): draft of \(survey.title)")
        let card: [String: TemplateValue] = [
            "heading": .text("Test phone for \(issued.user.name) (app token \(issued.tokenId))"),
            "explain": .text("Shown only now. In ODK Collect or KoboCollect, add a project and scan this code: it opens the draft of \(survey.title) with a new app token of \(issued.user.name), apart from the live forms. Or type this server URL into a project's settings. Revoke the token on the user's page when testing is over."),
            "value": .text(url), "qr": .html(settings.flatMap { QRCode.svg($0, label: "QR code of the draft's ODK Collect settings") } ?? ""),
        ]
        return try surveyPage(visit, surveyId, frame: f, secrets: [card])
    }
}
