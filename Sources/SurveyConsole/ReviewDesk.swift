import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The review desk: the home page, a survey's queue (filters, counts per state, bulk actions),
/// a response's page (answers with the version's labels, files, history, the actions its state
/// allows) and the review step itself — every action through `Reviews`, as the API's.
struct ReviewDesk: Sendable {
    let console: Console
    var pages: Pages { console.pages }
    var operations: Operations { console.operations }

    static let stateLabels: [(ReviewState, String)] = [
        (.submitted, "Submitted"), (.inReview, "In review"), (.returned, "Returned"), (.approved, "Approved"), (.rejected, "Rejected"),
        (.edited, "Edited"), (.hasIssues, "Has issues"), (.none, "No review"),
    ]
    static func label(_ state: ReviewState) -> String { stateLabels.first { $0.0 == state }?.1 ?? state.rawValue }
    /// A count of responses as the desk shows it: exact up to `ReviewQueue.countCap`, "10000+" beyond.
    static func shown(_ count: Int) -> String { count > ReviewQueue.countCap ? "\(ReviewQueue.countCap)+" : String(count) }
    static let actionLabels: [(ReviewAction, String, String)] = [
        (.startReview, "Start review", "good"), (.returnForCorrection, "Return for correction", "secondary"),
        (.approve, "Approve", "good"), (.reject, "Reject", "danger"), (.flagIssues, "Flag issues", "secondary"),
    ]

    // MARK: home

    func home(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        var frame = console.frame("Home", v)
        switch v.caller {
        case .operatorToken:
            return Pages.redirect("/console/operator/orgs")
        case .user(let user, _):
            let org = try operations.organizations.organization(user.orgId)
            frame.expired = console.expiredNotice(user.orgId)
            let reviews = user.has(.reviewer) || user.has(.admin)
            let views = { (surveyId: String) -> [String: TemplateValue] in
                let base = "/console/orgs/\(user.orgId)/surveys/\(surveyId)"
                return ["dataUrl": .text(base + "/data"), "mapUrl": .text(base + "/map"), "summaryUrl": .text(base + "/summary")]
            }
            var surveys: [[String: TemplateValue]] = try operations.waitingForReview(user, orgId: user.orgId).map { s, waiting in
                ["surveyTitle": .text(s.title), "waiting": .text("\(Self.shown(waiting)) waiting for review"),
                 "queueUrl": .text("/console/orgs/\(user.orgId)/surveys/\(s.surveyId)/responses?state=submitted")].merging(views(s.surveyId)) { a, _ in a }
            }
            if !reviews {
                // A collector: their own responses in each survey's views.
                surveys = try operations.visibleSurveys(of: user.orgId, by: user, after: nil, limit: 500).map { s, _ in
                    ["surveyTitle": .text(s.title), "waiting": .text("")].merging(views(s.surveyId)) { a, _ in a }
                }
            }
            let item: [String: TemplateValue] = [
                "orgName": .text(org.name), "orgState": .text(operations.gate.isExpired(org) ? "expired" : "active"),
                "hasSurveys": .flag(!surveys.isEmpty), "surveys": .list(surveys),
                "noSurveys": .text("No surveys yet."),
                "roleNote": .text(reviews ? "" : "The review desk is for reviewers and admins; your role does not include it. Each survey's Data, Map and Summary show the responses you submitted."),
            ]
            return pages.render(.home, ["heading": .text(org.name), "orgs": .list([item])], frame: frame)
        }
    }

    // MARK: the queue

    func queue(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        return try queuePage(visit, surveyId: request.parameter("surveyId"), query: request.query, results: [])
    }

