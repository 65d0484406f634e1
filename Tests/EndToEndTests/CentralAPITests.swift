import Foundation
import SurveyDomain
import SurveyServer
import SurveyStorage
import Testing

/// ODK Central's API on a real server: sessions of a console user, integer project and actor
/// ids, the routes not offered (501 / 1050, never a 404), and the submission door's refusals,
/// each of which leaves no row, audit entry or stored key. (pyodk itself drives the door in
/// `Tests/Central/test_pyodk.py`.)
@Suite struct CentralAPITests {
    struct World {
        let f: Fixture
        let survey: (surveyId: String, versionId: String, contentHash: String)
        let projectId: Int
        let xmlFormId: String
        let formVersion: String
        static let email = "cole@example.org"
        static let password = "correct horse battery"

        init(reviewRequired: Bool = false) throws {
            f = try Fixture()
            survey = try f.publishSurvey(reviewRequired: reviewRequired)
            let projects = try f.client.get("/v1/projects", token: f.adminToken)
            guard projects.status == 200, let id = projects.json?.arrayValue?.first?["id"]?.intValue else {
                throw TestFailure("projects: \(projects.status) \(projects.text)")
            }
            projectId = id
            let forms = try f.client.get("/v1/projects/\(id)/forms", token: f.adminToken)
            guard let form = forms.json?.arrayValue?.first, let xmlFormId = form["xmlFormId"]?.stringValue,
                  let version = form["version"]?.stringValue else { throw TestFailure("forms: \(forms.status) \(forms.text)") }
            self.xmlFormId = xmlFormId
            formVersion = version
            // The collector gets a console password (an invitation), as pyodk's user would.
            let invited = try f.client.post("/v1/orgs/\(f.orgId)/users/\(f.collectorId)/invitations", token: f.adminToken, ["email": .string(Self.email)])
            guard invited.status == 201, let url = invited.json?["invitationUrl"]?.stringValue, let at = url.range(of: "/console/") else {
                throw TestFailure("invite: \(invited.status) \(invited.text)")
            }
            let set = try f.client.request("POST", String(url[at.lowerBound...]), body: Array("password=correct+horse+battery".utf8),
                                           headers: ["Content-Type": "application/x-www-form-urlencoded", "Origin": "http://127.0.0.1"])
            guard set.status == 200 else { throw TestFailure("set password: \(set.status)") }
        }

        func signIn(_ email: String = World.email, _ password: String = World.password, from source: String? = nil) throws -> Reply {
            try f.client.request("POST", "/v1/sessions", json: ["email": .string(email), "password": .string(password)], from: source)
        }

        func instance(_ instanceID: String, size: String = "3", formId: String? = nil) -> [UInt8] {
            Array("""
                <data id="\(formId ?? xmlFormId)" version="\(formVersion)"><size>\(size)</size><source>well</source><notes/><photo/>\
                <meta><instanceID>\(instanceID)</instanceID></meta></data>
                """.utf8)
        }

        func submit(_ xml: [UInt8], token: String?, project: String? = nil) throws -> Reply {
            try f.client.request("POST", "/v1/projects/\(project ?? String(projectId))/forms/\(xmlFormId)/submissions", token: token, body: xml,
                                 headers: ["Content-Type": "application/xml"])
        }

        /// Rows a refusal must not add.
        func traces() throws -> [Int64] {
            try ["responses", "audit", "idempotency_keys"].map { try f.server.count("SELECT COUNT(*) AS n FROM \($0)") }
        }
    }

