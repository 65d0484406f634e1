import Foundation
import Testing
import SurveyDomain

/// Real XLSForms, written by others, published as a new user would: pyxform's own example forms
/// (`Tests/SurveyXFormTests/Fixtures/corpus/pyxform`, BSD-2-Clause, its LICENSE beside them) and
/// forms in the shape of real surveys (`corpus/surveys`, made by `corpus/make_surveys.py`: OSM
/// mapping with a start-geopoint, a roster read with indexed-repeat, market prices with pulldata,
/// dynamic defaults and triggers, every widget, a submission URL, encryption, cascading selects
/// sharing choice names, a name in two groups, entities). Every one converts in pyxform 4.5.0
/// and passes ODK Validate, so ODK Central publishes every one.
///
/// Each is published through the real server with the files `corpus/attachments.txt` names. The
/// test prints the share published and a table of the refusals by reason, so anyone can rerun
/// the measure (`swift test --skip-build --filter RealFormsCorpusTests`); every XForm a published
/// version serves passes ODK Validate; every refused form is refused by name, for a reason of
/// `Self.refusals` (a form published that was refused before, or refused for another reason, fails
/// the test, so the table below moves only on purpose).
@Suite struct RealFormsCorpusTests {
    static let corpus = FormPublishingTests.fixtures.appendingPathComponent("corpus")

    /// The forms still refused, each with a phrase its refusal must contain.
    static let refusals: [String: String] = [:]
    struct Outcome {
        let form: String
        let status: Int
        let message: String
    }

    static func forms() throws -> [String] {
        var out: [String] = []
        for folder in ["pyxform", "surveys"] {
            let names = try FileManager.default.contentsOfDirectory(atPath: corpus.appendingPathComponent(folder).path)
            out += names.filter { $0.hasSuffix(".xls") || $0.hasSuffix(".xlsx") }.sorted().map { "\(folder)/\($0)" }
        }
        return out
    }

