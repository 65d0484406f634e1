import Foundation
import SurveyDomain
import SurveyServer
import SurveyStorage
import Synchronization
import Testing

/// The web console's doors on a real server, without a browser: invitations, sign-in and
/// sessions, the CSRF token and `Origin` check, throttling, escaping. (The click-through tests
/// in a real Chromium are `Tests/Browser/test_console.py`.)
@Suite struct ConsoleTests {
    static let definition: JSONValue = ["title": "Console", "questions": [
        ["id": "size", "type": "integer", "label": "People in the household", "required": true],
        ["id": "notes", "type": "text", "label": "Notes"],
    ]]

    /// A fixture with a reviewer who has a console password.
    struct World {
        let f: Fixture
        let reviewerId: String
        let survey: (surveyId: String, versionId: String, contentHash: String)
        static let email = "rae@example.org"
        static let password = "correct horse battery"

        init(configure: (inout App.Configuration) -> Void = { _ in }) throws {
            f = try Fixture(server: try TestServer(configure: configure))
            let r = try f.client.post("/v1/orgs/\(f.orgId)/users", token: f.adminToken, ["name": "Rae Reviewer", "roles": ["reviewer"]])
            guard r.status == 201, let id = r.json?["userId"]?.stringValue else { throw TestFailure("user: \(r.status)") }
            reviewerId = id
            survey = try f.publishSurvey(reviewRequired: true, definition: ConsoleTests.definition)
            let url = try invite(email: Self.email)
            let set = try form("POST", path(url), ["password": Self.password])
            guard set.status == 200 else { throw TestFailure("set password: \(set.status) \(set.text)") }
        }

        func invite(email: String, token: String? = nil) throws -> String {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/users/\(reviewerId)/invitations", token: token ?? f.adminToken, ["email": .string(email)])
            guard r.status == 201, let url = r.json?["invitationUrl"]?.stringValue else { throw TestFailure("invite: \(r.status) \(r.text)") }
            return url
        }

        func path(_ url: String) -> String { String(url[url.range(of: "/console/")!.lowerBound...]) }

        /// A form POST (or a GET) as a browser sends it.
        func form(_ method: String, _ path: String, _ fields: [String: String] = [:], cookie: String? = nil,
                  origin: String? = "http://127.0.0.1", from source: String? = nil, headers extra: [String: String] = [:]) throws -> Reply {
            var headers = ["Content-Type": "application/x-www-form-urlencoded"]
            if let cookie { headers["Cookie"] = "surveyd_session=\(cookie)" }
            if let origin, method == "POST" { headers["Origin"] = origin }
            let body = fields.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
            headers.merge(extra) { _, b in b }
            return try f.client.request(method, path, body: method == "POST" ? Array(body.utf8) : nil,
                                        headers: method == "POST" ? headers : headers.filter { $0.key == "Cookie" || extra[$0.key] != nil }, from: source)
        }

        /// Signs in; the session id from the cookie.
        func signIn(_ email: String = World.email, _ password: String = World.password) throws -> String {
            let r = try form("POST", "/console/sign-in", ["email": email, "password": password, "next": "/console/"])
            guard r.status == 303, let cookie = r.header("set-cookie"), let value = cookie.split(separator: ";").first?.split(separator: "=").last else {
                throw TestFailure("sign-in: \(r.status) \(r.text)")
            }
            return String(value)
        }

        func submit(_ id: String, notes: String = "fine") throws -> String {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                      ResponseTests.submission(id, survey, answers: ["size": 3, "notes": .string(notes)]))
            guard r.status == 201, let rid = r.json?["responseId"]?.stringValue else { throw TestFailure("submit: \(r.status) \(r.text)") }
            return rid
        }

