import Foundation
import SurveyDomain
import SurveyStorage
import Testing

/// The console's forms sent without their fields, as a script or a browser that skips the
/// page's own checks sends them: each is refused on the page it came from with the operation's
/// sentence and the field at fault, and nothing is written.
@Suite struct ConsoleFormFieldTests {
    typealias Session = ConsoleAdminTests.Session

    /// The page's text as a person reads it (entities of the escaped apostrophes and quotes undone).
    static func text(_ r: Reply) -> String {
        r.text.replacingOccurrences(of: "&#39;", with: "'").replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
    }

    static func expectRefused(_ r: Reply, _ sentences: [String], status: Int = 422, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.status == status, "status \(r.status)", sourceLocation: sourceLocation)
        #expect(r.header("content-type")?.hasPrefix("text/html") == true, sourceLocation: sourceLocation)
        for s in sentences {
            #expect(text(r).contains(s), "\(s) is not on the page: \(text(r).prefix(3000))", sourceLocation: sourceLocation)
        }
    }

    func count(_ f: Fixture, _ table: String) throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM \(table)") }

    @Test func anAdminsFormsWithoutTheirFieldsAreRefusedAndWriteNothing() throws {
        let f = try Fixture()
        _ = try f.publishSurvey()
        let s = try Session(f, token: f.adminToken)
        let base = "/console/orgs/\(f.orgId)"
        let before = try ["users", "invitations", "surveys", "tasks", "webhooks", "audit"].map { try count(f, $0) }

        Self.expectRefused(try s.post("\(base)/users", [:]), ["The roles are not valid.", "roles: at least one role"])
        Self.expectRefused(try s.post("\(base)/users/\(f.collectorId)/invitation", [:]),
                           ["The email address is not valid.", "email: an email address"])
        Self.expectRefused(try s.post("\(base)/surveys", [:]), ["must be 1 to 500 characters.", "title: 1 to 500 characters"])
        Self.expectRefused(try s.post("\(base)/tasks", [:]), ["The task is not valid.", "title: 1 to 500 characters",
                                                              "surveyId: no such survey in this organization",
                                                              "assigneeUserId: not an active collector of this organization"])
        Self.expectRefused(try s.post("\(base)/webhooks", [:]), ["The webhook is not valid.", "events: at least one event"])
        #expect(try ["users", "invitations", "surveys", "tasks", "webhooks", "audit"].map { try count(f, $0) } == before)
        #expect(try f.server.rows("SELECT email FROM users WHERE user_id = ?", [.text(f.collectorId)]).first?.optionalString("email") == nil)
    }

    @Test func anOperatorsNewOrganizationWithoutItsFieldsIsRefusedWhole() throws {
        let f = try Fixture()
        let s = try Session(f, token: f.server.operatorToken)
        let tables = ["orgs", "users", "invitations", "audit"]
        let before = try tables.map { try count(f, $0) }
        Self.expectRefused(try s.post("/console/operator/orgs", [:]), ["Choose the date the subscription ends.", "expiresAt: a date"])
        Self.expectRefused(try s.post("/console/operator/orgs", ["expiresAt": "2099-12-31"]),
                           ["The organization was not created.", "Name: 1 to 200 characters, not only spaces",
                            "First admin's name: 1 to 200 characters, not only spaces"])
        Self.expectRefused(try s.post("/console/operator/orgs", ["expiresAt": "2099-12-31", "name": "River Team", "adminName": "Rin"]),
                           ["The email address is not valid.", "email: an email address"])
        #expect(try tables.map { try count(f, $0) } == before)
    }

    @Test func aReviewStepOrBulkActionWithoutItsFieldsChangesNothing() throws {
        let f = try Fixture()
        let survey = try f.publishSurvey(reviewRequired: true)
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, ResponseTests.submission("console-fields-0001", survey))
        let rid = try #require(r.json?["responseId"]?.stringValue)
        let s = try Session(f, token: f.reviewerToken)
        let audit = try count(f, "audit")
        Self.expectRefused(try s.post("/console/orgs/\(f.orgId)/responses/\(rid)/review", [:]), ["Unknown review action."])
        let bulk = "/console/orgs/\(f.orgId)/surveys/\(survey.surveyId)/bulk"
        Self.expectRefused(try s.post(bulk, [:]), ["Choose Start review or Approve for the selected responses."])
        let none = try s.post(bulk, ["action": "approve"])
        #expect(none.status == 200)
        #expect(Self.text(none).contains("Select at least one response first, then press the button again."))
        let state = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(rid)", token: f.reviewerToken)
        #expect(state.json?["reviewState"]?.stringValue == "submitted" && state.json?["revision"]?.intValue == 1)
        #expect(try count(f, "audit") == audit)
    }

    @Test func signInAndAnInvitationWithoutTheirFieldsAreRefused() throws {
        let w = try ConsoleTests.World()
        let sessions = try count(w.f, "console_sessions")
        let signIn = try w.form("POST", "/console/sign-in", [:])
        Self.expectRefused(signIn, [], status: 401)
        #expect(signIn.header("set-cookie") == nil)
        #expect(try count(w.f, "console_sessions") == sessions)

        let link = w.path(try w.invite(email: "rae.again@example.org"))
        Self.expectRefused(try w.form("POST", link, [:]), ["The password must be at least 10 characters long."])
        // The link still works: nothing was used up.
        #expect(try w.form("GET", link).status == 200)
        #expect(try w.form("POST", link, ["password": "a good long password"]).status == 200)
    }

    /// `/console` is `/console/`; a page opened without a session comes back, with its query,
    /// after the sign-in.
    @Test func aPageOpenedWithoutASessionIsReturnedToAfterSigningIn() throws {
        let w = try ConsoleTests.World()
        let bare = try w.form("GET", "/console")
        #expect(bare.status == 303 && bare.header("location") == "/console/")
        let queue = "/console/orgs/\(w.f.orgId)/surveys/\(w.survey.surveyId)/responses"
        let away = try w.form("GET", queue + "?version=\(w.survey.versionId)&state=submitted")
        #expect(away.status == 303)
        let location = try #require(away.header("location"))
        let next = try #require(URLComponents(string: location)?.queryItems?.first { $0.name == "next" }?.value)
        #expect(location.hasPrefix("/console/sign-in"))
        #expect(next == queue + "?state=submitted&version=\(w.survey.versionId)")
        let signedIn = try w.form("POST", "/console/sign-in", ["email": ConsoleTests.World.email, "password": ConsoleTests.World.password, "next": next])
        #expect(signedIn.status == 303 && signedIn.header("location") == next)
    }
}
