import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// An organization's admin pages: users (roles, invitations, app tokens with QR codes,
/// deactivation), surveys (create, publish a version from a file, versions with a preview),
/// field tasks, the export page and the subscription — each action the API's own operation.
struct AdminPages: Sendable {
    let console: Console
    var pages: Pages { console.pages }
    var operations: Operations { console.operations }

    func frame(_ title: String, _ v: Console.Visitor, _ orgId: String, _ section: String) -> Pages.Frame {
        var f = console.frame(title, v, section: section)
        f.expired = console.expiredNotice(orgId)
        return f
    }

    /// A refusal of a form, shown on the page it came from: the operation's sentence and, for
    /// 1002, one line per field with its path.
    func refused(_ e: ApiError, _ f: inout Pages.Frame) {
        f.problem = e.code == .forbidden || e.code == .validationFailed ? e.detail : Console.sentence(e).1
        f.problemDetails = e.errors.map { "\($0.path): \($0.message)" }
    }

    // MARK: users

    func users(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        return try usersPage(visit, frame: frame("Users", v, request.parameter("orgId"), "users"))
    }

    private func usersPage(_ visit: Visit, frame: Pages.Frame, status: Int = 200) throws -> HTTPResponse {
        let v = visit.visitor, orgId = visit.orgId
        let list = try operations.usersWithEmail(of: orgId, by: try visit.member())
        let rows: [[String: TemplateValue]] = list.map { u, email in
            ["name": .text(u.name), "roles": .text(u.roles.joined(separator: ", ")), "email": .text(email ?? "—"),
             "status": .text(u.active ? "active" : "deactivated"), "url": .text("/console/orgs/\(orgId)/users/\(u.userId)")]
        }
        return pages.render(.users, ["users": .list(rows), "createUrl": .text("/console/orgs/\(orgId)/users"), "csrf": .text(v.csrf)],
                            frame: frame, status: status)
    }

    func createUser(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId")
        do {
            let email = (form["email"] ?? "").trimmingCharacters(in: .whitespaces)
            if !email.isEmpty { _ = try operations.invitations.checkAvailable(email: email) }  // refused before the user exists
            let issued = try operations.users.create(orgId: orgId, by: v.caller) { (form["name"] ?? "", form.all("role")) }.unkeyed()
            var secrets = try tokenSecrets(issued.token, id: issued.tokenId, for: issued.user, request)
            var f = frame(issued.user.name, v, orgId, "users")
            if !email.isEmpty {
                do {
                    secrets.insert(invitationSecret(try operations.invitations.invite(orgId: orgId, userId: issued.user.userId, by: v.caller) { email }.unkeyed(),
                                                    request), at: 0)
                } catch let e as ApiError {
                    refused(e, &f)
                }
            }
            f.notice = "\(issued.user.name) was added."
            return try userPage(visit, issued.user.userId, frame: f, secrets: secrets)
        } catch let e as ApiError where e.code == .validationFailed {
            var f = frame("Users", v, orgId, "users")
            refused(e, &f)
            return try usersPage(visit, frame: f, status: 422)
        }
    }

    func user(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId")
        var f = frame("User", v, orgId, "users")
        if request.query["done"] == "roles" { f.notice = "Roles saved. They apply on the user's next request or page." }
        if request.query["done"] == "revoked" { f.notice = "The token was revoked." }
        if request.query["done"] == "deactivated" { f.notice = "The user was deactivated: their tokens and sessions have ended." }
        return try userPage(visit, request.parameter("userId"), frame: f)
    }

    private func userPage(_ visit: Visit, _ userId: String, frame: Pages.Frame, status: Int = 200,
                          secrets: [[String: TemplateValue]] = []) throws -> HTTPResponse {
        let v = visit.visitor, orgId = visit.orgId
        let (user, email, tokens) = try operations.userAccount(userId, of: orgId, by: try visit.member())
        var f = frame
        f.title = user.name
        let base = "/console/orgs/\(orgId)/users/\(userId)"
        let values: [String: TemplateValue] = [
            "name": .text(user.name), "userId": .text(user.userId), "email": .text(email ?? ""), "status": .text(user.active ? "active" : "deactivated"),
            "active": .flag(user.active), "baseUrl": .text(base), "usersUrl": .text("/console/orgs/\(orgId)/users"), "csrf": .text(v.csrf),
            "roleChoices": .list(Role.allCases.map { ["value": .text($0.rawValue), "label": .text($0.rawValue.capitalized), "checked": .flag(user.has($0))] }),
            "tokens": .list(tokens.map { ["tokenId": .text($0.tokenId), "created": .text("created " + Pages.time($0.createdAt)),
                                          "revoked": .text($0.revokedAt.map(Pages.time) ?? "")] }),
            "secrets": .html(secrets.map { pages.fragment(.secret, $0) }.joined()),
        ]
        return pages.render(.user, values, frame: f, status: status)
    }

