import Foundation
import Testing
import SurveyDomain
import SurveyServer
@testable import SurveyStorage

/// pyxform's warnings on converting an XLSForm are kept with the version (in
/// `survey_version_sources.warnings`) and answered on its document, on the 201, on every GET and
/// on a replay; a version without any answers an empty list. The console shows them with the
/// version and offers each version's source and XForm for download through the session. On
/// PostgreSQL the suite runs again (`scripts/test.sh`), and `surveyd migrate` carries them over.
@Suite struct ConversionWarningTests {
    typealias P = FoundationTests
    static let forms = FormPublishingTests()

    /// What pyxform 4.5.0 says of `warnings.xlsx` (Tests/SurveyXFormTests/Fixtures/make_warned_xlsforms.py), in its order.
    static let expected: [String] = [
        "Language 'Français (fr)' is missing the survey hint column.",
        "[row : 3] Repeat has no label: {'name': 'children', 'type': 'begin_repeat'}",
        "[row : 6] Use the max-pixels parameter to speed up submission sending and save storage space. Learn more: https://xlsform.org/#image",
        "The following language declarations do not contain valid machine-readable codes: English. Learn more: http://xlsform.org#multiple-language-support",
    ]

    static func warnings(_ r: Reply) -> [String]? { r.json?["warnings"]?.arrayValue?.compactMap(\.stringValue) }

    @Test func warningsAreKeptAndAnsweredWithTheVersion() throws {
        let f = try Fixture()
        let id = try Self.forms.survey(f)
        let xlsx = try FormPublishingTests.bytes("warnings.xlsx")
        let created = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(id)/versions", token: f.adminToken, body: xlsx,
                                           headers: ["Content-Type": FormPublishingTests.xlsx, "Idempotency-Key": "warned-form-0001"])
        #expect(created.status == 201, "\(created.text)")
        #expect(Self.warnings(created) == Self.expected, "\(created.text.prefix(2_000))")
        #expect(created.json?["definition"]?["title"]?.stringValue == "Visit with warnings")
        let versionId = try #require(created.json?["surveyVersionId"]?.stringValue)