    @Test func integerIdsAreServerWideInCreationOrderAndAnsweredWithTheOrganizationAndUser() throws {
        let w = try World()
        let c = w.f.client
        let op = w.f.server.operatorToken
        let second = try c.post("/v1/orgs", token: op, ["name": "Second", "expiresAt": .string(Timestamp.format(Timestamp.nowMillis() + 86_400_000))])
        #expect(second.status == 201 && second.json?["projectId"]?.intValue == w.projectId + 1)
        guard let secondOrg = second.json?["orgId"]?.stringValue else { throw TestFailure("second org") }
        let a = try c.post("/v1/orgs/\(w.f.orgId)/users", token: w.f.adminToken, ["name": "Ann", "roles": ["collector"]])
        let b = try c.post("/v1/orgs/\(secondOrg)/users", token: op, ["name": "Ben", "roles": ["admin"]])
        // Actors of every organization share one sequence: the fixture made three users before these.
        guard let actorA = a.json?["actorId"]?.intValue, let actorB = b.json?["actorId"]?.intValue else { throw TestFailure("actor ids") }
        #expect(actorA == 4 && actorB == 5)
        #expect(try w.f.server.count("SELECT COUNT(DISTINCT actor_id) AS n FROM users") == 5)
        // A user sees its own organization as its one project; an operator sees every one.
        #expect(try c.get("/v1/projects", token: w.f.adminToken).json?.arrayValue?.compactMap { $0["id"]?.intValue } == [w.projectId])
        #expect(try c.get("/v1/projects", token: op).json?.arrayValue?.compactMap { $0["id"]?.intValue } == [w.projectId, w.projectId + 1])
        // Another organization's project and an unknown or malformed one are the same 404.
        let other = try c.get("/v1/projects/\(w.projectId + 1)", token: w.f.adminToken)
        for path in ["/v1/projects/\(w.projectId + 9)", "/v1/projects/0\(w.projectId)", "/v1/projects/-1", "/v1/projects/99999999999999999999999"] {
            let r = try c.get(path, token: w.f.adminToken)
            #expect(r.status == 404 && r.json?["errorCode"]?.intValue == 1005 && r.json?["code"]?.doubleValue == 404.1, "\(path)")
            #expect(r.json?["detail"] == other.json?["detail"])
        }
    }

    /// A form as Central's: its XForm's id and version, the MD5 of the XForm served, and the XForm
    /// itself (`….xml`) the very bytes the OpenRosa door and the JSON API serve.
    @Test func aFormIsTheSurveysXFormAsEveryDoorServesIt() throws {
        let w = try World()
        let c = w.f.client
        let xform = try c.get("/v1/orgs/\(w.f.orgId)/survey-versions/\(w.survey.versionId)/xform", token: w.f.adminToken)
        let served = try c.get("/v1/projects/\(w.projectId)/forms/\(w.xmlFormId).xml", token: w.f.collectorToken)
        #expect(served.status == 200 && served.header("content-type") == "application/xml" && served.body == xform.body && !served.body.isEmpty)
        let form = try c.get("/v1/projects/\(w.projectId)/forms/\(w.xmlFormId)", token: w.f.collectorToken)
        #expect(form.json?["hash"]?.stringValue == Digest.md5Hex(served.body) && form.json?["projectId"]?.intValue == w.projectId)
        #expect(form.json?["xmlFormId"]?.stringValue == w.xmlFormId && form.json?["state"]?.stringValue == "open")
        #expect(try c.get("/v1/projects/\(w.projectId)/forms/unknown_form.xml", token: w.f.collectorToken).status == 404)
        #expect(try c.get("/v1/projects/\(w.projectId)/forms/\(w.xmlFormId).xml", token: nil).status == 401)
    }