        func state(_ responseId: String) throws -> (String, Int) {
            let r = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)", token: f.reviewerToken)
            return (r.json?["reviewState"]?.stringValue ?? "", r.json?["revision"]?.intValue ?? 0)
        }

        /// The CSRF token a page's forms carry.
        static func csrf(_ html: String) -> String? {
            guard let at = html.range(of: #"name="csrf" value=""#) else { return nil }
            return String(html[at.upperBound...].prefix { $0 != "\"" })
        }
    }

    @Test func anInvitationSetsTheEmailAndItsLinkWorksOnce() throws {
        let w = try World()
        // The email is set (lowercased); another user may not take it.
        #expect(try w.f.server.rows("SELECT email FROM users WHERE user_id = ?", [.text(w.reviewerId)]).first?.string("email") == World.email)
        let taken = try w.f.client.post("/v1/orgs/\(w.f.orgId)/users/\(w.f.collectorId)/invitations", token: w.f.adminToken, ["email": "RAE@example.org"])
        #expect(taken.status == 422 && taken.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "email")
        // Roles and tenancy: a collector may not invite (1006); another organization's user is 404.
        #expect(try w.f.client.post("/v1/orgs/\(w.f.orgId)/users/\(w.reviewerId)/invitations", token: w.f.collectorToken, ["email": "x@example.org"]).status == 403)
        let other = try Fixture(server: w.f.server)
        #expect(try other.client.post("/v1/orgs/\(other.orgId)/users/\(w.reviewerId)/invitations", token: other.adminToken, ["email": "x@example.org"]).status == 404)
        // Never gated: an expired organization still invites.
        try w.f.expire()
        let first = try w.invite(email: World.email)
        let second = try w.invite(email: World.email)
        try w.f.renew()
        // A newer invitation voids the older one; a link works once; the password needs 10 characters.
        #expect(try w.form("GET", w.path(first)).status == 404)
        let page = try w.form("GET", w.path(second))
        #expect(page.status == 200 && page.text.contains("New password"))
        let short = try w.form("POST", w.path(second), ["password": "too short"])
        #expect(short.status == 422 && short.text.contains("at least 10 characters"))
        #expect(try w.form("POST", w.path(second), ["password": "another good password"]).status == 200)
        #expect(try w.form("POST", w.path(second), ["password": "a third good password"]).status == 404)
        #expect(try w.signIn(World.email, "another good password").hasPrefix("ses_"))
        // Every invitation is audited: the set-up's and the two above.
        let audit = try w.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'user.invite' AND target_id = ?", [.text(w.reviewerId)])
        #expect(audit == 3)
    }

    @Test func signInSessionsAndTheirEnd() throws {
        let w = try World()
        // Wrong password and unknown email read the same.
        let wrong = try w.form("POST", "/console/sign-in", ["email": World.email, "password": "not the password"])
        let unknown = try w.form("POST", "/console/sign-in", ["email": "nobody@example.org", "password": "not the password"])
        #expect(wrong.status == 401 && unknown.status == 401)
        #expect(wrong.text.replacingOccurrences(of: World.email, with: "") == unknown.text.replacingOccurrences(of: "nobody@example.org", with: ""))
        // A session: the cookie's attributes, the pages' security headers, the user's name.
        let r = try w.form("POST", "/console/sign-in", ["email": "RAE@example.org", "password": World.password])
        let cookie = r.header("set-cookie") ?? ""
        #expect(r.status == 303 && cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Path=/console"))
        let session = String(cookie.split(separator: ";")[0].split(separator: "=")[1])
        let home = try w.form("GET", "/console/", cookie: session)
        #expect(home.status == 200 && home.text.contains("Rae Reviewer"))
        #expect(home.header("content-security-policy")?.contains("default-src 'none'") == true && home.header("x-frame-options") == "DENY")
        #expect(home.header("referrer-policy") == "same-origin" && home.header("x-content-type-options") == "nosniff")
        // The session is stored only as a hash.
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM console_sessions WHERE session_hash = ?", [.blob(Digest.sha256(Array(session.utf8)))]) == 1)
        // Signing out ends it.
        let other = try w.signIn()
        let csrf = World.csrf(try w.form("GET", "/console/", cookie: other).text) ?? ""
        #expect(try w.form("POST", "/console/sign-out", ["csrf": csrf], cookie: other).status == 303)
        #expect(try w.form("GET", "/console/", cookie: other).header("location")?.hasPrefix("/console/sign-in") == true)
        // An API token signs in too (an operator's).
        let op = try w.form("POST", "/console/sign-in", ["token": w.f.server.operatorToken])
        #expect(op.status == 303)
        // Deactivation ends the session at once.
        #expect(try w.f.client.request("DELETE", "/v1/orgs/\(w.f.orgId)/users/\(w.reviewerId)", token: w.f.adminToken).status == 204)
        let after = try w.form("GET", "/console/", cookie: session)
        #expect(after.status == 303 && after.header("location")?.hasPrefix("/console/sign-in") == true)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM console_sessions WHERE user_id = ?", [.text(w.reviewerId)]) == 0)
    }

    @Test func aFormNeedsItsTokenAndThisOrigin() throws {
        let w = try World()
        let rid = try w.submit("console-csrf-1")
        let session = try w.signIn()
        let page = try w.form("GET", "/console/orgs/\(w.f.orgId)/responses/\(rid)", cookie: session)
        let csrf = try #require(World.csrf(page.text))
        let action = "/console/orgs/\(w.f.orgId)/responses/\(rid)/review"
        // Without the token, with another's token, from another site: refused, nothing changed.
        for (fields, origin) in [(["action": "startReview", "expectedRevision": "1"], "http://127.0.0.1"),
                                 (["action": "startReview", "expectedRevision": "1", "csrf": "forged"], "http://127.0.0.1"),
                                 (["action": "startReview", "expectedRevision": "1", "csrf": csrf], "http://evil.example")] {
            let r = try w.form("POST", action, fields, cookie: session, origin: origin)
            #expect(r.status == 403 && r.header("content-type")?.hasPrefix("text/html") == true)
            #expect(try w.state(rid) == ("submitted", 1))
        }
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM audit WHERE target_id = ? AND action LIKE 'review.%'", [.text(rid)]) == 0)
        // With both: done, as the API's own step (same audit entry, the signed-in user as actor).
        let ok = try w.form("POST", action, ["action": "startReview", "expectedRevision": "1", "csrf": csrf], cookie: session)
        #expect(ok.status == 303)
        #expect(try w.state(rid) == ("in_review", 2))
        #expect(try w.f.server.rows("SELECT actor FROM audit WHERE target_id = ? AND action = 'review.startReview'", [.text(rid)]).first?.string("actor") == w.reviewerId)
        // The same form again is stale: a sentence with the current state, nothing overwritten.
        let stale = try w.form("POST", action, ["action": "startReview", "expectedRevision": "1", "csrf": csrf], cookie: session)
        #expect(stale.status == 409 && stale.text.contains("changed since you opened it") && stale.text.contains("in_review"))
        #expect(try w.state(rid) == ("in_review", 2))
    }

    @Test func answersAreShownAsText() throws {
        let w = try World()
        let payload = #"<script>alert(1)</script><img src=x onerror="alert(2)">"#
        let rid = try w.submit("console-xss-1", notes: payload)
        let page = try w.form("GET", "/console/orgs/\(w.f.orgId)/responses/\(rid)", cookie: try w.signIn())
        #expect(page.status == 200)
        #expect(!page.text.contains("<script>") && !page.text.contains("<img src=x"))
        #expect(page.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;"))
    }

    /// A form's own text — a group's and a repeat's heading (joined in Swift, not by a template),
    /// a question's and a choice's label — is escaped as answers are; what is not relevant is absent.
    @Test func formLabelsAreShownAsTextAndWhatIsNotRelevantIsLeftOut() throws {
        let w = try World()
        let payload = #"<script>alert(1)</script>"#
        let definition: JSONValue = ["title": "Tree", "defaultLanguage": "en", "questions": [
            ["id": "go", "type": "select_one", "label": "Go on?", "choices": [["name": "yes", "label": .string("Yes " + payload)], "no"]],
            ["id": "part", "type": "group", "label": .string("Part " + payload), "relevant": "${go} = 'yes'", "children": [
                ["id": "items", "type": "repeat", "label": ["en": .string("Item " + payload), "fr": "Objet"], "children": [
                    ["id": "words", "type": "text", "label": .string("Words " + payload)],
                ]],
            ]],
            ["id": "later", "type": "text", "label": "Later", "relevant": "${go} = 'no'"],
        ]]
        let version = try w.f.publishSurvey(reviewRequired: true, definition: definition)
        let r = try w.f.client.post("/v1/orgs/\(w.f.orgId)/responses", token: w.f.collectorToken,
                                    ResponseTests.submission("console-tree-1", version, answers: ["go": "yes", "items": [["words": "one"]]]))
        let rid = try #require(r.json?["responseId"]?.stringValue, "\(r.status) \(r.text)")
        let page = try w.form("GET", "/console/orgs/\(w.f.orgId)/responses/\(rid)", cookie: try w.signIn())
        #expect(page.status == 200)
        #expect(!page.text.contains("<script>"))
        for shown in ["<h3>Part &lt;script&gt;alert(1)&lt;/script&gt;</h3>", "<h4>Item &lt;script&gt;alert(1)&lt;/script&gt;</h4>",
                      "<h5>Item &lt;script&gt;alert(1)&lt;/script&gt; 1</h5>", "Words &lt;script&gt;", "Yes &lt;script&gt;"] {
            #expect(page.text.contains(shown), "\(shown) is not on the page")
        }
        #expect(!page.text.contains("Later"))
    }

    /// The server's own refusals under /console are pages; elsewhere they stay problem+json.
    @Test func theServersRefusalsUnderTheConsoleArePages() throws {
        let f = try Fixture()
        let missing = try f.client.get("/console/no-such-page")
        #expect(missing.status == 404 && missing.header("content-type")?.hasPrefix("text/html") == true && missing.text.contains("Not found"))
        let method = try f.client.get("/console/sign-out")
        #expect(method.status == 405 && method.header("allow") == "POST" && method.header("content-type")?.hasPrefix("text/html") == true)
        let big = try f.client.request("POST", "/console/sign-in", body: [UInt8](repeating: 0x61, count: 2 << 20),
                                       headers: ["Content-Type": "application/x-www-form-urlencoded"])
        #expect(big.status == 413 && big.header("content-type")?.hasPrefix("text/html") == true && big.text.contains("nothing was changed"))
        #expect(try f.client.get("/v1/no-such-thing").header("content-type") == "application/problem+json")
        #expect(try f.client.get("/consolex").header("content-type") == "application/problem+json")
    }

    @Test func signInAttemptsAreThrottled() throws {
        let w = try World()
        for _ in 0..<10 { _ = try w.form("POST", "/console/sign-in", ["email": World.email, "password": "guess guess guess"]) }
        // The right password is refused too until the window has passed: guessing gains nothing.
        let r = try w.form("POST", "/console/sign-in", ["email": World.email, "password": World.password])
        #expect(r.status == 429 && r.header("retry-after") != nil && r.header("set-cookie") == nil)
    }

    /// An attempt counts from before its password is checked: forty wrong passwords sent at once
    /// for one account get no more checks between them than ten sent one by one would.
    @Test func concurrentGuessesAreCountedBeforeTheyAreChecked() throws {
        let w = try World()
        let statuses = Mutex<[Int]>([])
        atOnce(40) { _ in
            let s = (try? w.form("POST", "/console/sign-in", ["email": World.email, "password": "guess guess guess"]))?.status ?? -1
            statuses.withLock { $0.append(s) }
        }
        let burst = statuses.withLock { $0 }
        #expect(burst.allSatisfy { $0 == 401 || $0 == 429 }, "\(burst)")
        // Attempts refused because too many passwords were being checked at once did not count:
        // send more, one at a time, until the account is throttled — ten checks in all.
        var checked = burst.filter { $0 == 401 }.count
        while checked <= 10, try w.form("POST", "/console/sign-in", ["email": World.email, "password": "guess guess guess"]).status == 401 {
            checked += 1
        }
        #expect(checked == 10, "\(checked) wrong passwords were checked; the burst was \(burst)")
    }

    /// At most a few passwords are checked at once (each check holds 19 MiB): wrong passwords
    /// from many addresses at once are answered 401 or, past the bound, 429 with Retry-After.
    @Test func passwordChecksAtOnceAreBounded() throws {
        let w = try World()
        let replies = Mutex<[(Int, String?)]>([])
        atOnce(30) { i in
            let r = try? w.form("POST", "/console/sign-in", ["email": "user\(i)@example.org", "password": "guess guess guess"],
                                from: "127.0.1.\(i + 1)")
            replies.withLock { $0.append((r?.status ?? -1, r?.header("retry-after"))) }
        }
        let all = replies.withLock { $0 }
        #expect(all.allSatisfy { $0.0 == 401 || ($0.0 == 429 && $0.1 == "1") }, "\(all)")
        #expect(all.contains { $0.0 == 429 }, "30 checks at once were all run: \(all.map(\.0))")
        // None of the refused ones counted against their address: each may try again at once.
        #expect(try w.form("POST", "/console/sign-in", ["email": World.email, "password": World.password], from: "127.0.1.1").status == 303)
    }

    /// A password of only white space is refused; the invitation stays open for a real one.
    @Test func aPasswordOfOnlySpacesIsRefused() throws {
        let w = try World()
        let url = try w.invite(email: "spaces@example.org")
        let spaces = try w.form("POST", w.path(url), ["password": String(repeating: " ", count: 12)])
        #expect(spaces.status == 422 && spaces.text.contains("only spaces"), "\(spaces.status) \(spaces.text.prefix(400))")
        let tabs = try w.form("POST", w.path(url), ["password": "\t\t\t\t\t \n\n\n\n\n"])
        #expect(tabs.status == 422)
        #expect(try w.form("POST", w.path(url), ["password": "  a real one  "]).status == 200)
    }

    /// Behind a trusted reverse proxy sign-ins are throttled by the address it forwards, so one
    /// attacker does not lock out everyone who shares the proxy; from any other peer the
    /// forwarded headers are ignored (a client could write them), and so is X-Forwarded-Proto.
    @Test func forwardedHeadersCountOnlyFromATrustedProxy() throws {
        let trusted = try World { $0.trustedProxies = ["127.0.0.1"] }
        let guess = ["email": World.email, "password": "guess guess guess"]
        for _ in 0..<10 { _ = try trusted.form("POST", "/console/sign-in", guess, headers: ["X-Forwarded-For": "203.0.113.7"]) }
        #expect(try trusted.form("POST", "/console/sign-in", ["email": "other@example.org", "password": "guess guess guess"],
                                 headers: ["X-Forwarded-For": "203.0.113.7"]).status == 429)
        // Another client behind the same proxy (an address the client wrote first is not its own).
        let other = try trusted.form("POST", "/console/sign-in", ["email": "other@example.org", "password": "guess guess guess"],
                                     headers: ["X-Forwarded-For": "203.0.113.7, 198.51.100.2"])
        #expect(other.status == 401)
        // The proxy says https: the session cookie is Secure.
        let proxied = try World { $0.trustedProxies = ["127.0.0.1"] }
        let https = try proxied.form("POST", "/console/sign-in", ["email": World.email, "password": World.password],
                                     headers: ["X-Forwarded-For": "198.51.100.9", "X-Forwarded-Proto": "https"])
        #expect(https.status == 303 && https.header("set-cookie")?.contains("Secure") == true)

        // No trusted proxy: the headers change nothing — the peer's address is throttled.
        let direct = try World()
        for i in 0..<10 { _ = try direct.form("POST", "/console/sign-in", guess, headers: ["X-Forwarded-For": "203.0.113.\(i)"]) }
        #expect(try direct.form("POST", "/console/sign-in", ["email": "other@example.org", "password": "guess guess guess"],
                                headers: ["X-Forwarded-For": "198.51.100.2"]).status == 429)
        let plain = try World()
        let notSecure = try plain.form("POST", "/console/sign-in", ["email": World.email, "password": World.password],
                                       headers: ["X-Forwarded-Proto": "https"])
        #expect(notSecure.status == 303 && notSecure.header("set-cookie")?.contains("Secure") == false)
    }
}