    private func queuePage(_ visit: Visit, surveyId: String, query: [String: String],
                           results: [[String: TemplateValue]], problem: String? = nil) throws -> HTTPResponse {
        let v = visit.visitor, orgId = visit.orgId
        let user = try visit.member()
        var filter = ReviewQueue.Filter()
        let state = query["state"].flatMap { ReviewState(rawValue: $0) }
        filter.state = state
        filter.surveyVersionId = query["version"].flatMap { $0.isEmpty ? nil : $0 }
        filter.submittedBy = query["submitter"].flatMap { $0.isEmpty ? nil : $0 }
        filter.fieldTaskId = query["task"].flatMap { $0.isEmpty ? nil : $0 }
        filter.receivedFrom = query["from"].flatMap { Timestamp.parse($0 + "T00:00:00Z") }
        filter.receivedTo = query["to"].flatMap { Timestamp.parse($0 + "T00:00:00Z") }
        let page = try operations.reviewQueue.page(orgId: orgId, surveyId: surveyId, by: user, filter, before: query["before"])
        let base = "/console/orgs/\(orgId)/surveys/\(surveyId)/responses"
        func url(state: ReviewState?, before: String? = nil) -> String {
            var q = query.filter { ["version", "submitter", "task", "from", "to"].contains($0.key) && !$0.value.isEmpty }
            q["state"] = state?.rawValue
            q["before"] = before
            let s = q.sorted { $0.key < $1.key }.map { "\($0.key)=\(urlEncoded($0.value))" }.joined(separator: "&")
            return s.isEmpty ? base : base + "?" + s
        }
        // A state counted no further than the cap adds the cap to "All", which is then "at least".
        let all = page.counts.values.reduce(0) { $0 + min($1, ReviewQueue.countCap) }
        let allIsAtLeast = page.counts.values.contains { $0 > ReviewQueue.countCap }
        var states: [[String: TemplateValue]] = [["label": .text("All"), "count": .text(allIsAtLeast ? "\(all)+" : String(all)),
                                                  "url": .text(url(state: nil)), "current": .flag(state == nil)]]
        for (s, label) in Self.stateLabels where s != .none || page.counts[.none] != nil {
            states.append(["label": .text(label), "count": .text(Self.shown(page.counts[s, default: 0])), "url": .text(url(state: s)),
                           "current": .flag(state == s)])
        }
        let names = Dictionary(page.submitters.map { ($0.userId, $0.name) }, uniquingKeysWith: { a, _ in a })
        let rows: [[String: TemplateValue]] = page.rows.map { r in
            ["responseId": .text(r.responseId), "clientSubmissionId": .text(r.clientSubmissionId), "revision": .text(String(r.revision)),
             "url": .text("/console/orgs/\(orgId)/responses/\(r.responseId)"), "submitter": .text(names[r.submitter] ?? r.submitter),
             "receivedAt": .text(Pages.time(r.receivedAt)), "reviewState": .text(r.reviewState.rawValue), "stateLabel": .text(Self.label(r.reviewState))]
        }
        var frame = console.frame("Review queue", v)
        frame.expired = console.expiredNotice(orgId)
        frame.problem = problem
        let values: [String: TemplateValue] = [
            "surveyTitle": .text(page.survey.title), "states": .list(states), "queueUrl": .text(base), "state": .text(state?.rawValue ?? ""),
            "exportsUrl": .text("/console/orgs/\(orgId)/surveys/\(surveyId)/exports"), "viewsUrl": .text("/console/orgs/\(orgId)/surveys/\(surveyId)"),
            "filtering": .flag(["version", "submitter", "task", "from", "to"].contains { !(query[$0] ?? "").isEmpty }),
            "versions": .list(page.versions.map { ["id": .text($0.surveyVersionId), "label": .text("Version \($0.number)"),
                                                   "selected": .flag($0.surveyVersionId == filter.surveyVersionId)] }),
            "submitters": .list(page.submitters.map { ["id": .text($0.userId), "label": .text($0.name), "selected": .flag($0.userId == filter.submittedBy)] }),
            "from": .text(query["from"] ?? ""), "to": .text(query["to"] ?? ""), "task": .text(query["task"] ?? ""),
            "hasRows": .flag(!rows.isEmpty), "rows": .list(rows), "csrf": .text(v.csrf),
            "bulkUrl": .text("/console/orgs/\(orgId)/surveys/\(surveyId)/bulk"), "back": .text(String(url(state: state).dropFirst(base.count))),
            "more": .text(page.more.map { url(state: state, before: $0) } ?? ""),
            "gatedOff": .text(frame.expired == nil ? "" : "The subscription has expired: reviews wait until it is renewed."),
            "hasResults": .flag(!results.isEmpty), "results": .list(results),
        ]
        return pages.render(.queue, values, frame: frame)
    }

