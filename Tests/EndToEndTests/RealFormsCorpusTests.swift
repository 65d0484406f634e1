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
    static let refusals: [String: String] = [
        "pyxform/attribute_columns_test.xlsx": "the form is encrypted",
        "pyxform/flat_xlsform_test.xlsx": "the form is encrypted",
        "pyxform/xlsform_spec_test.xlsx": "the form is encrypted",
        "surveys/encrypted.xlsx": "the form is encrypted",
        "pyxform/case_insensitivity.xlsx": "/data/q3 holds <tag>, which surveyd does not carry",
        "pyxform/loop.xlsx": "two nodes are named number",
        "pyxform/simple_loop.xls": "two nodes are named count",
        "surveys/repeated_names.xlsx": "two nodes are named count",
    ]
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

    /// The reason a refusal is counted under, by what its message names.
    static func reason(_ message: String) -> String {
        let reasons: [(String, String)] = [
            ("the form is encrypted", "is encrypted (public_key): its answers would reach the server sealed"),
            ("two nodes are named", "names a node twice in different groups"),
            ("holds <tag>", "has an OpenStreetMap question (`osm` with `<tag>`s)"),
        ]
        return reasons.first { message.contains($0.0) }?.1 ?? "other"
    }

    @Test func everyRealFormPyxformConvertsPublishes() throws {
        let f = try Fixture()
        let attachments = try Self.attachments()
        var outcomes: [Outcome] = []
        for form in try Self.forms() {
            let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": .string(form)])
            let surveyId = try #require(s.json?["surveyId"]?.stringValue, "\(s.text)")
            let bytes = [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(form)))
            let fileName = String(form.split(separator: "/").last ?? "")
            var parts = [FormAttachmentTests.Part(field: "form", fileName: fileName, contentType: "application/octet-stream", bytes: bytes)]
            for path in attachments[form] ?? [] {
                let name = String(path.split(separator: "/").last ?? "")
                parts.append(FormAttachmentTests.file(name, [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(path)))))
            }
            let (body, contentType) = FormAttachmentTests.multipart(parts)
            let r = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, body: body,
                                         headers: ["Content-Type": contentType])
            let message = (r.json?["errors"]?.arrayValue ?? []).map { "\($0["path"]?.stringValue ?? "?"): \($0["message"]?.stringValue ?? "?")" }
                .joined(separator: "; ")
            outcomes.append(Outcome(form: form, status: r.status, message: message.isEmpty ? r.text : message))
            if r.status == 201 {
                let versionId = try #require(r.json?["surveyVersionId"]?.stringValue)
                let xform = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(versionId)/xform", token: f.collectorToken)
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
