import Foundation
import Testing
import SurveyDomain

/// A version published as JSON has an XForm too: `GET …/xform` writes its definition as one,
/// which ODK Validate (JavaRosa, what ODK Collect runs) accepts and which, published back to the
/// survey as an XForm, is the same definition — the same `contentHash`. The version document
/// names what it was published from and that XForm by their digests, whatever the format.
@Suite struct XFormGenerationTests {
    typealias P = FoundationTests

    /// A roster in two languages, with a choice filter outside and inside the repeat.
    static let roster: JSONValue = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/roster-two-languages.json")
        return (try? JSONParser.parse(Array(Data(contentsOf: url)))) ?? .null
    }()

    /// Every definition of the shared case table, the roster, and the definitions other suites publish.
    static func definitions() throws -> [(String, JSONValue)] {
        let table = try JSONParser.parse([UInt8](try Data(contentsOf: FormCaseTableTests.tableURL)))
        var out: [(String, JSONValue)] = [("roster", roster), ("flat (Fixture.definition)", Fixture.definition),
                                          ("console", ConsoleTests.definition)]
        if let d = table["definition"] { out.append(("form-cases.json", d)) }
        for c in table["cases"]?.arrayValue ?? [] {
            if let d = c["definition"] { out.append(("form-cases.json: \(c["name"]?.stringValue ?? "?")", d)) }
        }
        return out
    }

    func version(_ f: Fixture, _ id: String) throws -> Reply {
        try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(id)", token: f.collectorToken)
    }

    func get(_ f: Fixture, _ id: String, _ file: String) throws -> Reply {
        try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(id)/\(file)", token: f.collectorToken)
    }

    func publish(_ f: Fixture, _ surveyId: String, _ body: [UInt8], contentType: String) throws -> Reply {
        try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, body: body,
                             headers: ["Content-Type": contentType])
    }

    /// The document's `source` and `xform` name the bytes `…/source` and `…/xform` serve.
    func expectDescribed(_ f: Fixture, _ id: String, format: String, formId: String?, xformVersion: String?,
                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let document = try #require(try version(f, id).json, sourceLocation: sourceLocation)
        let source = try get(f, id, "source"), xform = try get(f, id, "xform")
        #expect(source.status == 200 && xform.status == 200, sourceLocation: sourceLocation)
        #expect(document["source"] == ["format": .string(format), "sha256": .string(Digest.sha256Hex(source.body))],
                "\(document["source"].map(CanonicalJSON.string) ?? "none")", sourceLocation: sourceLocation)
        let expected: JSONValue = ["formId": formId.map(JSONValue.string) ?? .null, "version": xformVersion.map(JSONValue.string) ?? .null,
                                   "md5": .string(Digest.md5Hex(xform.body))]
        #expect(document["xform"] == expected, "\(document["xform"].map(CanonicalJSON.string) ?? "none")", sourceLocation: sourceLocation)
    }

    @Test func aJSONVersionsXFormIsValidAndPublishesTheSameDefinition() throws {
        let f = try Fixture()
        for (label, definition) in try Self.definitions() {
            let v = try f.publishSurvey(definition: definition)
            let xform = try get(f, v.versionId, "xform")
            #expect(xform.status == 200, "\(label): \(xform.text)")
            #expect(xform.header("content-type") == "application/xml", "\(label)")
            try ODKValidate.accept(xform.body, label: "generated from a JSON definition: \(label)")
            // Written on request, the same bytes each time.
            #expect(try get(f, v.versionId, "xform").body == xform.body, "\(label)")
            // Published back to the same survey, the XForm is the same definition.
            let again = try publish(f, v.surveyId, xform.body, contentType: "application/xml")
            #expect(again.status == 201, "\(label): \(again.text)")
            #expect(again.json?["contentHash"]?.stringValue == v.contentHash, "\(label)")
            #expect(again.json?["definition"] == definition, "\(label)")
            let formId = definition["formId"]?.stringValue ?? v.surveyId
            try expectDescribed(f, v.versionId, format: "json", formId: formId, xformVersion: "1")
            // The XForm version keeps the uploaded bytes: the same XForm, the same MD5.
            let againId = try #require(again.json?["surveyVersionId"]?.stringValue)
            try expectDescribed(f, againId, format: "xform", formId: formId, xformVersion: "1")
            #expect(try get(f, againId, "xform").body == xform.body)
        }
    }

    @Test func theVersionDocumentDescribesItsSourceAndXFormWhateverTheFormat() throws {
        let f = try Fixture()
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Household"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        let json = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, ["definition": Self.roster])
        let xlsform = try publish(f, surveyId, try FormPublishingTests.bytes("household.xlsx"), contentType: FormPublishingTests.xlsx)
        let xform = try publish(f, surveyId, try FormPublishingTests.bytes("simple.xml"), contentType: "application/xml")
        for r in [json, xlsform, xform] { #expect(r.status == 201, "\(r.text)") }
        let ids = try [json, xlsform, xform].map { try #require($0.json?["surveyVersionId"]?.stringValue) }
        try expectDescribed(f, ids[0], format: "json", formId: "household_roster", xformVersion: "1")
        try expectDescribed(f, ids[1], format: "xlsform", formId: "household_roster", xformVersion: "2026120201")
        // simple.xml names no version.
        try expectDescribed(f, ids[2], format: "xform", formId: "simple", xformVersion: nil)
        #expect(try get(f, ids[1], "source").body == (try FormPublishingTests.bytes("household.xlsx")))
        // The 201 is the document a GET answers.
        for (r, id) in zip([json, xlsform, xform], ids) {
            #expect(r.json == (try version(f, id).json))
        }
        // The second version of the survey names its number in its XForm.
        let second = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, ["definition": Fixture.definition])
        #expect(second.json?["xform"]?["version"] == "4")
        #expect(second.json?["xform"]?["formId"]?.stringValue == surveyId)
        #expect(String(decoding: try get(f, try #require(second.json?["surveyVersionId"]?.stringValue), "xform").body, as: UTF8.self)
            .contains("<data id=\"\(surveyId)\" version=\"4\">"))
    }

    @Test func aReplayedPublicationAnswersTheSameDocument() throws {
        let f = try Fixture()
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Household"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        let body = Array(CanonicalJSON.encode(["definition": Self.roster]))
        let headers = ["Content-Type": "application/json", "Idempotency-Key": "publish-roster-1"]
        let first = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, body: body, headers: headers)
        let replay = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, body: body, headers: headers)
        #expect(first.status == 201)
        #expect(replay.header("idempotent-replayed") == "true")
        #expect(replay.json == first.json)
        #expect(first.json?["xform"]?["md5"]?.stringValue?.count == 32)
        #expect(first.json?["source"]?["format"] == "json")
    }

    @Test func aDefinitionNoXFormCanHoldSaysSo() throws {
        let f = try Fixture()
        // `meta` at the top is where an XForm keeps its metadata.
        let v = try f.publishSurvey(definition: ["title": "Meta", "questions": [["id": "meta", "type": "text", "label": "Meta"]]])
        let xform = try get(f, v.versionId, "xform")
        P.expectProblem(xform, .notFound)
        #expect(xform.json?["detail"]?.stringValue?.contains("meta") == true, "\(xform.text)")
        let document = try #require(try version(f, v.versionId).json)
        #expect(document["xform"] == .null)
        #expect(document["source"]?["format"] == "json")
        // ODK Collect has no floor(): ODK Validate refuses a form that calls it.
        let floor = try f.publishSurvey(definition: ["title": "Floor", "questions": [
            ["id": "a", "type": "decimal", "label": "A"], ["id": "b", "type": "calculate", "label": "B", "calculation": "floor(${a})"]]])
        let refused = try get(f, floor.versionId, "xform")
        P.expectProblem(refused, .notFound)
        #expect(refused.json?["detail"]?.stringValue?.contains("floor()") == true, "\(refused.text)")
        #expect(try version(f, floor.versionId).json?["xform"] == .null)
    }
}
