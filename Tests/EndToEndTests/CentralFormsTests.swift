import Foundation
import Synchronization
import SurveyDomain
import SurveyServer
import Testing

/// ODK Central's form writes on a real server (with pyxform): a form made as a draft or
/// published at once, its draft made again, a file attached to the draft, the draft published
/// with a version set. Every refusal — a used form id, an expired subscription, a collector, a
/// file the form does not name, a version published already — leaves no survey, version, file
/// or audit entry. (pyodk itself drives these routes in `Tests/Central/test_pyodk.py`.)
@Suite struct CentralFormsTests {
    struct World {
        let f: Fixture
        let projectId: Int

        init() throws {
            f = try Fixture()
            let projects = try f.client.get("/v1/projects", token: f.adminToken)
            guard let id = projects.json?.arrayValue?.first?["id"]?.intValue else { throw TestFailure("projects: \(projects.status) \(projects.text)") }
            projectId = id
        }

        var forms: String { "/v1/projects/\(projectId)/forms" }

        func create(_ body: [UInt8], contentType: String = "application/xml", publish: Bool = false, token: String? = nil,
                    headers: [String: String] = [:]) throws -> Reply {
            try f.client.request("POST", forms + "?publish=\(publish)&ignoreWarnings=true", token: token ?? f.adminToken, body: body,
                                 headers: headers.merging(["Content-Type": contentType]) { a, _ in a })
        }

        func post(_ path: String, body: [UInt8] = [], contentType: String? = nil, token: String? = nil) throws -> Reply {
            try f.client.request("POST", forms + path, token: token ?? f.adminToken, body: body,
                                 headers: contentType.map { ["Content-Type": $0] } ?? [:])
        }

        /// Rows a refusal must not add.
        func traces() throws -> [Int64] {
            try ["surveys", "survey_versions", "survey_version_attachments", "audit", "idempotency_keys"].map {
                try f.server.count("SELECT COUNT(*) AS n FROM \($0)")
            }
        }
    }

    /// An XForm with the form id and version given; `csv`: its one question's choices are read
    /// from `villages.csv` (select_one_from_file).
    static func xform(id: String, version: String, title: String = "Trees", csv: Bool = false) -> [UInt8] {
        let question = csv ? "<village/>" : "<height/>"
        let instance = csv ? #"<instance id="villages" src="jr://file-csv/villages.csv"/>"# : ""
        let bind = csv ? #"<bind nodeset="/data/village" type="string"/>"# : #"<bind nodeset="/data/height" type="int"/>"#
        let body = csv
            ? #"<select1 ref="/data/village"><label>Village</label><itemset nodeset="instance('villages')/root/item"><value ref="name"/><label ref="label"/></itemset></select1>"#
            : #"<input ref="/data/height"><label>Height</label></input>"#
        return Array("""
            <?xml version="1.0"?>
            <h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa" \
            xmlns:odk="http://www.opendatakit.org/xforms">
              <h:head>
                <h:title>\(title)</h:title>
                <model odk:xforms-version="1.0.0">
                  <instance>
                    <data id="\(id)" version="\(version)">\(question)<meta><instanceID/></meta></data>
                  </instance>
                  \(instance)
                  \(bind)
                  <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
                </model>
              </h:head>
              <h:body>\(body)</h:body>
            </h:html>
            """.utf8)
    }

    static let villages = Array("name,label\nv1,North ridge\nv2,South ford\n".utf8)