    /// Start review of, or approve, every selected response — each with the revision the queue
    /// showed — and list what happened to each.
    func bulk(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let form = visit.form
        let orgId = request.parameter("orgId"), surveyId = request.parameter("surveyId")
        let user = try visit.member()
        guard let action = form["action"], action == "startReview" || action == "approve" else {
            throw ApiError(.validationFailed, "Choose Start review or Approve for the selected responses.")
        }
        var results: [[String: TemplateValue]] = []
        for item in form.all("item") {
            let parts = item.split(separator: ":")
            guard parts.count == 2, let revision = Int(parts[1]) else { continue }
            let responseId = String(parts[0])
            var result: [String: TemplateValue] = ["responseId": .text(responseId), "url": .text("/console/orgs/\(orgId)/responses/\(responseId)")]
            do {
                _ = try operations.reviews.review(orgId: orgId, responseId: responseId, by: user) {
                    ReviewRequest(action: action, expectedRevision: revision, comment: nil)
                }
                result["kind"] = .text("ok")
                result["text"] = .text(action == "approve" ? "approved" : "review started")
            } catch let e as ApiError {
                result["kind"] = .text("refused")
                result["text"] = .text(stepRefusal(e, action: action, by: user, orgId: orgId, responseId: responseId))
            }
            results.append(result)
        }
        let back = form["back"] ?? ""
        let query = Dictionary(back.drop { $0 == "?" }.split(separator: "&").compactMap { pair -> (String, String)? in
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard kv.count == 2, let value = formDecoded(kv[1]) else { return nil }
            return (String(kv[0]), value)
        }, uniquingKeysWith: { a, _ in a })
        return try queuePage(visit, surveyId: surveyId, query: query, results: results,
                             problem: results.isEmpty ? "Select at least one response first, then press the button again." : nil)
    }

    /// A refused review step, as a sentence.
    private func stepRefusal(_ e: ApiError, action: String, by user: UserRecord, orgId: String, responseId: String) -> String {
        let label = Self.actionLabels.first { $0.0.rawValue == action }?.1 ?? action
        switch e.code {
        case .validationFailed where e.errors.contains { $0.path == "comment" }:
            return "Write a comment first: “\(label)” tells the collector why, in the response's history."
        case .invalidTransition:
            let now = try? operations.visibleResponse(user, orgId: orgId, responseId: responseId)
            return "“\(label)” is not possible now" + (now.map { ": the response is \(Self.label($0.reviewState)) (\($0.reviewState.rawValue))." } ?? ".")
        case .staleRevision:
            let now = try? operations.visibleResponse(user, orgId: orgId, responseId: responseId)
            let state = now.map { "It is now \(Self.label($0.reviewState)) (\($0.reviewState.rawValue)), revision \($0.revision)." } ?? ""
            return "This response changed since you opened it, so nothing was done. \(state) Look at it again before you act."
        case .subscriptionExpired: return "the subscription has expired, so nothing was changed."
        default: return Console.sentence(e).1
        }
    }

    // MARK: a response

    func response(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        let orgId = request.parameter("orgId"), responseId = request.parameter("responseId")
        let user = try visit.member()
        let r = try operations.visibleResponse(user, orgId: orgId, responseId: responseId)
        var frame = console.frame("Response \(r.clientSubmissionId)", v)
        frame.expired = console.expiredNotice(orgId)
        if let done = request.query["done"] {
            frame.notice = done == "edit" ? "Done: the answers were edited (a new version; the earlier ones are kept)."
                : Self.actionLabels.first { $0.0.rawValue == done }.map { "Done: \($0.1)." }
        }
        return try responsePage(v, user, r, lang: request.query["lang"], frame: frame)
    }