        // Every member reads them on the version, as the 201 said; a retry replays the same document (200).
        let path = "/v1/orgs/\(f.orgId)/survey-versions/\(versionId)"
        for token in [f.adminToken, f.reviewerToken, f.collectorToken] {
            let read = try f.client.get(path, token: token)
            #expect(read.status == 200 && Self.warnings(read) == Self.expected, "\(read.text.prefix(500))")
        }
        let replay = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(id)/versions", token: f.adminToken, body: xlsx,
                                          headers: ["Content-Type": FormPublishingTests.xlsx, "Idempotency-Key": "warned-form-0001"])
        #expect(replay.status == 200 && replay.header("idempotent-replayed") == "true" && replay.body == created.body,
                "\(replay.status) \(replay.text.prefix(300))")

        // Stored as a JSON array of the sentences, with the source.
        let stored = try #require(try f.server.rows("SELECT warnings FROM survey_version_sources WHERE survey_version_id = ?",
                                                    [.text(versionId)]).first?.optionalString("warnings"))
        #expect(try JSONParser.parse(Array(stored.utf8)) == .array(Self.expected.map { .string($0) }))

        // A form pyxform has nothing to say about: an empty list, and nothing stored.
        let quiet = try Self.forms.publish(f, id, try FormPublishingTests.bytes("simple.xlsx"), contentType: FormPublishingTests.xlsx)
        #expect(quiet.status == 201 && Self.warnings(quiet) == [], "\(quiet.text.prefix(500))")
        let quietId = try #require(quiet.json?["surveyVersionId"]?.stringValue)
        #expect(Self.warnings(try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(quietId)", token: f.adminToken)) == [])
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM survey_version_sources WHERE survey_version_id = ? AND warnings IS NULL",
                                   [.text(quietId)]) == 1)
        // An XForm and a JSON definition: none either.
        let xform = try Self.forms.publish(f, id, try FormPublishingTests.bytes("simple.xml"), contentType: "application/xml")
        #expect(xform.status == 201 && Self.warnings(xform) == [])
        let json = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(id)/versions", token: f.adminToken, ["definition": Fixture.definition])
        #expect(json.status == 201 && Self.warnings(json) == [])
        let jsonId = try #require(json.json?["surveyVersionId"]?.stringValue)
        #expect(Self.warnings(try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(jsonId)", token: f.adminToken)) == [])
        // The warned version still reads the same after the others.
        #expect(Self.warnings(try f.client.get(path, token: f.adminToken)) == Self.expected)
    }

    @Test func theConsoleShowsTheWarningsAndOffersTheFiles() throws {
        let f = try Fixture()
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Visit — Kisumu (2026)"])
        let id = try #require(s.json?["surveyId"]?.stringValue)
        let xlsx = try FormPublishingTests.bytes("warnings.xlsx"), xml = try FormPublishingTests.bytes("simple.xml")
        let warned = try #require(try Self.forms.publish(f, id, xlsx, contentType: FormPublishingTests.xlsx).json?["surveyVersionId"]?.stringValue)
        let fromXForm = try #require(try Self.forms.publish(f, id, xml, contentType: "text/xml").json?["surveyVersionId"]?.stringValue)
        let fromJSON = try #require(try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(id)/versions", token: f.adminToken,
                                                      ["definition": Fixture.definition]).json?["surveyVersionId"]?.stringValue)
        let admin = try ConsoleAdminTests.Session(f, token: f.adminToken)

        // The survey page: each warning as a sentence with version 1, a notice after publishing it.
        let page = try admin.get("/console/orgs/\(f.orgId)/surveys/\(id)?published=1")
        #expect(page.status == 200)
        for warning in Self.expected {
            #expect(page.text.contains("<li>\(HTMLText.escape(warning))</li>"), "\(warning) is not on the page")
        }
        #expect(page.text.contains("pyxform gave 4 warnings on converting it"))
        #expect(page.text.components(separatedBy: "class=\"warnings\"").count == 2, "only version 1 has warnings")
        let files = "/console/orgs/\(f.orgId)/survey-versions"
        for link in ["\(warned)/source", "\(warned)/xform", "\(fromXForm)/source", "\(fromJSON)/source", "\(fromJSON)/xform"] {
            #expect(page.text.contains("href=\"\(files)/\(link)\""), "no link to \(link)")
        }
        // A version published as an XForm offers its one file.
        #expect(!page.text.contains("\(fromXForm)/xform"))

        // The downloads: byte for byte, as attachments named after the survey and the version.
        let source = try admin.get("\(files)/\(warned)/source")
        #expect(source.status == 200 && source.body == xlsx)
        #expect(source.header("content-type") == FormPublishingTests.xlsx)
        #expect(source.header("content-disposition") == "attachment; filename=\"visit-kisumu-2026-v1.xlsx\"")
        #expect(source.header("x-content-type-options") == "nosniff")
        let converted = try admin.get("\(files)/\(warned)/xform")
        let api = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(warned)/xform", token: f.adminToken)
        #expect(converted.status == 200 && converted.body == api.body && converted.header("content-type") == "application/xml")
        #expect(converted.header("content-disposition") == "attachment; filename=\"visit-kisumu-2026-v1.xml\"")
        #expect(String(decoding: converted.body, as: UTF8.self).contains("<h:title>Visit with warnings</h:title>"))
        try ODKValidate.accept(converted.body, label: "warnings.xlsx converted by pyxform, from the console")
        let uploaded = try admin.get("\(files)/\(fromXForm)/source")
        #expect(uploaded.body == xml && uploaded.header("content-disposition") == "attachment; filename=\"visit-kisumu-2026-v2.xml\"")
        #expect(try admin.get("\(files)/\(fromXForm)/xform").body == xml)
        let definition = try admin.get("\(files)/\(fromJSON)/source")
        #expect(definition.status == 200 && definition.json == Fixture.definition && definition.header("content-type") == "application/json")
        #expect(definition.header("content-disposition") == "attachment; filename=\"visit-kisumu-2026-v3.json\"")
        // A JSON version's XForm is the one written from its definition, as the API serves it.
        let generated = try admin.get("\(files)/\(fromJSON)/xform")
        let generatedByTheAPI = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(fromJSON)/xform", token: f.adminToken)
        #expect(generated.status == 200 && generated.body == generatedByTheAPI.body)
        #expect(generated.header("content-disposition") == "attachment; filename=\"visit-kisumu-2026-v3.xml\"")

        // Any member of the organization, through the session; nobody else.
        #expect(try ConsoleAdminTests.Session(f, token: f.collectorToken).get("\(files)/\(warned)/source").body == xlsx)
        let other = try Fixture(server: f.server)
        let intruder = try ConsoleAdminTests.Session(other, token: other.adminToken)
        let refused = try intruder.get("\(files)/\(warned)/source")
        #expect(refused.status == 404 && refused.body != xlsx)
        #expect(try intruder.get("/console/orgs/\(other.orgId)/survey-versions/\(warned)/source").status == 404)
        let anonymous = try f.client.get("\(files)/\(warned)/source")
        #expect(anonymous.status == 303 && anonymous.body != xlsx)
        // The API's token is no session.
        #expect(try f.client.get("\(files)/\(warned)/source", token: f.adminToken).body != xlsx)
    }

    @Test(.enabled(if: TestEngine.isPostgres, "needs the PostgreSQL test cluster"))
    func migrateCarriesTheWarnings() throws {
        let sqlite = try TestServer { $0.databaseURL = nil }
        let f = try Fixture(server: sqlite)
        let id = try Self.forms.survey(f)
        let versionId = try #require(try Self.forms.publish(f, id, try FormPublishingTests.bytes("warnings.xlsx"),
                                                            contentType: FormPublishingTests.xlsx).json?["surveyVersionId"]?.stringValue)
        let path = "/v1/orgs/\(f.orgId)/survey-versions/\(versionId)"
        let before = try f.client.get(path, token: f.adminToken)
        #expect(Self.warnings(before) == Self.expected)
        sqlite.stop()

        let pgDir = NSTemporaryDirectory() + "surveyd-migrated-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: pgDir) }
        let url = try #require(try TestEngine.database(for: pgDir))
        let migrated = try ServerProcess.command(["migrate", "--from-data-dir", sqlite.dataDir, "--to-database-url", url], timeout: 120)
        #expect(migrated.status == 0, "\(migrated.stdout) \(migrated.stderr)")
        let pg = try TestServer(dataDir: pgDir)
        let after = try pg.client.get(path, token: f.adminToken)
        #expect(after.status == 200 && after.body == before.body, "\(after.text.prefix(500))")
        let stored = try PostgresConnection(url: url).query("SELECT warnings FROM survey_version_sources").first?.optionalString("warnings")
        #expect(stored.flatMap { try? JSONParser.parse(Array($0.utf8)) } == .array(Self.expected.map { .string($0) }))
    }
}

/// The console's escaping of text, as a test expects it on a page.
enum HTMLText {
    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&#39;")
    }
}