    @Test func aSessionIsTheConsoleUsersBearerTokenUntilSignOut() throws {
        let w = try World()
        let c = w.f.client
        // Wrong password and unknown email: one body, Central's 401.2.
        let wrong = try w.signIn(World.email, "not the password")
        let unknown = try w.signIn("nobody@example.org", World.password)
        #expect(wrong.status == 401 && wrong.json?["errorCode"]?.intValue == 1007 && wrong.json?["code"]?.doubleValue == 401.2)
        #expect(wrong.json?["message"] == wrong.json?["detail"])
        #expect(unknown.status == 401 && unknown.json == wrong.json)
        // Never gated: an expired organization's user still signs in (and writes no audit entry).
        try w.f.expire()
        let auditBefore = try w.f.server.count("SELECT COUNT(*) AS n FROM audit")
        let ok = try w.signIn()
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit") == auditBefore)
        try w.f.renew()
        #expect(ok.status == 200)
        guard let token = ok.json?["token"]?.stringValue, let created = ok.json?["createdAt"]?.stringValue,
              let expires = ok.json?["expiresAt"]?.stringValue, ok.json?["csrf"]?.stringValue != nil else {
            throw TestFailure("session: \(ok.status) \(ok.text)")
        }
        let lifetime: Int64? = Timestamp.parse(expires).flatMap { e in Timestamp.parse(created).map { e - $0 } }
        #expect(lifetime == Int64(24 * 3600 * 1000))
        // Stored as a hash only.
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM api_sessions") == 1)
        #expect(try w.f.server.rows("SELECT session_hash FROM api_sessions").first?.blob("session_hash") != Array(token.utf8))
        // The current user as Central's actor; the token works on surveyd's own API too.
        let me = try c.get("/v1/users/current", token: token)
        let actor = try w.f.server.rows("SELECT actor_id FROM users WHERE user_id = ?", [.text(w.f.collectorId)]).first?.int("actor_id")
        #expect(me.status == 200 && me.json?["id"]?.intValue.map(Int64.init) == actor && me.json?["email"]?.stringValue == World.email)
        #expect(me.json?["type"]?.stringValue == "user" && me.json?["deletedAt"] == .null)
        #expect(try c.get("/v1/orgs/\(w.f.orgId)/responses", token: token).status == 200)
        // Another user's session cannot be ended by this one; its own ends and is refused next.
        #expect(try c.delete("/v1/sessions/sds_not-a-session", token: token).status == 404)
        let out = try c.delete("/v1/sessions/current", token: token)
        #expect(out.status == 200 && out.json?["success"]?.boolValue == true)
        let after = try c.get("/v1/users/current", token: token)
        #expect(after.status == 401 && after.json?["code"]?.doubleValue == 401.2)
        #expect(try c.get("/v1/orgs/\(w.f.orgId)/responses", token: token).status == 401)
    }

    @Test func signInsAreThrottledAsTheConsolesAre() throws {
        let w = try World()
        for _ in 0..<10 { _ = try w.signIn(World.email, "not the password", from: "127.0.0.7") }
        // The right password too: guessing gains nothing once the attempts are used up.
        let r = try w.signIn(from: "127.0.0.7")
        #expect(r.status == 429 && r.json?["errorCode"]?.intValue == 1030 && r.header("retry-after") != nil)
        #expect(r.json?["code"]?.doubleValue == 429.103)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM api_sessions") == 0)
    }

    @Test func centralRoutesNotOfferedAre501NamingWhatIsOffered() throws {
        let w = try World()
        let c = w.f.client
        let p = w.projectId
        for (method, path) in [("GET", "/v1/projects/\(p)/datasets/households.svc/Entities/more"), ("GET", "/v1/projects/\(p)/forms/\(w.xmlFormId)/versions"),
                               ("GET", "/v1/users"), ("GET", "/v1/roles"), ("DELETE", "/v1/projects/\(p)/app-users/3"),
                               ("GET", "/v1/projects/\(p)/forms/\(w.xmlFormId).svc/Submissions/more"), ("GET", "/v1/projects/\(p)/forms/\(w.xmlFormId)/submissions.csv"),
                               ("GET", "/v1/config/analytics"), ("GET", "/v1/audits")] {
            let r = try c.request(method, path, token: w.f.adminToken)
            #expect(r.status == 501, "\(method) \(path): \(r.status)")
            #expect(r.json?["errorCode"]?.intValue == 1050 && r.json?["errorName"]?.stringValue == "NotOffered" && r.json?["retryable"]?.boolValue == false)
            #expect(r.json?["code"]?.doubleValue == 501.105 && r.json?["message"] == r.json?["detail"])
            #expect(r.json?["detail"]?.stringValue?.contains("Docs/central-api.md") == true, "\(path)")
        }
        // Below an OData service: what the services offer.
        let below = try c.get("/v1/projects/\(p)/forms/\(w.xmlFormId).svc/Submissions/more", token: w.f.adminToken)
        #expect(below.json?["detail"]?.stringValue?.contains("/v1/projects/{projectId}/forms/{xmlFormId}.svc") == true, "\(below.text)")
        // A method a served path does not take stays HTTP's 405 with Allow, saying what is offered.
        for (method, path) in [("POST", "/v1/projects"), ("DELETE", "/v1/projects/\(p)")] {
            let r = try c.request(method, path, token: w.f.adminToken)
            #expect(r.status == 405 && r.header("allow") == "GET" && r.json?["code"]?.doubleValue == 405.1005, "\(method) \(path): \(r.status)")
            #expect(r.json?["detail"]?.stringValue?.contains("POST /v1/orgs") == true)
        }
        // surveyd's own paths keep their 404.
        #expect(try c.get("/v1/orgs/\(w.f.orgId)/nothing-here", token: w.f.adminToken).status == 404)
    }