    @Test func anXFormMadeAsADraftIsPublishedFromTheDraft() throws {
        let w = try World()
        let c = w.f.client
        let made = try w.create(Self.xform(id: "trees", version: "1"))
        #expect(made.status == 200, "\(made.text)")
        #expect(made.json?["xmlFormId"]?.stringValue == "trees" && made.json?["version"]?.stringValue == "1" && made.json?["name"]?.stringValue == "Trees")
        #expect(made.json?["publishedAt"] == .null && made.json?["projectId"]?.intValue == w.projectId && made.json?["state"]?.stringValue == "open")
        #expect(made.json?["enketoId"] == .null && made.json?["keyId"] == .null && made.json?["hash"]?.stringValue?.count == 32)
        // The survey requires review; its one version is its draft, which no app lists yet.
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM surveys WHERE review_required = 1 AND title = 'Trees'") == 1)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM survey_versions WHERE draft = 1") == 1)
        // Read as Central reads it: the draft, not published yet.
        let draft = try c.get(w.forms + "/trees", token: w.f.adminToken)
        #expect(draft.status == 200 && draft.json?["publishedAt"] == .null && draft.json?["hash"] == made.json?["hash"], "\(draft.text)")
        #expect(try CollectClient(w.f).formList().forms.allSatisfy { $0.formID != "trees" })
        let listed = try c.get(w.forms, token: w.f.adminToken).json?.arrayValue ?? []
        #expect(listed.filter { $0["xmlFormId"]?.stringValue == "trees" } == [draft.json ?? .null])
        let published = try w.post("/trees/draft/publish")
        #expect(published.status == 200 && published.json?["success"]?.boolValue == true, "\(published.text)")
        let form = try c.get(w.forms + "/trees", token: w.f.adminToken)
        #expect(form.status == 200 && form.json?["version"]?.stringValue == "1" && form.json?["publishedAt"]?.stringValue != nil)
        #expect(form.json?["hash"] == made.json?["hash"])
        #expect((try c.get(w.forms, token: w.f.adminToken).json?.arrayValue ?? []).filter { $0["xmlFormId"]?.stringValue == "trees" } == [form.json ?? .null])
        // Published once: the same call again finds no draft and writes nothing.
        let traces = try w.traces()
        #expect(try w.post("/trees/draft/publish").status == 404)
        #expect(try w.traces() == traces)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM survey_versions WHERE draft = 0 AND number = 1") == 1)
    }

    @Test func anXLSFormIsPublishedAtOnceWithPublishTrue() throws {
        let w = try World()
        let xlsx = try FormPublishingTests.bytes("simple.xlsx")
        let made = try w.create(xlsx, contentType: FormPublishingTests.xlsx, publish: true, headers: ["X-XlsForm-FormId-Fallback": "simple_fallback"])
        #expect(made.status == 200, "\(made.text)")
        let id = try #require(made.json?["xmlFormId"]?.stringValue)
        #expect(made.json?["publishedAt"]?.stringValue != nil)
        let xml = try w.f.client.get(w.forms + "/\(id).xml", token: w.f.collectorToken)
        #expect(xml.status == 200 && Digest.md5Hex(xml.body) == made.json?["hash"]?.stringValue)
        // What it was published from is the XLSForm itself, on surveyd's own API.
        let surveyId = try #require(try w.f.server.rows("SELECT survey_id FROM surveys WHERE title <> 'Household'").first?.string("survey_id"))
        let versionId = try #require(try w.f.server.rows("SELECT survey_version_id FROM survey_versions WHERE survey_id = ?", [.text(surveyId)]).first?
            .string("survey_version_id"))
        #expect(try w.f.client.get("/v1/orgs/\(w.f.orgId)/survey-versions/\(versionId)/source", token: w.f.adminToken).body == xlsx)
    }

    /// An XLSForm without `form_id` takes the id pyodk names in `X-XlsForm-FormId-Fallback`
    /// (percent-encoded), never the survey's generated id.
    @Test func anXLSFormWithoutAFormIdTakesTheFallbackHeaders() throws {
        let w = try World()
        let noId = [UInt8](try Data(contentsOf: CentralFormsTests.fixtures.appendingPathComponent("central_no_id.xlsx")))
        let made = try w.create(noId, contentType: FormPublishingTests.xlsx, publish: true, headers: ["X-XlsForm-FormId-Fallback": "plots%2D2024"])
        #expect(made.status == 200 && made.json?["xmlFormId"]?.stringValue == "plots-2024", "\(made.text)")
        #expect(try w.f.client.get(w.forms + "/plots-2024.xml", token: w.f.adminToken).text.contains(#"id="plots-2024""#))
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")

    @Test func aUsedXmlFormIdIs409AndCreatesNothing() throws {
        let w = try World()
        // With an Idempotency-Key the same create again is the stored answer, not a second form.
        let key = ["Idempotency-Key": "central-form-create-1"]
        let first = try w.create(Self.xform(id: "trees", version: "1"), headers: key)
        let replayed = try w.create(Self.xform(id: "trees", version: "1"), headers: key)
        #expect(first.status == 200 && replayed.status == 200 && replayed.header("idempotent-replayed") == "true" && replayed.body == first.body)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM surveys") == 1)
        let traces = try w.traces()
        for publish in [false, true] {
            let again = try w.create(Self.xform(id: "trees", version: "2", title: "Other trees"), publish: publish)
            #expect(again.status == 409 && again.json?["errorCode"]?.intValue == 1004 && again.json?["code"]?.doubleValue == 409.3, "\(again.text)")
            #expect(again.json?["message"] == again.json?["detail"])
        }
        #expect(try w.traces() == traces)
    }

    /// pyodk's `forms.create(…, attachments=[…])`: the draft, each file, then the publication.
    @Test func aFileAttachedToTheDraftIsPublishedWithItAndListedInTheManifest() throws {
        let w = try World()
        #expect(try w.create(Self.xform(id: "visits", version: "1", title: "Visits", csv: true)).status == 200)
        // A draft waiting for its file is consistent data: surveyd's check finds nothing wrong.
        let (status, report) = try MaintenanceTests.surveyd(["check", "--data-dir", w.f.server.dataDir] + TestEngine.urlArguments(dataDir: w.f.server.dataDir))
        #expect(status == 0, "\(report)")
        // Not published while a file it names is missing; a file it does not name is refused.
        var traces = try w.traces()
        let early = try w.post("/visits/draft/publish")
        #expect(early.status == 422 && early.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "attachments.villages.csv", "\(early.text)")
        let stray = try w.post("/visits/draft/attachments/other.csv", body: Self.villages, contentType: "text/csv")
        #expect(stray.status == 422 && stray.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "attachments.other.csv", "\(stray.text)")
        #expect(try w.traces() == traces)
        let attached = try w.post("/visits/draft/attachments/villages.csv", body: Self.villages, contentType: "text/csv")
        #expect(attached.status == 200 && attached.json?["success"]?.boolValue == true, "\(attached.text)")
        // The same file again is the same draft: nothing written.
        traces = try w.traces()
        #expect(try w.post("/visits/draft/attachments/villages.csv", body: Self.villages, contentType: "text/csv").status == 200)
        #expect(try w.traces() == traces)
        #expect(try w.post("/visits/draft/publish").status == 200)
        // ODK Collect gets the form with the file in its manifest, the very bytes.
        let collect = CollectClient(w.f)
        let listed = try #require(try collect.formList().forms.first { $0.formID == "visits" })
        let media = try collect.mediaFiles(listed)
        #expect(media.map(\.name) == ["villages.csv"] && media.first?.bytes == Self.villages)
    }

    /// Two files sent at once to one draft: each is attached, or refused as sent to a draft
    /// replaced meanwhile (409 / 1021, then attached when sent again) — none is lost.
    @Test func twoFilesSentAtOnceAreBothKept() throws {
        let w = try World()
        let xform = String(decoding: Self.xform(id: "farms", version: "1", title: "Farms", csv: true), as: UTF8.self)
            .replacingOccurrences(of: "<village/>", with: "<village/><crop/>")
            .replacingOccurrences(of: #"<bind nodeset="/data/village" type="string"/>"#, with: #"""
                <bind nodeset="/data/village" type="string"/><bind nodeset="/data/crop" type="string"/><instance id="crops" src="jr://file-csv/crops.csv"/>
                """#)
            .replacingOccurrences(of: "</select1>", with: #"</select1><select1 ref="/data/crop"><label>Crop</label><itemset nodeset="instance('crops')/root/item"><value ref="name"/><label ref="label"/></itemset></select1>"#)
        #expect(try w.create(Array(xform.utf8)).status == 200)
        let names = ["villages.csv", "crops.csv"]
        let statuses = Mutex<[String: Int]>([:])
        atOnce(2) { i in
            let r = try? w.post("/farms/draft/attachments/\(names[i])", body: Self.villages, contentType: "text/csv")
            statuses.withLock { $0[names[i]] = r.map { $0.status == 409 && $0.json?["errorCode"]?.intValue == 1021 ? 409 : $0.status } ?? -1 }
        }
        for (name, status) in statuses.withLock({ $0 }) where status != 200 {
            #expect(status == 409, "\(name): \(status)")
            #expect(try w.post("/farms/draft/attachments/\(name)", body: Self.villages, contentType: "text/csv").status == 200)
        }
        #expect(try w.post("/farms/draft/publish").status == 200)
        let files = try w.f.server.rows("SELECT a.file_name FROM survey_version_attachments a JOIN survey_versions v USING (survey_version_id) WHERE v.draft = 0")
        #expect(Set(try files.map { try $0.string("file_name") }) == Set(names))
    }

    /// pyodk's `forms.update(…, attachments=[…], version_updater=…)`: the published version again
    /// as the draft, then `draft/publish?version=`.
    @Test func publishingWithAVersionSetsTheXFormsVersion() throws {
        let w = try World()
        let c = w.f.client
        #expect(try w.create(Self.xform(id: "trees", version: "1"), publish: true).status == 200)
        #expect(try w.post("/trees/draft").status == 200)
        // The published version again while the draft is that already: nothing written.
        let before = try w.traces()
        #expect(try w.post("/trees/draft").status == 200)
        #expect(try w.traces() == before)
        let published = try w.post("/trees/draft/publish?version=v9")
        #expect(published.status == 200, "\(published.text)")
        let form = try c.get(w.forms + "/trees", token: w.f.adminToken)
        #expect(form.json?["version"]?.stringValue == "v9")
        let xml = try c.get(w.forms + "/trees.xml", token: w.f.adminToken)
        #expect(xml.text.contains(#"<data id="trees" version="v9">"#) && form.json?["hash"]?.stringValue == Digest.md5Hex(xml.body), "\(xml.text)")
        // A version published already, the first or the last: 422 at version, nothing written.
        #expect(try w.post("/trees/draft").status == 200)
        let traces = try w.traces()
        for version in ["v9", "1"] {
            let again = try w.post("/trees/draft/publish?version=\(version)")
            #expect(again.status == 422 && again.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "version", "\(again.text)")
        }
        #expect(try w.traces() == traces)
        #expect(try w.post("/trees/draft/publish?version=v10").status == 200)
        // A draft is the same form: another form id is refused, nothing written.
        let before2 = try w.traces()
        let other = try w.post("/trees/draft", body: Self.xform(id: "shrubs", version: "11"), contentType: "application/xml")
        #expect(other.status == 422 && other.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "xform", "\(other.text)")
        #expect(try w.traces() == before2)
        #expect(try c.get(w.forms + "/trees", token: w.f.adminToken).json?["version"]?.stringValue == "v10")
    }

    @Test func anExpiredSubscriptionStoresNothingAndTheSameCallAfterRenewalWorksOnce() throws {
        let w = try World()
        #expect(try w.create(Self.xform(id: "trees", version: "1"), publish: true).status == 200)
        try w.f.expire()
        let traces = try w.traces()
        let refused = try [w.create(Self.xform(id: "visits", version: "1", csv: true)), w.post("/trees/draft"),
                           w.post("/trees/draft/attachments/villages.csv", body: Self.villages)]
        for r in refused.prefix(2) {
            #expect(r.status == 402 && r.json?["errorCode"]?.intValue == 1001 && r.json?["code"]?.doubleValue == 402.1001, "\(r.status) \(r.text)")
        }
        // No draft to attach to: the 404 comes before the gate, as the contract orders it.
        #expect(refused[2].status == 404)
        #expect(try w.traces() == traces)
        // A draft's file and its publication wait for the renewal too.
        try w.f.renew()
        #expect(try w.create(Self.xform(id: "sites", version: "1", csv: true)).status == 200)
        try w.f.expire()
        var waiting = try w.traces()
        let file = try w.post("/sites/draft/attachments/villages.csv", body: Self.villages)
        #expect(file.status == 402 && file.json?["errorCode"]?.intValue == 1001, "\(file.status) \(file.text)")
        #expect(try w.traces() == waiting)
        try w.f.renew()
        #expect(try w.post("/sites/draft/attachments/villages.csv", body: Self.villages).status == 200)
        try w.f.expire()
        waiting = try w.traces()
        let publication = try w.post("/sites/draft/publish")
        #expect(publication.status == 402 && publication.json?["errorCode"]?.intValue == 1001, "\(publication.status) \(publication.text)")
        #expect(try w.traces() == waiting)
        try w.f.renew()
        #expect(try w.post("/sites/draft/publish").status == 200)
        #expect(try w.create(Self.xform(id: "visits", version: "1", csv: true)).status == 200)
        #expect(try w.create(Self.xform(id: "visits", version: "1", csv: true)).status == 409)
        #expect(try w.f.server.count("SELECT COUNT(*) AS n FROM surveys") == 3)
    }

    @Test func aCollectorOrReviewerIsRefused403() throws {
        let w = try World()
        #expect(try w.create(Self.xform(id: "trees", version: "1")).status == 200)
        let traces = try w.traces()
        for token in [w.f.collectorToken, w.f.reviewerToken] {
            let calls = try [w.create(Self.xform(id: "other", version: "1"), token: token), w.post("/trees/draft", token: token),
                             w.post("/trees/draft/attachments/villages.csv", body: Self.villages, token: token),
                             w.post("/trees/draft/publish", token: token)]
            for r in calls { #expect(r.status == 403 && r.json?["code"]?.doubleValue == 403.1, "\(r.status) \(r.text)") }
        }
        #expect(try w.f.client.request("POST", w.forms, token: nil, body: Self.xform(id: "x", version: "1")).status == 401)
        #expect(try w.traces() == traces)
    }

    /// Central's other form routes are not offered (501 / 1050); another method on a path these
    /// routes serve is HTTP's 405 with `Allow`, as on every path of surveyd.
    @Test func otherFormRoutesAreStillNotOffered() throws {
        let w = try World()
        #expect(try w.create(Self.xform(id: "trees", version: "1")).status == 200)
        for (method, path) in [("GET", "/trees/versions"), ("GET", "/trees/draft/attachments"), ("GET", "/trees/draft.xml"),
                               ("POST", "/trees/draft/test-submissions")] {
            let r = try w.f.client.request(method, w.forms + path, token: w.f.adminToken)
            #expect(r.status == 501 && r.json?["errorCode"]?.intValue == 1050, "\(method) \(path): \(r.status)")
        }
        let other = try w.f.client.request("DELETE", w.forms + "/trees/draft", token: w.f.adminToken)
        #expect(other.status == 405 && other.header("allow") == "POST")
    }
}
