import Foundation
import Testing
import SurveyDomain
import SurveyServer

/// Versions published as an XLSForm (converted by pyxform, which `scripts/setup.sh` installs in
/// `.build/venv-forms`) and as an XForm, on a real server: the same form gives the same definition
/// either way, its logic checks answers, and every refusal names the sheet and row or the
/// construct and publishes nothing.
@Suite struct FormPublishingTests {
    typealias P = FoundationTests

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("SurveyXFormTests/Fixtures")

    static func bytes(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: fixtures.appendingPathComponent(name))) }

    static let xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    static let xls = "application/vnd.ms-excel"

    func survey(_ f: Fixture) throws -> String {
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Household"])
        return try #require(s.json?["surveyId"]?.stringValue)
    }

    func publish(_ f: Fixture, _ surveyId: String, _ body: [UInt8], contentType: String) throws -> Reply {
        try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, body: body,
                             headers: ["Content-Type": contentType])
    }

    func versions(_ f: Fixture) throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM survey_versions") }

    @Test func anXLSFormAndItsXFormPublishTheSameDefinition() throws {
        let f = try Fixture()
        let id = try survey(f)
        let fromXLSForm = try publish(f, id, try Self.bytes("household.xlsx"), contentType: Self.xlsx)
        #expect(fromXLSForm.status == 201, "\(fromXLSForm.text)")
        let fromXForm = try publish(f, id, try Self.bytes("household.xml"), contentType: "application/xml")
        #expect(fromXForm.status == 201, "\(fromXForm.text)")
        let hash = try #require(fromXLSForm.json?["contentHash"]?.stringValue)
        #expect(fromXForm.json?["contentHash"]?.stringValue == hash)
        let definition = try #require(fromXLSForm.json?["definition"])
        #expect(definition["title"]?.stringValue == "Household roster")
        #expect(definition["defaultLanguage"]?.stringValue == "English (en)")
        // The same definition published as JSON is the same version content.
        let again = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(id)/versions", token: f.adminToken, ["definition": definition])
        #expect(again.json?["contentHash"]?.stringValue == hash)
    }

    @Test func theSourceAndTheXFormAreKeptByteForByte() throws {
        let f = try Fixture()
        let id = try survey(f)
        let xlsx = try Self.bytes("household.xlsx"), xml = try Self.bytes("simple.xml")
        let fromXLSForm = try #require(try publish(f, id, xlsx, contentType: Self.xlsx).json?["surveyVersionId"]?.stringValue)
        let fromXForm = try #require(try publish(f, id, xml, contentType: "text/xml").json?["surveyVersionId"]?.stringValue)
        let base = "/v1/orgs/\(f.orgId)/survey-versions"
        // Any member reads them: a collector's app downloads the XForm.
        let source = try f.client.get("\(base)/\(fromXLSForm)/source", token: f.collectorToken)
        #expect(source.status == 200)
        #expect(source.body == xlsx)
        #expect(source.headers["content-type"] == Self.xlsx)
        let converted = try f.client.get("\(base)/\(fromXLSForm)/xform", token: f.collectorToken)
        #expect(converted.status == 200 && converted.headers["content-type"] == "application/xml")
        #expect(String(decoding: converted.body, as: UTF8.self).contains("<h:title>Household roster</h:title>"))
        try ODKValidate.accept(converted.body, label: "household.xlsx converted by pyxform")
        // The XForm pyxform made publishes the same definition again.
        let again = try publish(f, id, converted.body, contentType: "application/xml")
        #expect(again.json?["contentHash"] == (try f.client.get("\(base)/\(fromXLSForm)", token: f.adminToken)).json?["contentHash"])
        #expect(try f.client.get("\(base)/\(fromXForm)/source", token: f.reviewerToken).body == xml)
        let served = try f.client.get("\(base)/\(fromXForm)/xform", token: f.reviewerToken).body
        #expect(served == xml)
        try ODKValidate.accept(served, label: "simple.xml as uploaded")
        // A version published as JSON: its source is the definition, and its XForm is written from
        // it on request (XFormGenerationTests).
        let json = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(id)/versions", token: f.adminToken, ["definition": Fixture.definition])
        let jsonId = try #require(json.json?["surveyVersionId"]?.stringValue)
        #expect(try f.client.get("\(base)/\(jsonId)/source", token: f.adminToken).json == Fixture.definition)
        let generated = try f.client.get("\(base)/\(jsonId)/xform", token: f.adminToken)
        #expect(generated.status == 200 && generated.headers["content-type"] == "application/xml")
        try ODKValidate.accept(generated.body, label: "Fixture.definition written as an XForm")
        // Another organization's version is not found.
        let other = try Fixture(server: f.server)
        P.expectProblem(try other.client.get("/v1/orgs/\(other.orgId)/survey-versions/\(fromXLSForm)/source", token: other.adminToken), .notFound)
    }

    @Test func theConvertedLogicChecksAnswers() throws {
        let f = try Fixture()
        let id = try survey(f)
        let r = try publish(f, id, try Self.bytes("simple.xlsx"), contentType: Self.xlsx)
        #expect(r.status == 201, "\(r.text)")
        let v = (surveyId: id, versionId: try #require(r.json?["surveyVersionId"]?.stringValue),
                 contentHash: try #require(r.json?["contentHash"]?.stringValue))
        // `age` must not be negative ("Not negative"); `smoker` is asked from 12 years on.
        let bad = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                    ResponseTests.submission("xlsform-0001", v, answers: ["full_name": "Ama", "age": -1]))
        P.expectProblem(bad, .validationFailed)
        #expect(bad.json?["errors"]?.arrayValue?.map { "\($0["path"]?.stringValue ?? ""): \($0["message"]?.stringValue ?? "")" }
                == ["answers.age: Not negative"])
        let child = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                      ResponseTests.submission("xlsform-0002", v, answers: ["full_name": "Kofi", "age": 9, "smoker": "no"]))
        P.expectProblem(child, .validationFailed)
        #expect(child.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "answers.smoker")
        let good = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                     ResponseTests.submission("xlsform-0003", v, answers: ["full_name": "Ama", "age": 34, "smoker": "no"]))
        #expect(good.status == 201, "\(good.text)")
    }

    @Test func pyxformsRefusalIsShownWithItsRowAndNothingIsPublished() throws {
        let f = try Fixture()
        let id = try survey(f)
        let before = try versions(f)
        let expected = [
            "missing_list.xlsx": "[row : 2] List name not in choices sheet: colours",
            "unknown_type.xlsx": "Unknown question type 'integr'.",
            "unclosed_group.xlsx": "[row : 2] Unmatched 'begin_group'. No matching 'end_group' was found for the name 'g'.",
        ]
        for (file, message) in expected {
            let r = try publish(f, id, try Self.bytes(file), contentType: Self.xlsx)
            P.expectProblem(r, .validationFailed)
            #expect(r.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "xlsform", "\(file)")
            #expect(r.json?["errors"]?.arrayValue?.first?["message"]?.stringValue == message, "\(file)")
        }
        // Not a spreadsheet at all.
        let garbage = try publish(f, id, Array("not a spreadsheet".utf8), contentType: Self.xlsx)
        P.expectProblem(garbage, .validationFailed)
        #expect(try versions(f) == before)
    }

    @Test func whatSurveydDoesNotCarryIsRefusedByName() throws {
        let f = try Fixture()
        let id = try survey(f)
        let before = try versions(f)
        let csv = try publish(f, id, try Self.bytes("csv_choices.xlsx"), contentType: Self.xlsx)
        P.expectProblem(csv, .validationFailed)
        #expect(csv.json?["errors"]?.arrayValue?.first?["message"]?.stringValue?.contains("villages.csv") == true, "\(csv.text)")
        let media = try publish(f, id, try Self.bytes("media_label.xml"), contentType: "text/xml")
        P.expectProblem(media, .validationFailed)
        #expect(media.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "attachments.face.png")
        #expect(try versions(f) == before)
    }

    /// Each refused (422 / 1002 at `xform`) in bounded time — the 5 s bound is a hang guard, not a
    /// benchmark — with the server answering afterwards and nothing published.
    @Test func hostileXMLIsRefusedAndTheServerStaysUp() throws {
        let f = try Fixture()
        let id = try survey(f)
        // An external entity naming a file only this test knows: it must never be read.
        let secret = "surveyd-xxe-" + UUID().uuidString
        let secretPath = f.server.dataDir + "/xxe-secret.txt"
        try Data(secret.utf8).write(to: URL(fileURLWithPath: secretPath))
        let xxe = """
            <?xml version="1.0"?><!DOCTYPE h:html [<!ENTITY e SYSTEM "file://\(secretPath)">]>\
            <h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml"><h:head><h:title>&e;</h:title>\
            <model><instance><data id="x"><a/></data></instance></model></h:head>\
            <h:body><input ref="/data/a"><label>&e;</label></input></h:body></h:html>
            """
        // Billion laughs: ten levels of ten, 10^9 "lol"s were it expanded.
        var laughs = "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
        laughs += "<!ENTITY lol1 \"" + String(repeating: "&lol;", count: 10) + "\">"
        for level in 2...9 { laughs += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level - 1);", count: 10) + "\">" }
        laughs += "]><lolz>&lol9;</lolz>"
        let deep = String(repeating: "<a>", count: 100_000) + String(repeating: "</a>", count: 100_000)
        let clock = ContinuousClock()
        for (name, body, expected) in [("an external entity", xxe, "DOCTYPE"), ("billion laughs", laughs, "DOCTYPE"),
                                       ("100,000-deep nesting", deep, "not well-formed")] {
            var reply: Reply?
            let elapsed = try clock.measure { reply = try publish(f, id, Array(body.utf8), contentType: "application/xml") }
            let r = try #require(reply)
            P.expectProblem(r, .validationFailed)
            #expect(r.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "xform", "\(name)")
            #expect(r.json?["errors"]?.arrayValue?.first?["message"]?.stringValue?.contains(expected) == true, "\(name): \(r.text)")
            #expect(!r.text.contains(secret), "\(name)")
            #expect(elapsed < .seconds(5), "\(name) took \(elapsed)")
            #expect(try f.client.get("/healthz").status == 200, "\(name)")
        }
        // A 50 MB XForm, past the form limit (10 MB by default): 413 before it is read.
        let fifty = Array("<?xml version=\"1.0\"?><h:html xmlns:h=\"http://www.w3.org/1999/xhtml\"><!--".utf8)
            + [UInt8](repeating: UInt8(ascii: "x"), count: 50 << 20) + Array("--></h:html>".utf8)
        var huge: Reply?
        let hugeElapsed = try clock.measure { huge = try publish(f, id, fifty, contentType: "application/xml") }
        P.expectProblem(try #require(huge), .payloadTooLarge)
        #expect(hugeElapsed < .seconds(5), "50 MB took \(hugeElapsed)")
        #expect(try f.client.get("/healthz").status == 200)
        #expect(try versions(f) == 0)

        // A server whose form limit lets 50 MB through: the XForm reader's own cap (10 MB) refuses
        // it before parsing.
        let roomy = try Fixture(server: try TestServer { $0.maxFormBytes = 64 << 20 })
        let roomyId = try survey(roomy)
        var read: Reply?
        let readElapsed = try clock.measure { read = try publish(roomy, roomyId, fifty, contentType: "application/xml") }
        let r = try #require(read)
        P.expectProblem(r, .validationFailed)
        #expect(r.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "xform")
        #expect(r.json?["errors"]?.arrayValue?.first?["message"]?.stringValue?.contains("at most 10485760 bytes") == true, "\(r.text)")
        #expect(readElapsed < .seconds(5), "50 MB read took \(readElapsed)")
        #expect(try roomy.client.get("/healthz").status == 200)
        #expect(try versions(roomy) == 0)
    }

    @Test func aServerWithoutPyxformSaysWhatToInstall() throws {
        let server = try TestServer { $0.pyxform = "/nonexistent/xls2xform" }
        let f = try Fixture(server: server)
        let id = try survey(f)
        let r = try publish(f, id, try Self.bytes("simple.xlsx"), contentType: Self.xlsx)
        P.expectProblem(r, .unsupportedFileType)
        #expect(r.json?["detail"]?.stringValue?.contains("pyxform") == true)
        #expect(r.json?["detail"]?.stringValue?.contains("scripts/setup.sh") == true)
        // An XForm needs no converter.
        #expect(try publish(f, id, try Self.bytes("simple.xml"), contentType: "application/xml").status == 201)
    }
}