    /// The new token's card; for a collector also the card ODK Collect and KoboCollect scan to
    /// be set up with it (the OpenRosa door's URL, `Docs/odk-collect.md`).
    private func tokenSecrets(_ token: String, id tokenId: String, for user: UserRecord, _ request: HTTPRequest) throws -> [[String: TemplateValue]] {
        var cards: [[String: TemplateValue]] = [[
            "heading": .text("App token \(tokenId) for \(user.name)"),
            "explain": .text("Shown only now. Scan it with the collector's app, or copy it. If it is lost, make a new one and revoke this one."),
            "value": .text(token), "qr": .html(QRCode.svg(token, label: "QR code of the app token") ?? "")]]
        guard user.has(.collector) else { return cards }
        let org = try operations.organizations.organization(user.orgId)
        let url = CollectSettings.serverURL(origin: request.origin, token: token, orgId: user.orgId)
        let settings = CollectSettings.qrText(serverURL: url, projectName: org.name)
        cards.append([
            "heading": .text("ODK Collect or KoboCollect for \(user.name)"),
            "explain": .text("In the app, add a project and scan this code: it connects to \(org.name) with this token, keeps the blank forms as published and sends finished forms as soon as there is a network. Or type this server URL into the app's settings:"),
            "value": .text(url), "qr": .html(settings.flatMap { QRCode.svg($0, label: "QR code of the ODK Collect settings") } ?? "")])
        return cards
    }

    private func invitationSecret(_ issued: Invitations.Issued, _ request: HTTPRequest) -> [String: TemplateValue] {
        let url = request.origin + "/console/invitations/" + issued.token
        return ["heading": .text("Invitation link for \(issued.email)"),
                "explain": .text("Send this link to \(issued.user.name); it works once, until \(Pages.date(issued.expiresAt)). A newer invitation replaces it."),
                "value": .text(url), "qr": .html(QRCode.svg(url, label: "QR code of the invitation link") ?? "")]
    }

    func setRoles(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId"), userId = request.parameter("userId")
        do {
            _ = try operations.users.setRoles(orgId: orgId, userId: userId, by: v.caller) { form.all("role") }
            return Pages.redirect("/console/orgs/\(orgId)/users/\(userId)?done=roles")
        } catch let e as ApiError where e.code == .validationFailed {
            var f = frame("User", v, orgId, "users")
            refused(e, &f)
            return try userPage(visit, userId, frame: f, status: 422)
        }
    }

    func invite(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId"), userId = request.parameter("userId")
        var f = frame("User", v, orgId, "users")
        do {
            let issued = try operations.invitations.invite(orgId: orgId, userId: userId, by: v.caller) { form["email"] ?? "" }.unkeyed()
            return try userPage(visit, userId, frame: f, secrets: [invitationSecret(issued, request)])
        } catch let e as ApiError where e.code == .validationFailed {
            refused(e, &f)
            return try userPage(visit, userId, frame: f, status: 422)
        }
    }

    func newToken(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId"), userId = request.parameter("userId")
        let issued = try operations.users.createToken(orgId: orgId, userId: userId, by: v.caller).unkeyed()
        return try userPage(visit, userId, frame: frame("User", v, orgId, "users"), secrets: try tokenSecrets(issued.token, id: issued.tokenId, for: issued.user, request))
    }

    func revokeToken(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId"), userId = request.parameter("userId")
        _ = try operations.users.revokeToken(orgId: orgId, userId: userId, tokenId: request.parameter("tokenId"), by: v.caller)
        return Pages.redirect("/console/orgs/\(orgId)/users/\(userId)?done=revoked")
    }

