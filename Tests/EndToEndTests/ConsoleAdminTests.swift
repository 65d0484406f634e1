import Foundation
import SurveyDomain
import SurveyStorage
import Testing

/// The console's admin and operator pages on a real server, without a browser: tenancy, publishing
/// from a file, the export download through the session, and the operator's confirmation step.
@Suite struct ConsoleAdminTests {
    struct Session {
        let f: Fixture
        let id: String

        /// Signed in with an API token.
        init(_ f: Fixture, token: String) throws {
            self.f = f
            let r = try f.client.request("POST", "/console/sign-in", body: Array("token=\(token)".utf8),
                                         headers: ["Content-Type": "application/x-www-form-urlencoded"])
            guard r.status == 303, let c = r.header("set-cookie"), let v = c.split(separator: ";").first?.split(separator: "=").last else {
                throw TestFailure("sign-in: \(r.status)")
            }
            id = String(v)
        }

        func get(_ path: String) throws -> Reply { try f.client.request("GET", path, headers: ["Cookie": "surveyd_session=\(id)"]) }

        var csrf: String {
            get throws {
                let home = try get("/console/")  // an operator's home is their organizations page
                let html = home.status == 303 ? try get(home.header("location") ?? "").text : home.text
                guard let at = html.range(of: #"name="csrf" value=""#) else { throw TestFailure("no csrf") }
                return String(html[at.upperBound...].prefix { $0 != "\"" })
            }
        }

        func post(_ path: String, _ fields: [String: String]) throws -> Reply {
            var fields = fields
            fields["csrf"] = try csrf
            let body = fields.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
            return try f.client.request("POST", path, body: Array(body.utf8), headers: [
                "Cookie": "surveyd_session=\(id)", "Content-Type": "application/x-www-form-urlencoded", "Origin": "http://127.0.0.1"])
        }

        /// A multipart form with one file field.
        /// The publishing form: the definition's file, and the files the form names (`files`).
        /// `fields`: the form's other fields (a checkbox ticked: its value).
        func upload(_ path: String, file: [UInt8], fileName: String = "survey.json", files: [(String, [UInt8])] = [],
                    fields: [String: String] = [:]) throws -> Reply {
            let boundary = "----surveyd-test-boundary"
            var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n\(try csrf)\r\n".utf8)
            for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
                body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
            }
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"definition\"; filename=\"\(fileName)\"\r\nContent-Type: application/octet-stream\r\n\r\n".utf8)
            body += file + Array("\r\n".utf8)
            for (name, bytes) in files {
                body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"files\"; filename=\"\(name)\"\r\nContent-Type: application/octet-stream\r\n\r\n".utf8)
                body += bytes + Array("\r\n".utf8)
            }
            body += Array("--\(boundary)--\r\n".utf8)
            return try f.client.request("POST", path, body: body, headers: [
                "Cookie": "surveyd_session=\(id)", "Content-Type": "multipart/form-data; boundary=\(boundary)", "Origin": "http://127.0.0.1"])
        }
    }

    @Test func anAdminOfAnotherOrganizationReachesNothing() throws {
        let a = try Fixture()
        let survey = try a.publishSurvey()
        let b = try Fixture(server: a.server)
        let intruder = try Session(b, token: b.adminToken)
        let own = try Session(a, token: a.adminToken)
        for page in ["users", "surveys", "tasks", "subscription", "surveys/\(survey.surveyId)", "surveys/\(survey.surveyId)/exports",
                     "surveys/\(survey.surveyId)/download?format=csv", "users/\(a.collectorId)"] {
            let r = try intruder.get("/console/orgs/\(a.orgId)/\(page)")
            #expect(r.status == 404, "\(page): \(r.status)")
            #expect(!r.text.contains("Cole") && !r.text.contains("Household") && !r.text.contains("Field team"), "\(page) reveals something")
            #expect(try own.get("/console/orgs/\(a.orgId)/\(page)").status == 200, "\(page) for its own admin")
        }
        // A form aimed at the other organization changes nothing there.
        #expect(try intruder.post("/console/orgs/\(a.orgId)/users/\(a.collectorId)/deactivate", ["confirm": "yes"]).status == 404)
        #expect(try a.server.count("SELECT COUNT(*) AS n FROM users WHERE user_id = ? AND active = 1", [.text(a.collectorId)]) == 1)
    }

    @Test func aVersionIsPublishedFromAFileAndABrokenOneIsRefusedPerField() throws {
        let f = try Fixture()
        let survey = try f.publishSurvey()
        let s = try Session(f, token: f.adminToken)
        let path = "/console/orgs/\(f.orgId)/surveys/\(survey.surveyId)/versions"
        let broken = try s.upload(path, file: Array(#"{"title":"x","questions":[{"id":"1bad","type":"integer"}]}"#.utf8))
        #expect(broken.status == 422)
        #expect(broken.text.contains("definition.questions[0].id") && broken.text.contains("definition.questions[0].label"))
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM survey_versions WHERE survey_id = ?", [.text(survey.surveyId)]) == 1)
        let good = try s.upload(path, file: Array(#"{"title":"x","questions":[{"id":"size","type":"integer","label":"Size"}]}"#.utf8))
        #expect(good.status == 303 && good.header("location")?.hasSuffix("?published=2") == true)
        let hash = try f.server.rows("SELECT content_hash FROM survey_versions WHERE survey_id = ? AND number = 2", [.text(survey.surveyId)]).first?.string("content_hash")
        let page = try s.get("/console/orgs/\(f.orgId)/surveys/\(survey.surveyId)").text
        #expect(hash != nil && page.contains(hash ?? "-"))
    }

    /// The console publishes a form with the files it names, chosen beside it, through the same
    /// operation as the API: a missing file is refused naming it.
    @Test func aVersionIsPublishedWithTheFilesItsFormNames() throws {
        let f = try Fixture()
        let survey = try f.publishSurvey()
        let s = try Session(f, token: f.adminToken)
        let path = "/console/orgs/\(f.orgId)/surveys/\(survey.surveyId)/versions"
        let xlsx = try FormPublishingTests.bytes("village_visit.xlsx")
        let files = try ["villages.csv", "crops.csv", "map.png"].map { ($0, try FormPublishingTests.bytes($0)) }
        let missing = try s.upload(path, file: xlsx, fileName: "village_visit.xlsx", files: Array(files.dropLast()))
        #expect(missing.status == 422)
        #expect(missing.text.contains("the form names map.png"), "\(missing.text)")
        let good = try s.upload(path, file: xlsx, fileName: "village_visit.xlsx", files: files)
        #expect(good.status == 303 && good.header("location")?.hasSuffix("?published=2") == true, "\(good.status) \(good.text.prefix(300))")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM survey_version_attachments") == 3)
        // The survey page offers each for download, through the session.
        let page = try s.get("/console/orgs/\(f.orgId)/surveys/\(survey.surveyId)").text
        let version = try #require(try f.server.rows("SELECT survey_version_id FROM survey_versions WHERE number = 2").first?.string("survey_version_id"))
        let link = "/console/orgs/\(f.orgId)/survey-versions/\(version)/attachments/villages.csv"
        #expect(page.contains(link), "\(page.prefix(2000))")
        let download = try s.get(link)
        #expect(download.status == 200 && download.body == files[0].1)
        #expect(download.header("content-disposition") == "attachment; filename=\"villages.csv\"")
    }

    @Test func theDownloadButtonIsTheExportThroughTheSession() throws {
        let f = try Fixture()
        let survey = try f.publishSurvey()
        _ = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, ResponseTests.submission("console-export-1", survey))
        let r = try Session(f, token: f.reviewerToken).get("/console/orgs/\(f.orgId)/surveys/\(survey.surveyId)/download?format=csv&reviewState=&from=2000-01-01")
        #expect(r.status == 200 && r.header("content-type") == "text/csv; charset=utf-8")
        #expect(r.text.contains("console-export-1") && r.header("surveyd-export-cursor") != nil)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'export.csv'") == 1)
        // A collector's session gets the page of a refusal, not the data.
        #expect(try Session(f, token: f.collectorToken).get("/console/orgs/\(f.orgId)/surveys/\(survey.surveyId)/download?format=csv").status == 403)
    }

    @Test func anOperatorRenewsAfterConfirming() throws {
        let f = try Fixture()
        try f.expire()
        let s = try Session(f, token: f.server.operatorToken)
        let page = try s.get("/console/operator/orgs").text
        #expect(page.contains("expired"))
        // Each organization's integer id as a project of ODK Central's API (the fixture's is the first).
        #expect(page.contains("project 1 (ODK Central"))
        let before = try f.server.rows("SELECT expires_at FROM orgs WHERE org_id = ?", [.text(f.orgId)]).first?.int("expires_at")
        let ask = try s.post("/console/operator/orgs/\(f.orgId)/renew", ["expiresAt": "2099-12-31"])
        #expect(ask.status == 200 && ask.text.contains("Renew"))
        #expect(try f.server.rows("SELECT expires_at FROM orgs WHERE org_id = ?", [.text(f.orgId)]).first?.int("expires_at") == before)
        let done = try s.post("/console/operator/orgs/\(f.orgId)/renew", ["expiresAt": "2099-12-31", "confirmed": "yes"])
        #expect(done.status == 303)
        #expect(try f.server.rows("SELECT expires_at FROM orgs WHERE org_id = ?", [.text(f.orgId)]).first?.int("expires_at") == Timestamp.parse("2099-12-31T23:59:59.999Z"))
        #expect(try s.get("/console/operator/orgs").text.contains("state-active\">active"))
        // An admin is no operator: the page is not theirs.
        #expect(try Session(f, token: f.adminToken).get("/console/operator/orgs").status == 404)
    }

    /// Creating an organization with its first admin is refused whole when any field breaks its
    /// rule: the refusal names the field as the form labels it, and leaves no organization, user,
    /// invitation or audit entry behind.
    @Test func aRefusedNewOrganizationLeavesNothingBehind() throws {
        let f = try Fixture()
        let s = try Session(f, token: f.server.operatorToken)
        let tables = ["orgs", "users", "invitations", "audit"]
        let before = try tables.map { try f.server.count("SELECT COUNT(*) AS n FROM \($0)") }
        for adminName in [String(repeating: "a", count: 201), "\n", "   "] {
            let r = try s.post("/console/operator/orgs", ["name": "Well Team", "expiresAt": "2099-12-31", "adminName": adminName,
                                                          "adminEmail": "first.admin@example.org"])
            #expect(r.status == 422, "\(r.status)")
            #expect(r.text.contains("First admin&#39;s name") || r.text.contains("First admin's name"), "\(r.text.prefix(2000))")
            #expect(!r.text.contains("Name: 1 to"))
        }
        let longName = try s.post("/console/operator/orgs", ["name": String(repeating: "o", count: 201), "expiresAt": "2099-12-31",
                                                             "adminName": "Ada", "adminEmail": "first.admin@example.org"])
        #expect(longName.status == 422 && longName.text.contains("Name: 1 to 200 characters"))
        #expect(try tables.map { try f.server.count("SELECT COUNT(*) AS n FROM \($0)") } == before)
        // Sent again with a valid name, it is created once, with its admin.
        let done = try s.post("/console/operator/orgs", ["name": "Well Team", "expiresAt": "2099-12-31", "adminName": "Ada",
                                                         "adminEmail": "first.admin@example.org"])
        #expect(done.status == 200 && done.text.contains("Well Team was created"))
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM orgs WHERE name = 'Well Team'") == 1)
    }
}