    /// `lang`: the language asked for (`?lang=`), the form's default when it has no such language.
    private func responsePage(_ v: Console.Visitor, _ user: UserRecord, _ r: ResponseRecord, lang: String?, frame: Pages.Frame,
                              status: Int = 200, comment: String = "", editedAnswers: JSONValue? = nil, editComment: String = "") throws -> HTTPResponse {
        let orgId = r.orgId
        let survey = try? operations.visibleSurvey(r.surveyId, of: orgId, by: user).0
        let version = try? operations.visibleVersion(r.surveyVersionId, of: orgId, by: user)
        let users = try operations.members(of: orgId, by: user)
        let names = Dictionary(users.map { ($0.userId, $0.name) }, uniquingKeysWith: { a, _ in a })
        let definition = try version.map { try operations.definitions.definition(of: $0) }
        let answers = (try? JSONParser.parse(Array(r.answers.utf8))) ?? .object([:])
        let language = LanguageChoice(definition, requested: lang)
        let layout = definition.map { definition in
            ResponseLayout(definition: definition, answers: answers, language: language, pages: pages) { id in
                guard let upload = try? operations.readableUpload(user, orgId: orgId, clientUploadId: id) else { return nil }
                return (upload, "/console/orgs/\(orgId)/uploads/\(urlEncoded(id))")
            }.html()
        }
        let page = "/console/orgs/\(orgId)/responses/\(r.responseId)"
        let languages = language.links(to: page)
        let history = try operations.reviews.history(orgId: orgId, responseId: r.responseId, by: user).map { a -> [String: TemplateValue] in
            let detail = a.detail.flatMap { try? JSONParser.parse(Array($0.utf8)) }?.objectValue
            let what = Self.historyLabel(a.action, to: detail?["toState"]?.stringValue)
            var item: [String: TemplateValue] = ["what": .text(what), "actor": .text(names[a.actor] ?? a.actor), "at": .text(Pages.time(a.at))]
            if let c = detail?["comment"]?.stringValue, !c.isEmpty { item["comment"] = .text(c) }
            return item
        }
        // Reviewers and admins edit the answers, in a form laid out like them (a refused edit
        // shows what was sent, to correct).
        let editFields = (user.has(.reviewer) || user.has(.admin)) ? definition.map { definition in
            AnswersEditForm(definition: definition, answers: (editedAnswers ?? answers).objectValue ?? [:], language: language).html()
        } : nil
        let entities = EntityPages(console: console).links(of: r.responseId, orgId: orgId, by: user)
        let state = r.reviewState
        let gatedOff = frame.expired == nil ? "" : "The subscription has expired: review actions wait until it is renewed."
        let actions: [[String: TemplateValue]] = user.has(.reviewer) ? Self.actionLabels.compactMap { (action, label, style) in
            guard ReviewStateMachine.apply(action, to: state) != nil else { return nil }
            return ["action": .text(action.rawValue), "label": .text(label), "style": .text(style)]
        } : []
        let values: [String: TemplateValue] = [
            "responseId": .text(r.responseId), "clientSubmissionId": .text(r.clientSubmissionId), "revision": .text(String(r.revision)),
            "reviewState": .text(r.reviewState.rawValue), "stateLabel": .text(Self.label(r.reviewState)),
            "submitter": .text(names[r.submitter] ?? r.submitter), "receivedAt": .text(Pages.time(r.receivedAt)),
            "capturedAt": .text(r.capturedAt.map(Pages.time) ?? ""),
            "version": .text(version.map { "Version \($0.number)" } ?? r.surveyVersionId), "fieldTaskId": .text(r.fieldTaskId ?? ""),
            "surveyTitle": .text(survey?.title ?? "Survey"), "queueUrl": .text("/console/orgs/\(orgId)/surveys/\(r.surveyId)/responses"),
            "answers": .html(layout ?? ""), "hasLanguages": .flag(!languages.isEmpty), "languages": .list(languages),
            "lang": .text(language.isExplicit ? language.chosen ?? "" : ""), "history": .list(history), "hasActions": .flag(!actions.isEmpty), "actions": .list(actions),
            "csrf": .text(v.csrf), "reviewUrl": .text(page + "/review"), "gatedOff": .text(gatedOff),
            "comment": .text(comment), "entities": .list(entities), "hasEntities": .flag(!entities.isEmpty),
            "canEdit": .flag(editFields != nil), "editFields": .html(editFields ?? ""), "editUrl": .text(page + "/answers"),
            "editComment": .text(editComment),
        ]
        return pages.render(.response, values, frame: frame, status: status)
    }

    static func historyLabel(_ action: String, to state: String?) -> String {
        switch action {
        case "response.accept": "Submitted"
        case "review.startReview": "Review started"
        case "review.returnForCorrection": "Returned for correction"
        case "review.approve": "Approved"
        case "review.reject": "Rejected"
        case "review.resubmit", "response.resubmit": "Resubmitted"
        case "review.flagIssues": "Issues flagged"
        case "response.edit": "Answers edited"
        case "response.comment": "Comment"
        default: state.map { "\(action) → \(ReviewState(rawValue: $0).map(label) ?? $0)" } ?? action
        }
    }