    /// One key for every door: a form ODK Collect sent is the same submission when a script
    /// sends it again through Central's API, and the other way round.
    @Test func anInstanceIdIsOneKeyForTheOpenRosaDoorAndCentrals() throws {
        let w = try World()
        let collect = CollectClient(w.f)
        let first = "uuid:0c3a1d7e-2222-4000-8000-000000000001"
        #expect(try collect.submit(w.instance(first)).status == 201)
        let again = try w.submit(w.instance(first), token: w.f.collectorToken)
        #expect(again.status == 200 && again.header("idempotent-replayed") == "true" && again.json?["instanceId"]?.stringValue == first)
        let second = "uuid:0c3a1d7e-2222-4000-8000-000000000002"
        #expect(try w.submit(w.instance(second), token: w.f.collectorToken).status == 200)
        #expect(try collect.submit(w.instance(second)).status == 202)
        // Other content under a used instanceID, through either door: refused, nothing changes.
        let traces = try w.traces()
        #expect(try w.submit(w.instance(first, size: "9"), token: w.f.collectorToken).status == 409)
        #expect(try collect.submit(w.instance(second, size: "9")).status == 409)
        #expect(try w.traces() == traces)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM responses") == 2)
    }

    /// A closed form is still listed, with its state, and refuses a new submission as Central's
    /// 409.1023 — also while the subscription has expired — leaving nothing; a submission sent
    /// before is still its replay, another body under its instanceID still 409.3.
    @Test func aClosedFormIsListedWithItsStateAndRefusesNewSubmissions() throws {
        let w = try World()
        let c = w.f.client
        let sent = "uuid:0c3a1d7e-5555-4000-8000-000000000001"
        let late = "uuid:0c3a1d7e-5555-4000-8000-000000000002"
        #expect(try w.submit(w.instance(sent), token: w.f.collectorToken).status == 200)
        let closed = try c.request("PUT", "/v1/orgs/\(w.f.orgId)/surveys/\(w.survey.surveyId)/state", token: w.f.adminToken, json: ["state": "closed"])
        #expect(closed.status == 200, "\(closed.text)")
        let forms = try c.get("/v1/projects/\(w.projectId)/forms", token: w.f.adminToken)
        #expect(forms.json?.arrayValue?.map { $0["state"]?.stringValue } == ["closed"], "\(forms.text)")
        #expect(try c.get("/v1/projects/\(w.projectId)/forms/\(w.xmlFormId)", token: w.f.collectorToken).json?["state"]?.stringValue == "closed")
        #expect(try CollectClient(w.f).formList().forms.isEmpty, "Collect's form list has open forms only")

        func traces() throws -> [Int64] {
            try ["responses", "audit WHERE action <> 'subscription.set'", "idempotency_keys"].map { try w.f.server.count("SELECT COUNT(*) AS n FROM \($0)") }
        }
        let before = try traces()
        let refused = try w.submit(w.instance(late), token: w.f.collectorToken)
        #expect(refused.status == 409 && refused.json?["errorCode"]?.intValue == 1023 && refused.json?["code"]?.doubleValue == 409.1023, "\(refused.text)")
        #expect(refused.json?["message"] == refused.json?["detail"] && refused.json?["detail"]?.stringValue?.contains("closed") == true)
        let replay = try w.submit(w.instance(sent), token: w.f.collectorToken)
        #expect(replay.status == 200 && replay.header("idempotent-replayed") == "true" && replay.json?["instanceId"]?.stringValue == sent)
        let other = try w.submit(w.instance(sent, size: "9"), token: w.f.collectorToken)
        #expect(other.status == 409 && other.json?["code"]?.doubleValue == 409.3)
        try w.f.expire()
        let whileExpired = try w.submit(w.instance(late), token: w.f.collectorToken)
        #expect(whileExpired.status == 409 && whileExpired.json?["code"]?.doubleValue == 409.1023, "reported as itself, never 1001: \(whileExpired.text)")
        try w.f.renew()
        #expect(try traces() == before)

        // Open again: the refused submission goes through, once.
        #expect(try c.request("PUT", "/v1/orgs/\(w.f.orgId)/surveys/\(w.survey.surveyId)/state", token: w.f.adminToken, json: ["state": "open"]).status == 200)
        #expect(try w.submit(w.instance(late), token: w.f.collectorToken).status == 200)
        #expect(try w.submit(w.instance(late), token: w.f.collectorToken).header("idempotent-replayed") == "true")
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM responses") == 2)
    }