    func deactivate(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId"), userId = request.parameter("userId")
        guard form["confirm"] == "yes" else {
            var f = frame("User", v, orgId, "users")
            f.problem = "Tick “Yes, deactivate” to confirm."
            return try userPage(visit, userId, frame: f, status: 422)
        }
        _ = try operations.users.deactivate(orgId: orgId, userId: userId, by: v.caller)
        return Pages.redirect("/console/orgs/\(orgId)/users/\(userId)?done=deactivated")
    }

    // MARK: surveys

    func surveys(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId")
        return try surveysPage(visit, frame: frame("Surveys", v, orgId, "surveys"))
    }

    func gatedOff(_ f: Pages.Frame) -> TemplateValue {
        .text(f.expired == nil ? "" : "The subscription has expired: creating and publishing wait until it is renewed.")
    }

    private func surveysPage(_ visit: Visit, frame f: Pages.Frame, status: Int = 200) throws -> HTTPResponse {
        let v = visit.visitor, orgId = visit.orgId
        let list: [[String: TemplateValue]] = try operations.visibleSurveys(of: orgId, by: try visit.member(), after: nil, limit: 500).map { s, versions in
            ["title": .text(s.title), "url": .text("/console/orgs/\(orgId)/surveys/\(s.surveyId)"),
             "detail": .text("\(versions.count) version\(versions.count == 1 ? "" : "s")\(s.reviewRequired ? " · review required" : "")")]
        }
        return pages.render(.surveys, ["surveys": .list(list), "createUrl": .text("/console/orgs/\(orgId)/surveys"), "csrf": .text(v.csrf),
                                        "gatedOff": gatedOff(f)], frame: f, status: status)
    }

    func createSurvey(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId")
        let user = try visit.member()
        do {
            let s = try operations.surveys.create(orgId: orgId, by: user) {
                Surveys.NewSurvey(title: form["title"] ?? "", reviewRequired: form["reviewRequired"] == "true")
            }.unkeyed()
            return Pages.redirect("/console/orgs/\(orgId)/surveys/\(s.surveyId)")
        } catch let e as ApiError where [.validationFailed, .subscriptionExpired].contains(e.code) {
            var f = frame("Surveys", v, orgId, "surveys")
            refused(e, &f)
            return try surveysPage(visit, frame: f, status: e.code.httpStatus)
        }
    }

    func survey(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId")
        var f = frame("Survey", v, orgId, "surveys")
        let published = request.query["published"]
        if let n = published { f.notice = "Version \(n) is published." }
        if let done = request.query["done"] { f.notice = Self.draftNotice(done) }
        return try surveyPage(visit, request.parameter("surveyId"), frame: f, published: published)
    }

    /// A survey moved through its life: open, closing, closed.
    func setSurveyState(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId"), surveyId = request.parameter("surveyId")
        do {
            let changed = try operations.surveys.setState(orgId: orgId, surveyId: surveyId, by: try visit.member()) { form["state"] ?? "" }.unkeyed()
            var f = frame("Survey", v, orgId, "surveys")
            f.notice = Self.stateSentence(changed.survey.state, now: true)
            return try surveyPage(visit, surveyId, frame: f)
        } catch let e as ApiError where [.validationFailed, .subscriptionExpired].contains(e.code) {
            var f = frame("Survey", v, orgId, "surveys")
            refused(e, &f)
            return try surveyPage(visit, surveyId, frame: f, status: e.code.httpStatus)
        }
    }

    /// What a survey's state means for the people in the field.
    static func stateSentence(_ state: SurveyState, now: Bool = false) -> String {
        let lead = now ? "The survey is now" : "The survey is"
        switch state {
        case .open: return "\(lead) open: apps list it and it takes new responses."
        case .closing: return "\(lead) closing: apps no longer list it, so nobody starts a new response, but the responses still on phones are taken."
        case .closed: return "\(lead) closed: it takes no new responses (apps are told so); the ones received stay, and resent ones are recognised."
        }
    }