    /// One review step from the response page, on the revision the page showed.
    func review(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId"), responseId = request.parameter("responseId")
        let user = try visit.member()
        let action = form["action"] ?? ""
        let comment = (form["comment"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        do {
            _ = try operations.reviews.review(orgId: orgId, responseId: responseId, by: user) {
                ReviewRequest(action: action, expectedRevision: Int(form["expectedRevision"] ?? "") ?? 0, comment: comment.isEmpty ? nil : comment)
            }
            let lang = (form["lang"] ?? "").isEmpty ? "" : "&lang=" + urlEncoded(form["lang"] ?? "")
            return Pages.redirect("/console/orgs/\(orgId)/responses/\(responseId)?done=\(urlEncoded(action))\(lang)")
        } catch let e as ApiError where [.staleRevision, .invalidTransition, .validationFailed, .subscriptionExpired, .taskAlreadyCompleted].contains(e.code) {
            let current = try operations.visibleResponse(user, orgId: orgId, responseId: responseId)
            var frame = console.frame("Response \(current.clientSubmissionId)", v)
            frame.expired = console.expiredNotice(orgId)
            frame.problem = stepRefusal(e, action: action, by: user, orgId: orgId, responseId: responseId)
            return try responsePage(v, user, current, lang: form["lang"], frame: frame, status: e.code.httpStatus, comment: comment)
        }
    }

    /// An edit of the answers from the response page, on the revision the page showed: the
    /// edit operation (`source: console`), then the page again; a refused edit shows the page
    /// with the operation's sentence and the fields at fault, the sent values kept in the form.
    func editAnswers(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let (v, form) = (visit.visitor, visit.form)
        let orgId = request.parameter("orgId"), responseId = request.parameter("responseId")
        let user = try visit.member()
        let r = try operations.visibleResponse(user, orgId: orgId, responseId: responseId)
        let comment = (form["comment"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let version = try operations.visibleVersion(r.surveyVersionId, of: orgId, by: user)
        let definition = try operations.definitions.definition(of: version)
        let stored = (try? JSONParser.parse(Array(r.answers.utf8)))?.objectValue ?? [:]
        let sent = AnswersEditForm(definition: definition, answers: stored, language: LanguageChoice(definition, requested: form["lang"]))
            .answers(from: form)
        do {
            _ = try operations.reviews.edit(orgId: orgId, responseId: responseId, by: user, source: "console") {
                AnswersEdit(expectedRevision: Int(form["expectedRevision"] ?? "") ?? 0, answers: sent, comment: comment.isEmpty ? nil : comment)
            }
            let lang = (form["lang"] ?? "").isEmpty ? "" : "&lang=" + urlEncoded(form["lang"] ?? "")
            return Pages.redirect("/console/orgs/\(orgId)/responses/\(responseId)?done=edit\(lang)")
        } catch let e as ApiError where [.staleRevision, .validationFailed, .subscriptionExpired, .attachmentNotUploaded].contains(e.code) {
            let current = try operations.visibleResponse(user, orgId: orgId, responseId: responseId)
            var frame = console.frame("Response \(current.clientSubmissionId)", v)
            frame.expired = console.expiredNotice(orgId)
            switch e.code {
            case .validationFailed:
                frame.problem = "The answers were not changed: correct the fields below and save again."
                frame.problemDetails = e.errors.map { "\($0.path): \($0.message)" }
            case .staleRevision:
                frame.problem = "This response changed since you opened it, so the answers were not changed. It is now \(Self.label(current.reviewState)), revision \(current.revision): look at it again before you edit."
            default:
                frame.problem = e.code == .subscriptionExpired ? "The subscription has expired, so the answers were not changed." : Console.sentence(e).1
            }
            // A stale page shows the current answers; any other refusal what was sent, to correct.
            return try responsePage(v, user, current, lang: form["lang"], frame: frame, status: e.code.httpStatus,
                                    editedAnswers: e.code == .staleRevision ? nil : sent, editComment: comment)
        }
    }

    // MARK: files

    /// An upload's bytes for a page (an image inline, anything else as a download).
    func file(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try visit.member()
        let u = try operations.readableUpload(user, orgId: orgId, clientUploadId: request.parameter("clientUploadId"))
        let inline = ["image/jpeg", "image/png", "image/gif", "image/webp"].contains(u.contentType)
        guard let r = HTTPResponse.storedFile(operations.blobs, sha256: u.sha256, size: u.size, headers: [
            ("Content-Type", u.contentType), ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "private, no-store"),
            ("Content-Security-Policy", "default-src 'none'; sandbox"),
            ("Content-Disposition", inline ? "inline" : "attachment; filename=\"\(u.clientUploadId)\""),
        ]) else { throw ApiError(.storageUnavailable, "The file cannot be read right now.") }
        return r
    }
}