    /// An edited response reads as Central's `edited`; from there `hasIssues` is surveyd's
    /// flagIssues (with Central's comment), and `edited` is never set by a PATCH.
    @Test func anEditedSubmissionReadsAsEditedAndIsFlaggedAsHasIssues() throws {
        let w = try World(reviewRequired: true)
        let c = w.f.client
        let id = "uuid:0c3a1d7e-6666-4000-8000-000000000001"
        #expect(try w.submit(w.instance(id), token: w.f.collectorToken).status == 200)
        guard let responseId = try w.f.server.rows("SELECT response_id FROM responses WHERE client_submission_id = ?", [.text(id)]).first?.string("response_id") else {
            throw TestFailure("no response")
        }
        let edited = try c.request("PUT", "/v1/orgs/\(w.f.orgId)/responses/\(responseId)/answers", token: w.f.reviewerToken,
                                   json: ["expectedRevision": 1, "answers": ["size": 4, "source": "well"]])
        #expect(edited.status == 200, "\(edited.text)")
        let path = "/v1/projects/\(w.projectId)/forms/\(w.xmlFormId)/submissions/\(id)"
        let read = try c.get(path, token: w.f.reviewerToken)
        #expect(read.json?["reviewState"]?.stringValue == "edited" && read.json?["surveydReviewState"]?.stringValue == "edited", "\(read.text)")
        let toEdited = try c.request("PATCH", path, token: w.f.reviewerToken, json: ["reviewState": "edited"])
        #expect(toEdited.status == 400 && toEdited.json?["code"]?.doubleValue == 400.1)
        let flagged = try c.request("PATCH", path, token: w.f.reviewerToken, json: ["reviewState": "hasIssues"])
        #expect(flagged.status == 200 && flagged.json?["reviewState"]?.stringValue == "hasIssues", "\(flagged.text)")
        #expect(flagged.json?["surveydReviewState"]?.stringValue == "hasIssues")
        let comment = try w.f.server.rows("SELECT detail FROM audit WHERE action = 'review.flagIssues'").first?.string("detail")
        #expect(comment?.contains("Set to hasIssues through the Central API") == true)
        // Already there: 200, nothing written; approving from hasIssues is out of order.
        let audit = try w.f.server.count("SELECT COUNT(*) AS n FROM audit")
        #expect(try c.request("PATCH", path, token: w.f.reviewerToken, json: ["reviewState": "hasIssues"]).status == 200)
        #expect(try c.request("PATCH", path, token: w.f.reviewerToken, json: ["reviewState": "approved"]).status == 409)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit") == audit)
    }