    func surveyPage(_ visit: Visit, _ surveyId: String, frame: Pages.Frame, status: Int = 200, published: String? = nil,
                    secrets: [[String: TemplateValue]] = []) throws -> HTTPResponse {
        let v = visit.visitor, orgId = visit.orgId
        let (survey, versions) = try operations.visibleSurvey(surveyId, of: orgId, by: try visit.member())
        let sources = try operations.visibleVersionSources(ofSurvey: surveyId, of: orgId, by: try visit.member())
        let attachments = try operations.visibleVersionAttachments(ofSurvey: surveyId, of: orgId, by: try visit.member())
        var f = frame
        f.title = survey.title
        let base = "/console/orgs/\(orgId)/surveys/\(surveyId)"
        let newestFirst = versions.sorted { $0.number > $1.number }
        if let published, let version = versions.first(where: { String($0.number) == published }), !version.warnings.isEmpty {
            let count = version.warnings.count
            f.notice = "Version \(published) is published. pyxform gave \(count) warning\(count == 1 ? "" : "s") on converting it; \(count == 1 ? "it is" : "they are") listed with the version."
        }
        let shown: [[String: TemplateValue]] = try newestFirst.map { version in
            let definition = try operations.definitions.definition(of: version)
            var item: [String: TemplateValue] = [
                "number": .text(String(version.number)), "created": .text(Pages.time(version.createdAt)), "versionId": .text(version.surveyVersionId),
                "contentHash": .text(version.contentHash), "latest": .flag(version.number == newestFirst.first?.number),
            ]
            item.merge(Self.versionFiles(version, source: sources[version.surveyVersionId], attachments: attachments[version.surveyVersionId] ?? [],
                                         orgId: orgId)) { _, new in new }
            if FormOutline.isFlat(definition) {
                item["questions"] = .list(definition.questions.map(Self.questionRow))
            } else {
                // Labels in the default language; the other languages are named.
                let language = LanguageChoice(definition, requested: nil)
                item["outline"] = .html(FormOutline(definition: definition, language: language, pages: pages).html())
                item["languages"] = .text(language.languages.map { $0 == language.chosen ? "\($0) (default)" : $0 }.joined(separator: ", "))
            }
            return item
        }
        var values: [String: TemplateValue] = [
            "title": .text(survey.title), "surveysUrl": .text("/console/orgs/\(orgId)/surveys"), "queueUrl": .text(base + "/responses"),
            "exportsUrl": .text(base + "/exports"), "dataUrl": .text(base + "/data"), "mapUrl": .text(base + "/map"),
            "summaryUrl": .text(base + "/summary"), "publishUrl": .text(base + "/versions"), "csrf": .text(v.csrf), "versions": .list(shown),
            "gatedOff": gatedOff(f), "stateUrl": .text(base + "/state"), "state": .text(survey.state.rawValue),
            "stateSentence": .text(Self.stateSentence(survey.state)),
            "feedUrl": .text(visit.origin + "/v1/orgs/\(orgId)/surveys/\(surveyId).svc"),
            "states": .list(SurveyState.allCases.map { ["value": .text($0.rawValue), "selected": .flag($0 == survey.state)] }),
        ]
        values["draft"] = try draftCard(visit, surveyId, secrets: secrets)
        return pages.render(.survey, values, frame: f, status: status)
    }

    /// What a version was published from, its downloads (the source; the XForm an app downloads,
    /// as uploaded, as pyxform made it, or written from a JSON definition) and pyxform's warnings.
    private static func versionFiles(_ version: SurveyVersionRecord, source: VersionSourceSummary?, attachments: [VersionAttachmentRecord],
                                     orgId: String) -> [String: TemplateValue] {
        let files = "/console/orgs/\(orgId)/survey-versions/\(version.surveyVersionId)"
        let kind: String
        switch (source?.format, source.map(VersionFiles.fileExtension)) {
        case (FormSources.Format.xlsform.rawValue?, let ext?): kind = "an XLSForm (.\(ext))"
        case (FormSources.Format.xform.rawValue?, _): kind = "an XForm"
        default: kind = "a JSON definition"
        }
        let sourceName = source == nil ? "JSON definition" : source?.format == FormSources.Format.xlsform.rawValue ? "XLSForm" : "XForm"
        return [
            "publishedFrom": .text(kind), "sourceUrl": .text(files + "/source"), "sourceLabel": .text("Download the \(sourceName)"),
            // A version published as an XForm: its source is its XForm.
            "xformUrl": .text(source?.format == FormSources.Format.xform.rawValue ? "" : files + "/xform"),
            // The files its form names, each downloaded by its own name.
            "attachments": .list(attachments.map { a in
                ["name": .text(a.fileName), "url": .text(files + "/attachments/" + urlEncoded(a.fileName))]
            }),
            "hasWarnings": .flag(!version.warnings.isEmpty),
            "warningCount": .text(version.warnings.count == 1 ? "1 warning" : "\(version.warnings.count) warnings"),
            "warnings": .list(version.warnings.map { ["warning": .text($0)] }),
        ]
    }

