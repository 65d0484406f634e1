import Foundation
import Testing
import SurveyDomain
import TestProcesses

/// Forms a careless or hostile admin publishes, on a real server: a form nested past what any
/// form needs is refused before anything recurses over it (the server stays up), a form id names
/// one survey of an organization (so a filled-in form always reaches its own survey), and text or
/// an encoding no app would read as written is refused where it enters. Nothing is published.
@Suite struct PublishingRefusalTests {
    typealias P = FoundationTests
    static let xlsxType = FormPublishingTests.xlsx

    func survey(_ f: Fixture, _ title: String = "Household") throws -> String {
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": .string(title)])
        return try #require(s.json?["surveyId"]?.stringValue)
    }

    func publish(_ f: Fixture, _ surveyId: String, _ body: [UInt8], _ contentType: String) throws -> Reply {
        try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, body: body,
                             headers: ["Content-Type": contentType])
    }

    func versions(_ f: Fixture) throws -> Int64 { try f.server.count("SELECT COUNT(*) AS n FROM survey_versions") }

    /// An XLSForm written by openpyxl (in the venv `scripts/setup.sh` makes): `rows` of the survey
    /// sheet under `type, name, label`, and a settings sheet when `settings` is given.
    static func xlsform(_ rows: [[String]], settings: [String: String]? = nil) throws -> [UInt8] {
        let python = ODKValidate.projectRoot.appendingPathComponent(".build/venv-forms/bin/python").path
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("xlsform-\(UUID().uuidString).xlsx").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let spec = CanonicalJSON.string(["rows": .array(rows.map { .array($0.map(JSONValue.string)) }),
                                         "settings": settings.map { .object($0.mapValues(JSONValue.string)) } ?? .null])
        let script = """
            import json, sys
            from openpyxl import Workbook
            spec = json.loads(sys.argv[1])
            wb = Workbook(); ws = wb.active; ws.title = "survey"
            ws.append(["type", "name", "label"])
            for row in spec["rows"]: ws.append(row)
            if spec["settings"]:
                s = wb.create_sheet("settings"); s.append(list(spec["settings"].keys())); s.append(list(spec["settings"].values()))
            wb.save(sys.argv[2])
            """
        let (ended, _) = try SpawnedProcess.run(python, ["-c", script, spec, out])
        guard ended == .exited(0) else { throw TestFailure("openpyxl: \(ended)") }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: out)))
    }

    @Test func aFormNestedDeeperThanAnyFormNeedsIsRefusedAndTheServerStaysUp() throws {
        let f = try Fixture()
        let id = try survey(f)
        let head = "<h:html xmlns=\"http://www.w3.org/2002/xforms\" xmlns:h=\"http://www.w3.org/1999/xhtml\"><h:head><h:title>Deep</h:title><model>"
        // 200 groups in the body (and the instance).
        let groups = (1...200).map { "g\($0)" }
        let path = "/data/" + groups.joined(separator: "/")
        let bodyDeep = head + "<instance><data id=\"deep\">" + groups.map { "<\($0)>" }.joined() + "<q/>" + groups.reversed().map { "</\($0)>" }.joined()
            + "</data></instance></model></h:head><h:body>"
            + groups.indices.map { "<group ref=\"/data/\(groups[...$0].joined(separator: "/"))\">" }.joined()
            + "<input ref=\"\(path)/q\"><label>Q</label></input>" + String(repeating: "</group>", count: 200) + "</h:body></h:html>"
        // 200 levels in the primary instance alone: 3 KB, no bind, no body control.
        let instanceDeep = head + "<instance><data id=\"deep2\">" + String(repeating: "<a>", count: 200) + String(repeating: "</a>", count: 200)
            + "</data></instance></model></h:head><h:body/></h:html>"
        for (name, xml) in [("200 groups", bodyDeep), ("an instance 200 deep", instanceDeep)] {
            let r = try publish(f, id, Array(xml.utf8), "application/xml")
            P.expectProblem(r, .validationFailed)
            #expect(r.json?["errors"]?.arrayValue?.first?["path"] == "xform", "\(name)")
            #expect(r.json?["errors"]?.arrayValue?.first?["message"]?.stringValue?.contains("more than 64 deep") == true, "\(name): \(r.text)")
            #expect(try f.client.get("/healthz").status == 200, "\(name)")
        }
        // A 7 KB spreadsheet of 200 nested begin_group rows, which pyxform converts.
        let rows = groups.map { ["begin_group", $0, $0] } + [["text", "q", "Q"]] + groups.map { _ in ["end_group", "", ""] }
        let r = try publish(f, id, try Self.xlsform(rows), Self.xlsxType)
        P.expectProblem(r, .validationFailed)
        #expect(r.json?["errors"]?.arrayValue?.first?["path"] == "xlsform", "\(r.text)")
        #expect(r.json?["errors"]?.arrayValue?.first?["message"]?.stringValue?.contains("more than 64 deep") == true, "\(r.text)")
        #expect(try f.client.get("/healthz").status == 200)
        #expect(try versions(f) == 0)
    }

    @Test func xlsFormsWithoutAFormIdEachReachTheirOwnSurvey() throws {
        let f = try Fixture()
        let census = try survey(f, "Household census"), clinic = try survey(f, "Clinic visit")
        let form = try Self.xlsform([["integer", "people", "People"]])
        for surveyId in [census, clinic] {
            let r = try publish(f, surveyId, form, Self.xlsxType)
            #expect(r.status == 201, "\(r.text)")
            #expect(r.json?["xform"]?["formId"]?.stringValue == surveyId, "an XLSForm without form_id is known by its survey's id: \(r.text)")
        }
        let listed = try CollectClient(f).formList().forms
        #expect(Set(listed.map(\.formID)) == [census, clinic], "\(listed.map(\.formID))")
        // Census's form, downloaded from census's own downloadUrl, lands in census.
        let censusForm = try #require(listed.first { $0.formID == census })
        let xform = try CollectClient(f).download(censusForm).body
        let instance = try CollectClient.instance(of: xform, instanceID: "uuid:census-0001", values: [("people", "4")])
        #expect(try CollectClient(f).submit(instance).status == 201)
        let stored = try f.server.rows("SELECT survey_id FROM responses")
        let surveyIds = try stored.map { try $0.string("survey_id") }
        #expect(surveyIds == [census])
    }

    /// An XForm written by hand whose form id another survey's XLSForm has.
    static let sharedFormXForm = """
        <h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml"><h:head><h:title>Copy</h:title><model>\
        <instance><data id="shared_form" version="2"><people/><meta><instanceID/></meta></data></instance>\
        <bind nodeset="/data/people" type="int"/><bind nodeset="/data/meta/instanceID" type="string" readonly="true()"/></model></h:head>\
        <h:body><input ref="/data/people"><label>People</label></input></h:body></h:html>
        """

    @Test func aFormIdOfAnotherSurveyIsRefusedNamingThatSurvey() throws {
        let f = try Fixture()
        let first = try survey(f, "Household census"), second = try survey(f, "Clinic visit")
        let settings = ["form_id": "shared_form", "version": "1"]
        #expect(try publish(f, first, try Self.xlsform([["integer", "people", "People"]], settings: settings), Self.xlsxType).status == 201)
        let audit = try f.server.count("SELECT COUNT(*) AS n FROM audit")
        let xform = Self.sharedFormXForm
        let refusals: [(String, Reply)] = [
            ("xlsform", try publish(f, second, try Self.xlsform([["integer", "people", "People"]], settings: settings), Self.xlsxType)),
            ("xform", try publish(f, second, Array(xform.utf8), "application/xml")),
            ("definition.formId", try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(second)/versions", token: f.adminToken,
                                                    ["definition": ["title": "Copy", "formId": "shared_form", "questions": [["id": "people", "type": "integer", "label": "People"]]]])),
        ]
        for (at, r) in refusals {
            P.expectProblem(r, .validationFailed)
            let error = r.json?["errors"]?.arrayValue?.first
            #expect(error?["path"]?.stringValue == at, "\(r.text)")
            #expect(error?["message"]?.stringValue?.contains("Household census") == true, "\(r.text)")
            #expect(error?["message"]?.stringValue?.contains(first) == true, "\(r.text)")
        }
        #expect(try versions(f) == 1)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit") == audit)
        // The survey that has the id publishes it again.
        #expect(try publish(f, first, Array(xform.utf8), "application/xml").status == 201)
        #expect(try CollectClient(f).formList().forms.map(\.formID) == ["shared_form"])
    }

    @Test func textAndEncodingsAppsWouldReadOtherwiseAreRefused() throws {
        let f = try Fixture()
        let id = try survey(f)
        // A label with a control character: no XForm can carry it, so no app would ever list it.
        let label = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(id)/versions", token: f.adminToken,
                                      ["definition": ["title": "Water", "questions": [["id": "q", "type": "text", "label": "Water\u{1}point"]]]])
        P.expectProblem(label, .validationFailed)
        #expect(label.json?["errors"]?.arrayValue?.first?["path"] == "definition.questions[0].label", "\(label.text)")
        // An XForm whose declaration names an encoding its UTF-8 bytes are not in.
        for encoding in ["UTF-16", "ISO-8859-1"] {
            let xml = """
                <?xml version="1.0" encoding="\(encoding)"?><h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml">\
                <h:head><h:title>Bouaké</h:title><model><instance><data id="enc"><q/></data></instance></model></h:head>\
                <h:body><input ref="/data/q"><label>Ville</label></input></h:body></h:html>
                """
            let r = try publish(f, id, Array(xml.utf8), "application/xml")
            P.expectProblem(r, .validationFailed)
            #expect(r.json?["errors"]?.arrayValue?.first?["path"] == "xform")
            #expect(r.json?["errors"]?.arrayValue?.first?["message"]?.stringValue?.contains("encoding=\"\(encoding)\"") == true, "\(r.text)")
        }
        #expect(try versions(f) == 0)
        let utf8 = """
            <?xml version="1.0" encoding="utf-8"?><h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml">\
            <h:head><h:title>Bouaké</h:title><model><instance><data id="enc"><q/></data></instance></model></h:head>\
            <h:body><input ref="/data/q"><label>Ville</label></input></h:body></h:html>
            """
        #expect(try publish(f, id, Array(utf8.utf8), "application/xml").status == 201)
    }
}