    /// `form: file file …` lines of attachments.txt.
    static func attachments() throws -> [String: [String]] {
        let text = try String(contentsOf: corpus.appendingPathComponent("attachments.txt"), encoding: .utf8)
        var out: [String: [String]] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            out[String(line[..<colon])] = line[line.index(after: colon)...].split(separator: " ").map(String.init)
        }
        return out
    }

    /// An OpenStreetMap question as pyxform writes it (`osm` with its tags): the OSM file the
    /// mapping app makes arrives beside the instance (as bytes of no type, named `.osm`) and is
    /// stored as the answer.
    static let osmForm = """
        <?xml version="1.0"?>
        <h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa" xmlns:orx="http://openrosa.org/xforms">
          <h:head><h:title>Buildings</h:title><model>
            <instance><data id="buildings"><building/><meta><instanceID/></meta></data></instance>
            <bind nodeset="/data/building" type="binary" required="true()"/>
            <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
          </model></h:head>
          <h:body><upload ref="/data/building" mediatype="osm/*"><label>Map the building</label>
            <tag key="building"><label>Building</label></tag><tag key="levels"><label>Levels</label></tag></upload></h:body>
        </h:html>
        """

    @Test func anOSMQuestionTakesTheFileTheMappingAppMakes() throws {
        let f = try Fixture()
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Buildings"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        let published = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken,
                                             body: Array(Self.osmForm.utf8), headers: ["Content-Type": "application/xml"])
        #expect(published.status == 201, "\(published.text)")
        let c = CollectClient(f)
        let xform = try c.download(try #require(try c.formList().forms.first)).body
        try ODKValidate.accept(xform, label: "an OSM question")
        let osm = Array("<?xml version='1.0' encoding='UTF-8'?><osm version='0.6' generator='OpenMapKit'><way id='-1'><tag k='building' v='yes'/></way></osm>".utf8)
        let instance = try CollectClient.instance(of: xform, instanceID: "uuid:osm-0001", values: [("building", "building-1.osm")])
        let r = try c.submit(instance, files: [CollectClient.File(name: "building-1.osm", contentType: "application/octet-stream", bytes: osm)])
        #expect(r.status == 201, "\(r.text)")
        let stored = try f.client.get("/v1/orgs/\(f.orgId)/responses?clientSubmissionId=uuid:osm-0001", token: f.collectorToken)
        let upload = try #require(stored.json?["answers"]?["building"]?["clientUploadId"]?.stringValue, "\(stored.text)")
        let content = try f.client.get("/v1/orgs/\(f.orgId)/uploads/\(upload)/content", token: f.reviewerToken)
        #expect(content.status == 200 && content.body == osm && content.header("content-type")?.hasPrefix("text/xml") == true)
    }

    /// A new organization on the fixture's server, and its admin's token.
    static func team(_ f: Fixture) throws -> (orgId: String, adminToken: String) {
        let org = try f.client.post("/v1/orgs", token: f.server.operatorToken,
                                    ["name": "Corpus team", "expiresAt": .string(Timestamp.format(Timestamp.nowMillis() + 86_400_000))])
        let orgId = try #require(org.json?["orgId"]?.stringValue, "\(org.text)")
        let admin = try f.client.post("/v1/orgs/\(orgId)/users", token: f.server.operatorToken, ["name": "Ada", "roles": ["admin"]])
        return (orgId, try #require(admin.json?["token"]?.stringValue, "\(admin.text)"))
    }

    /// The reason a refusal is counted under, by what its message names.
    static func reason(_ message: String) -> String {
        let reasons: [(String, String)] = [
            ("holds <tag>", "has an OpenStreetMap question (`osm` with `<tag>`s)"),
        ]
        return reasons.first { message.contains($0.0) }?.1 ?? "other"
    }

    @Test func everyRealFormPyxformConvertsPublishes() throws {
        let f = try Fixture()
        let attachments = try Self.attachments()
        var outcomes: [Outcome] = []
        for form in try Self.forms() {
            // Each form is another team's: a form id names one survey of an organization, and two
            // of pyxform's forms share theirs ("Spec test").
            let team = try Self.team(f)
            let s = try f.client.post("/v1/orgs/\(team.orgId)/surveys", token: team.adminToken, ["title": .string(form)])
            let surveyId = try #require(s.json?["surveyId"]?.stringValue, "\(s.text)")
            let bytes = [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(form)))
            let fileName = String(form.split(separator: "/").last ?? "")
            var parts = [FormAttachmentTests.Part(field: "form", fileName: fileName, contentType: "application/octet-stream", bytes: bytes)]
            for path in attachments[form] ?? [] {
                let name = String(path.split(separator: "/").last ?? "")
                parts.append(FormAttachmentTests.file(name, [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(path)))))
            }
            let (body, contentType) = FormAttachmentTests.multipart(parts)
            let r = try f.client.request("POST", "/v1/orgs/\(team.orgId)/surveys/\(surveyId)/versions", token: team.adminToken, body: body,
                                         headers: ["Content-Type": contentType])
            let message = (r.json?["errors"]?.arrayValue ?? []).map { "\($0["path"]?.stringValue ?? "?"): \($0["message"]?.stringValue ?? "?")" }
                .joined(separator: "; ")
            outcomes.append(Outcome(form: form, status: r.status, message: message.isEmpty ? r.text : message))
            if r.status == 201 {
                let versionId = try #require(r.json?["surveyVersionId"]?.stringValue)
                let xform = try f.client.get("/v1/orgs/\(team.orgId)/survey-versions/\(versionId)/xform", token: team.adminToken)
                #expect(xform.status == 200, "\(form): \(xform.text)")
                try ODKValidate.accept(xform.body, label: "corpus \(form)")
                if form == "surveys/submission_url.xlsx" {
                    // Published with a warning that says where ODK apps send its submissions.
                    let warnings = (r.json?["warnings"]?.arrayValue ?? []).compactMap(\.stringValue)
                    #expect(warnings.contains { $0.contains("https://collect.example.org/submission") }, "\(r.text)")
                }
            }
        }
        let published = outcomes.filter { $0.status == 201 }
        let refused = outcomes.filter { $0.status != 201 }
        var byReason: [String: [String]] = [:]
        for o in refused { byReason[Self.reason(o.message), default: []].append(o.form) }
        let share = Double(published.count) / Double(outcomes.count) * 100
        print("Real forms: \(published.count) of \(outcomes.count) publish (\(String(format: "%.0f", share)) %); refused by reason:")
        for (reason, forms) in byReason.sorted(by: { ($0.value.count, $1.key) > ($1.value.count, $0.key) }) {
            print("  \(forms.count)  \(reason): \(forms.joined(separator: ", "))")
        }
        for o in refused { print("  refused \(o.form): \(o.status) \(o.message)") }
        for o in refused {
            if let phrase = Self.refusals[o.form] {
                #expect(o.status == 422 && o.message.contains(phrase), "\(o.form): \(o.status) \(o.message)")
            } else {
                Issue.record("\(o.form) is refused: \(o.status) \(o.message)")
            }
        }
        for o in published where Self.refusals[o.form] != nil {
            Issue.record("\(o.form) now publishes: take it out of RealFormsCorpusTests.refusals")
        }
        #expect(outcomes.count == 50)
        #expect(published.count == outcomes.count - Self.refusals.count)
    }
}