    /// `PUT …/submissions/{instanceId}` with `meta/deprecatedID` the current instanceID is an edit:
    /// a new version, state edited, the new instanceID current; the same PUT again writes nothing;
    /// a stale deprecatedID is 409.1021, nothing changes.
    @Test func aPutWithTheCurrentDeprecatedIDIsAnEdit() throws {
        let w = try World(reviewRequired: true)
        let c = w.f.client
        let a = "uuid:0c3a1d7e-7777-4000-8000-00000000000a", b = "uuid:0c3a1d7e-7777-4000-8000-00000000000b"
        #expect(try w.submit(w.instance(a), token: w.f.collectorToken).status == 200)
        func edit(_ id: String, replacing old: String, size: String) -> [UInt8] {
            Array("""
                <data id="\(w.xmlFormId)" version="\(w.formVersion)"><size>\(size)</size><source>well</source><notes/><photo/>\
                <meta><instanceID>\(id)</instanceID><deprecatedID>\(old)</deprecatedID></meta></data>
                """.utf8)
        }
        let path = "/v1/projects/\(w.projectId)/forms/\(w.xmlFormId)/submissions/\(a)"
        let put = try c.request("PUT", path, token: w.f.reviewerToken, body: edit(b, replacing: a, size: "5"), headers: ["Content-Type": "application/xml"])
        #expect(put.status == 200 && put.json?["reviewState"]?.stringValue == "edited" && put.json?["instanceId"]?.stringValue == a, "\(put.text)")
        let again = try c.request("PUT", path, token: w.f.reviewerToken, body: edit(b, replacing: a, size: "5"), headers: ["Content-Type": "application/xml"])
        #expect(again.status == 200 && again.header("idempotent-replayed") == "true")
        let audit = try w.f.server.count("SELECT COUNT(*) AS n FROM audit")
        let stale = try c.request("PUT", path, token: w.f.reviewerToken, body: edit("uuid:0c3a1d7e-7777-4000-8000-00000000000c", replacing: a, size: "6"),
                                  headers: ["Content-Type": "application/xml"])
        #expect(stale.status == 409 && stale.json?["code"]?.doubleValue == 409.1021, "\(stale.text)")
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit") == audit)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM response_versions") == 2)
        let answers = try w.f.server.rows("SELECT answers FROM responses WHERE client_submission_id = ?", [.text(a)]).first?.string("answers")
        #expect(answers?.contains(#""size":5"#) == true, "\(answers ?? "")")
        // The new instanceID is the current one: the next edit names it.
        let next = try c.request("PUT", path, token: w.f.collectorToken, body: edit("uuid:0c3a1d7e-7777-4000-8000-00000000000d", replacing: b, size: "7"),
                                 headers: ["Content-Type": "application/xml"])
        #expect(next.status == 200 && next.json?["reviewState"]?.stringValue == "edited", "\(next.text)")
    }

    /// `PATCH {reviewState}` reaches Central's state through surveyd's steps in one transaction,
    /// each audited; the state it is already in writes nothing; every refusal leaves nothing.
    @Test func aReviewStateIsSetThroughSurveydsStepsInOneTransaction() throws {
        let w = try World(reviewRequired: true)
        let c = w.f.client
        let ids = ["uuid:0c3a1d7e-3333-4000-8000-000000000001", "uuid:0c3a1d7e-3333-4000-8000-000000000002"]
        for id in ids { #expect(try w.submit(w.instance(id), token: w.f.collectorToken).status == 200) }
        func patch(_ id: String, _ state: JSONValue, token: String) throws -> Reply {
            try c.request("PATCH", "/v1/projects/\(w.projectId)/forms/\(w.xmlFormId)/submissions/\(id)", token: token, json: ["reviewState": state])
        }
        func row(_ id: String) throws -> (String, Int64) {
            let r = try w.f.server.rows("SELECT review_state, revision FROM responses WHERE client_submission_id = ?", [.text(id)]).first
            return (try r?.string("review_state") ?? "", try r?.int("revision") ?? 0)
        }
        let before = try w.traces()
        // Refusals first: a collector (1006), a state a review does not set (1031), expired (1001).
        #expect(try patch(ids[0], "approved", token: w.f.collectorToken).status == 403)
        for bad: JSONValue in [.null, "edited", "submitted", 3] {
            let r = try patch(ids[0], bad, token: w.f.reviewerToken)
            #expect(r.status == 400 && r.json?["code"]?.doubleValue == 400.1, "\(bad): \(r.status)")
        }
        try w.f.expire()
        let whileExpired = try w.traces()
        let expired = try patch(ids[0], "approved", token: w.f.reviewerToken)
        #expect(expired.status == 402 && expired.json?["code"]?.doubleValue == 402.1001)
        #expect(try w.traces() == whileExpired)
        try w.f.renew()
        let responsesNow = try w.traces().first
        #expect(try row(ids[0]) == ("submitted", 1))
        #expect(before.first == responsesNow)
        // submitted → approved: startReview and approve, two audit entries, one answer.
        let approved = try patch(ids[0], "approved", token: w.f.reviewerToken)
        #expect(approved.status == 200 && approved.json?["reviewState"]?.stringValue == "approved")
        #expect(approved.json?["surveydReviewState"]?.stringValue == "approved" && approved.json?["instanceId"]?.stringValue == ids[0])
        #expect(try row(ids[0]) == ("approved", 3))
        let auditAfter = try w.f.server.count("SELECT COUNT(*) AS n FROM audit")
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action IN ('review.startReview', 'review.approve')") == 2)
        // The state it is already in: 200, nothing written.
        #expect(try patch(ids[0], "approved", token: w.f.reviewerToken).status == 200)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit") == auditAfter)
        #expect(try row(ids[0]) == ("approved", 3))
        // Any other move from a decided state is 1020 (409.1020), nothing changes.
        let moved = try patch(ids[0], "hasIssues", token: w.f.reviewerToken)
        #expect(moved.status == 409 && moved.json?["code"]?.doubleValue == 409.102 && moved.json?["errorCode"]?.intValue == 1020)
        #expect(try row(ids[0]) == ("approved", 3))
        // hasIssues is surveyd's return for correction, with the comment the table names.
        let returned = try patch(ids[1], "hasIssues", token: w.f.reviewerToken)
        #expect(returned.status == 200 && returned.json?["reviewState"]?.stringValue == "hasIssues")
        #expect(try row(ids[1]) == ("returned", 3))
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'review.returnForCorrection' AND detail LIKE '%Set to hasIssues through the Central API%'") == 1)
    }

    /// Central's entity writes are surveyd's entity operations: a refusal (not an admin, an
    /// unknown property, an expired subscription) leaves no entity, audit entry or kept key; the
    /// same create after renewal stores it once, and sent again answers the entity it made.
    @Test func aRefusedCentralEntityWriteLeavesNothingAndTheSameCallAfterRenewalStoresOnce() throws {
        let w = try World()
        let c = w.f.client
        let lists = "/v1/projects/\(w.projectId)/datasets"
        #expect(try c.post(lists, token: w.f.adminToken, ["name": "households"]).status == 200)
        #expect(try c.post(lists + "/households/properties", token: w.f.adminToken, ["name": "village"]).status == 200)
        let entities = lists + "/households/entities"
        let id = "5a1f0c3e-2222-4000-8000-000000000001"
        let body: JSONValue = ["uuid": .string(id), "label": "House 1", "data": ["village": "Hill"]]
        func count() throws -> [Int64] {
            try ["entities", "entity_versions", "audit", "idempotency_keys"].map { try w.f.server.count("SELECT COUNT(*) AS n FROM \($0)") }
        }
        let before = try count()
        let refusals: [(Reply, Int, Int, Double)] = [
            (try c.post(entities, token: w.f.collectorToken, body), 403, 1006, 403.1),
            (try c.post(entities, token: w.f.adminToken, ["uuid": .string(id), "label": "House 1", "data": ["district": "North"]]), 422, 1002, 422.1002),
            (try c.post(entities, token: w.f.adminToken, ["entities": [["label": "A", "village": "x"], ["label": "B", "data": ["district": "y"]]]]), 422, 1002, 422.1002),
            (try c.post(lists, token: w.f.adminToken, ["name": "visits", "approvalRequired": true]), 501, 1050, 501.105),
        ]
        for (r, status, code, central) in refusals {
            #expect(r.status == status && r.json?["errorCode"]?.intValue == code && r.json?["code"]?.doubleValue == central, "\(status): \(r.status) \(r.text)")
        }
        #expect(try count() == before)
        // Said in Central's names: the body's `data`.
        #expect(refusals[1].0.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "data.district", "\(refusals[1].0.text)")
        #expect(refusals[2].0.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "entities[1].data.district", "\(refusals[2].0.text)")
        try w.f.expire()
        let whileExpired = try count()
        let expired = try c.post(entities, token: w.f.adminToken, body)
        #expect(expired.status == 402 && expired.json?["code"]?.doubleValue == 402.1001, "\(expired.status) \(expired.text)")
        #expect(try count() == whileExpired)
        try w.f.renew()
        let made = try c.post(entities, token: w.f.adminToken, body)
        #expect(made.status == 200 && made.json?["uuid"]?.stringValue == id && made.json?["currentVersion"]?["version"]?.intValue == 1, "\(made.text)")
        let again = try c.post(entities, token: w.f.adminToken, body)
        #expect(again.status == 200 && again.json?["uuid"]?.stringValue == id)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM entities") == 1)
        // A stale change: 409.15 with the current entity, nothing changed.
        let changed = try c.request("PATCH", entities + "/\(id)?baseVersion=1", token: w.f.adminToken, json: ["data": ["village": "Dale"]])
        #expect(changed.status == 200 && changed.json?["currentVersion"]?["version"]?.intValue == 2, "\(changed.text)")
        let stale = try c.request("PATCH", entities + "/\(id)?baseVersion=1", token: w.f.adminToken, json: ["data": ["village": "Vale"]])
        #expect(stale.status == 409 && stale.json?["code"]?.doubleValue == 409.15 && stale.json?["current"]?["version"]?.intValue == 2, "\(stale.text)")
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM entity_versions") == 2)
    }

    @Test func aRefusedCentralSubmissionLeavesNothingAndTheSameCallAfterRenewalStoresOnce() throws {
        let w = try World()
        let collector = w.f.collectorToken
        let id = "uuid:0c3a1d7e-1111-4000-8000-000000000001"
        let before = try w.traces()
        // Each refusal in the contract's order, each with Central's code beside surveyd's.
        let refusals: [(Reply, Int, Int, Double)] = [
            (try w.submit(w.instance(id), token: nil), 401, 1007, 401.2),
            (try w.submit(w.instance(id), token: "sdt_unknown"), 401, 1007, 401.2),
            (try w.submit(w.instance(id), token: collector, project: String(w.projectId + 7)), 404, 1005, 404.1),
            (try w.submit(w.instance(id), token: w.f.adminToken), 403, 1006, 403.1),
            (try w.submit(Array("<data".utf8), token: collector), 400, 1031, 400.1),
            (try w.submit(w.instance("short"), token: collector), 400, 1032, 400.1),
            (try w.submit(w.instance(id, formId: "another_form"), token: collector), 404, 1005, 404.1),
            (try w.submit(w.instance(id, size: "0"), token: collector), 422, 1002, 422.1002),
        ]
        for (r, status, code, central) in refusals {
            #expect(r.status == status && r.json?["errorCode"]?.intValue == code && r.json?["code"]?.doubleValue == central, "\(status): \(r.status) \(r.text)")
        }
        #expect(try w.traces() == before)
        // Expired: 402 / 1001, retryable; nothing stored (setting the expiry is audited itself).
        try w.f.expire()
        let whileExpired = try w.traces()
        let expired = try w.submit(w.instance(id), token: collector)
        #expect(expired.status == 402 && expired.json?["errorCode"]?.intValue == 1001 && expired.json?["code"]?.doubleValue == 402.1001)
        #expect(expired.json?["retryable"]?.boolValue == true)
        #expect(try w.traces() == whileExpired)
        // After renewal the same call stores it once; again is the same submission, replayed.
        try w.f.renew()
        let stored = try w.submit(w.instance(id), token: collector)
        #expect(stored.status == 200 && stored.json?["instanceId"]?.stringValue == id && stored.json?["reviewState"] == .null)
        // A resend is the stored submission, answered even while the subscription has expired.
        try w.f.expire()
        let again = try w.submit(w.instance(id), token: collector)
        try w.f.renew()
        #expect(again.status == 200 && again.header("idempotent-replayed") == "true" && again.json == stored.json)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id = ?", [.text(id)]) == 1)
        // Other content under the same instanceID: 409 / 409.3, nothing changes.
        let traces = try w.traces()
        let conflict = try w.submit(w.instance(id, size: "4"), token: collector)
        #expect(conflict.status == 409 && conflict.json?["code"]?.doubleValue == 409.3)
        #expect(try w.traces() == traces)
        // Read back through the door: the list, the one, and its (empty) attachments.
        let base = "/v1/projects/\(w.projectId)/forms/\(w.xmlFormId)/submissions"
        #expect(try w.f.client.get(base, token: w.f.reviewerToken).json?.arrayValue?.compactMap { $0["instanceId"]?.stringValue } == [id])
        #expect(try w.f.client.get(base + "/" + id, token: collector).json == stored.json)
        #expect(try w.f.client.get(base + "/" + id + "/attachments", token: collector).json == .array([]))
        #expect(try w.f.client.get(base + "/uuid:not-stored-0001", token: collector).status == 404)
        // A survey without review: no review state can be set (1020), nothing changes.
        let unreviewed = try w.f.client.request("PATCH", base + "/" + id, token: w.f.reviewerToken, json: ["reviewState": "approved"])
        #expect(unreviewed.status == 409 && unreviewed.json?["errorCode"]?.intValue == 1020)
        #expect(try w.f.server.rows("SELECT review_state FROM responses WHERE client_submission_id = ?", [.text(id)]).first?.string("review_state") == "none")
    }
}