    /// A question of a flat (version-1) definition as a row of its version's table.
    private static func questionRow(_ q: Question) -> [String: TemplateValue] {
        var rules: [String] = []
        if !q.choices.isEmpty { rules.append(q.choices.joined(separator: ", ")) }
        if let min = q.minimum { rules.append("from \(CanonicalJSON.number(min))") }
        if let max = q.maximum { rules.append("to \(CanonicalJSON.number(max))") }
        if let n = q.maxLength { rules.append("at most \(n) characters") }
        if !q.accept.isEmpty { rules.append(q.accept.joined(separator: ", ")) }
        return ["id": .text(q.id), "label": .text(q.label), "type": .text(q.type.rawValue), "required": .flag(q.required),
                "rules": .text(rules.joined(separator: " · "))]
    }

    /// A definition file — JSON, an XLSForm or an XForm, by its name — published as the survey's
    /// next version through the same reading as the API's; a refusal lists each field, and an
    /// XLSForm's the row pyxform names.
    func publish(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId"), surveyId = request.parameter("surveyId")
        let user = try visit.member()
        do {
            let asDraft = form["draft"] == "yes"
            let version = try operations.surveys.publish(orgId: orgId, surveyId: surveyId, by: user, draft: asDraft) {
                guard let file = form.files["definition"], file.size > 0 else {
                    throw ApiError(.validationFailed, "Choose a definition file to publish.", errors: [FieldError(path: "definition", message: "no file")])
                }
                guard file.size <= operations.limits.maxFormBytes else {
                    throw ApiError(.payloadTooLarge, "The form file is \(file.size) bytes; the limit is \(operations.limits.maxFormBytes).")
                }
                // The files the form names, chosen beside it (a browser sends an empty part when none is).
                let files = form.fileParts.filter { $0.name == "files" && !$0.file.fileName.isEmpty }.map { part in
                    FormUpload.SentFile(fileName: part.file.fileName, declaredType: part.file.contentType, size: part.file.size) { try part.file.read($0) }
                }
                let upload = FormUpload(format: FormSources.format(ofFileNamed: file.fileName, contentType: file.contentType), form: try file.bytes(),
                                        contentType: file.contentType, fileName: file.fileName, files: files, isBareDefinition: true)
                return try operations.forms.published(upload, surveyId: surveyId, limits: operations.limits, blobs: operations.blobs)
            }.unkeyed()
            if asDraft { return Pages.redirect("/console/orgs/\(orgId)/surveys/\(surveyId)?done=draft") }
            return Pages.redirect("/console/orgs/\(orgId)/surveys/\(surveyId)?published=\(version.number)")
        } catch let e as ApiError where [.validationFailed, .subscriptionExpired, .payloadTooLarge].contains(e.code) {
            var f = frame("Survey", v, orgId, "surveys")
            refused(e, &f)
            if e.code == .validationFailed { f.problem = "The definition was not published. " + e.detail }
            if e.code == .payloadTooLarge { f.problem = "The definition was not published. " + e.detail }
            // The converter's and the reader's messages read as they are, under the file's kind.
            f.problemDetails = e.errors.map { error in
                switch error.path {
                case "xlsform": "In the XLSForm: \(error.message)"
                case "xform": "In the XForm: \(error.message)"
                case let path where path.hasPrefix("attachments."): error.message
                default: "\(error.path): \(error.message)"
                }
            }
            return try surveyPage(visit, surveyId, frame: f, status: e.code.httpStatus)
        }
    }

    // MARK: tasks

    func tasks(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId")
        return try tasksPage(visit, frame: frame("Field tasks", v, orgId, "tasks"))
    }

    private func tasksPage(_ visit: Visit, frame f: Pages.Frame, status: Int = 200) throws -> HTTPResponse {
        let v = visit.visitor, orgId = visit.orgId
        let admin = try visit.member()
        let tasks = try operations.visibleTasks(admin, orgId: orgId, after: nil, limit: 500)
        let surveys = try operations.visibleSurveys(of: orgId, by: admin, after: nil, limit: 500).map(\.0)
        let users = try operations.members(of: orgId, by: admin)
        let names = Dictionary(users.map { ($0.userId, $0.name) }, uniquingKeysWith: { a, _ in a })
        let titles = Dictionary(surveys.map { ($0.surveyId, $0.title) }, uniquingKeysWith: { a, _ in a })
        let rows: [[String: TemplateValue]] = tasks.reversed().map { t in
            var completed = ""
            if let at = t.completedAt { completed = "by \(names[t.completedBy ?? ""] ?? t.completedBy ?? "?"), \(Pages.time(at))" }
            return ["title": .text(t.title), "taskId": .text(t.taskId), "notes": .text(t.notes ?? ""), "survey": .text(titles[t.surveyId] ?? t.surveyId),
                    "assignee": .text(names[t.assigneeUserId] ?? t.assigneeUserId), "due": .text(t.dueAt.map(Pages.date) ?? "—"),
                    "state": .text(t.state.rawValue), "completed": .text(completed),
                    "responseUrl": .text(t.responseId.map { "/console/orgs/\(orgId)/responses/\($0)" } ?? "")]
        }
        return pages.render(.tasks, [
            "tasks": .list(rows), "createUrl": .text("/console/orgs/\(orgId)/tasks"), "csrf": .text(v.csrf), "gatedOff": gatedOff(f),
            "surveys": .list(surveys.map { ["id": .text($0.surveyId), "label": .text($0.title)] }),
            "collectors": .list(users.filter { $0.active && $0.has(.collector) }.map { ["id": .text($0.userId), "label": .text($0.name)] }),
        ], frame: f, status: status)
    }

    func createTask(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId")
        let user = try visit.member()
        do {
            _ = try operations.tasks.create(orgId: orgId, by: user) {
                let notes = (form["notes"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
                return FieldTasks.NewTask(title: form["title"] ?? "", surveyId: form["surveyId"] ?? "", assigneeUserId: form["assigneeUserId"] ?? "",
                                          notes: notes.isEmpty ? nil : notes,
                                          dueAt: (form["due"]).flatMap { $0.isEmpty ? nil : Timestamp.parse($0 + "T23:59:59Z") })
            }
            var f = frame("Field tasks", v, orgId, "tasks")
            f.notice = "The task was assigned."
            return try tasksPage(visit, frame: f)
        } catch let e as ApiError where [.validationFailed, .subscriptionExpired].contains(e.code) {
            var f = frame("Field tasks", v, orgId, "tasks")
            refused(e, &f)
            return try tasksPage(visit, frame: f, status: e.code.httpStatus)
        }
    }

    // MARK: exports and the subscription

    func exports(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId"), surveyId = request.parameter("surveyId")
        guard let user = v.caller.user else { throw ApiError.notFound() }
        try operations.member(user, of: orgId, withAnyOf: [.reviewer, .admin])
        let (survey, versions) = try operations.visibleSurvey(surveyId, of: orgId, by: try visit.member())
        let hasPoint = try versions.contains { try operations.definitions.definition(of: $0).questions.contains { $0.type == .geopoint } }
        return pages.render(.exports, [
            "noPoint": .text(hasPoint ? "" : "GeoJSON needs a location (geopoint) question; this survey has none."),
            "title": .text(survey.title), "surveyUrl": .text(user.has(.admin) ? "/console/orgs/\(orgId)/surveys/\(surveyId)" : "/console/orgs/\(orgId)/surveys/\(surveyId)/responses"),
            "downloadUrl": .text("/console/orgs/\(orgId)/surveys/\(surveyId)/download"),
            "states": .list(ReviewDesk.stateLabels.map { ["value": .text($0.0.rawValue), "label": .text($0.1)] }),
            "versions": .list(versions.map { ["id": .text($0.surveyVersionId), "label": .text("Version \($0.number)")] }),
        ], frame: frame("Export", v, orgId, "surveys"))
    }

    func subscription(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId")
        let org = try operations.organizations.organization(orgId)
        let expired = operations.gate.isExpired(org)
        return pages.render(.subscription, [
            "orgName": .text(org.name), "state": .text(expired ? "expired" : "active"), "expiryLabel": .text(expired ? "Ended" : "Ends"),
            "expiresAt": .text(Pages.time(org.expiresAt)),
            "explain": .text(expired ? "Reading, exports and user management keep working; syncing, reviews and publishing wait until an operator renews it. Nothing collected is lost: apps keep their work and send it after renewal."
                                     : "Your operator renews the subscription. Collected work is never refused for an expiry: apps keep it and send it after renewal."),
        ], frame: frame("Subscription", v, orgId, "subscription"))
    }
}
