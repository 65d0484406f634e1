import Foundation
import FoundationXML
import Testing
import SurveyDomain

/// A survey's draft on a real server: published with `?draft=true`, fetched and filled through
/// the draft door as ODK Collect does, its test submissions kept apart from everything the live
/// survey shows (responses, exports, OData, webhooks, entities) and deleted when the draft is
/// published or discarded. Every write is gated; a refused one stores nothing.
@Suite struct SurveyDraftTests {
    typealias P = FoundationTests

    func publishDraft(_ f: Fixture, _ surveyId: String, _ definition: JSONValue) throws -> Reply {
        try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions?draft=true", token: f.adminToken, ["definition": definition])
    }

    func count(_ f: Fixture, _ sql: String) throws -> Int64 { try f.server.count(sql) }

    /// Whether the server keeps a file of these bytes (a blob on disk, or rows on PostgreSQL).
    func blobExists(_ f: Fixture, _ sha256: String) -> Bool { f.server.files(in: "blobs").contains { $0.hasSuffix(sha256) } }

    @Test func aDraftIsTestedThroughItsDoorAndNoLiveReadShowsItsSubmissions() throws {
        let receiver = try WebhookReceiver()
        let f = try Fixture(server: try TestServer { $0.webhooksAllowPrivate = true })
        let p = try OpenRosaTests.Published(f, definition: FormLogicTests.roster)
        let hook = try f.client.post("/v1/orgs/\(f.orgId)/webhooks", token: f.adminToken,
                                     ["url": .string(receiver.url()), "events": ["response.accepted"]])
        #expect(hook.status == 201, "\(hook.text)")

        let draft = try publishDraft(f, p.v.surveyId, FormLogicTests.roster.with(title: "Roster, draft"))
        #expect(draft.status == 201, "\(draft.text)")
        #expect(draft.json?["draft"] == .bool(true))
        #expect(draft.header("location") == "/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId)")
        let draftId = try #require(draft.json?["surveyVersionId"]?.stringValue)
        let draftHash = try #require(draft.json?["contentHash"]?.stringValue)

        // Not a published version: the live form list still offers version 1, the survey's
        // versions are the published ones, the version is not found by its id, and the JSON door
        // refuses a response citing it.
        let live = try p.collect.formList()
        #expect(live.forms.count == 1 && live.forms.first?.version == "1")
        let survey = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId)", token: f.adminToken)
        #expect(survey.json?["versions"]?.arrayValue?.count == 1)
        P.expectProblem(try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(draftId)", token: f.adminToken), .notFound)
        P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                          ResponseTests.submission("draft-json-0001", (p.v.surveyId, draftId, draftHash),
                                                                   answers: FormLogicTests.goodAnswers)), .notFound)

        // The draft door: its form list names the draft alone, the form downloads from it.
        let door = CollectClient(f, draftOf: p.v.surveyId)
        let listed = try door.formList()
        #expect(listed.reply.status == 200 && listed.reply.header("x-openrosa-version") == "1.0", "\(listed.reply.text)")
        let form = try #require(listed.forms.first)
        #expect(listed.forms.count == 1)
        #expect(form.downloadPath.hasSuffix("/drafts/\(p.v.surveyId)/form.xml"))
        let xform = try door.download(form)
        #expect(xform.status == 200)
        #expect(try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(p.v.versionId)/xform", token: f.adminToken).body != xform.body)
        #expect(try door.probe().status == 204)
        func instance(_ id: String, age: String = "41") throws -> [UInt8] {
            try CollectClient.instance(of: xform.body, instanceID: id, values: [
                ("consent", "yes"), ("household/size", "2"), ("eldest", "41"),
                ("household/people[1]/name", "Ana"), ("household/people[1]/age", age), ("household/people[1]/pregnant", "no"),
                ("household/people[1]/visits[1]/visited", "2026-10-01"),
                ("household/people[2]/name", "Leo"), ("household/people[2]/age", "6"),
            ], repeats: [("household/people", 2), ("household/people[2]/visits", 0)])
        }

        // The door's rules: 201, the replay 202, another body under the id 409 / 1004, invalid 422.
        let sent = try door.submit(try instance("uuid:draft-test-0001"))
        #expect(sent.status == 201, "\(sent.text)")
        #expect(try door.submit(try instance("uuid:draft-test-0001")).status == 202)
        let other = try door.submit(try instance("uuid:draft-test-0001", age: "42"))
        #expect(other.status == 409 && other.header("surveyd-error-code") == "1004", "\(other.text)")
        let invalid = try door.submit(try instance("uuid:draft-test-0002", age: "not a number"))
        #expect(invalid.status == 422 && invalid.header("surveyd-error-code") == "1002", "\(invalid.text)")
        // A live form sent to the draft door names no draft: 404.
        let liveToDraft = try door.submit(try p.instance("uuid:draft-test-0003"))
        #expect(liveToDraft.status == 404 && liveToDraft.header("surveyd-error-code") == "1005", "\(liveToDraft.text)")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM draft_responses") == 1)
        let withDraft = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId)", token: f.adminToken).json
        #expect(withDraft?["draft"]?["surveyVersionId"]?.stringValue == draftId && withDraft?["draft"]?["testSubmissions"] == 1)

        // No read of the live survey shows or counts it.
        #expect(try p.responses() == 0)
        #expect(try p.stored("uuid:draft-test-0001").status == 404)
        let csv = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId)/responses.csv", token: f.reviewerToken)
        #expect(csv.status == 200 && !csv.text.contains("draft-test"), "\(csv.text)")
        let odata = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId).svc/Submissions", token: f.reviewerToken)
        #expect(odata.status == 200 && odata.json?["value"]?.arrayValue?.isEmpty == true, "\(odata.text)")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM audit WHERE action = 'response.accept'") == 0)
        for token in [f.reviewerToken, f.collectorToken] {
            let changes = try f.client.get("/v1/orgs/\(f.orgId)/changes", token: token)
            #expect(changes.status == 200 && changes.json?["items"]?.arrayValue?.isEmpty == true, "\(changes.text)")
        }
        #expect(f.server.app.dispatcher.waitUntilIdle(seconds: 10))
        #expect(receiver.calls.isEmpty)

        // The same instanceID sent live is a response of its own.
        #expect(try p.collect.submit(try p.instance("uuid:draft-test-0001")).status == 201)
        #expect(try p.responses() == 1)
        #expect(receiver.wait { $0.count == 1 })

        // Published, keyed: the draft is the survey's latest version; its test submissions are gone.
        let published = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId)/draft/publish", token: f.adminToken,
                                             headers: ["Idempotency-Key": "publish-draft-0001"])
        #expect(published.status == 201, "\(published.text)")
        #expect(published.json?["number"] == 2 && published.json?["draft"] == .bool(false))
        let again = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId)/draft/publish", token: f.adminToken,
                                         headers: ["Idempotency-Key": "publish-draft-0001"])
        #expect(again.status == 200 && again.header("idempotent-replayed") == "true" && again.body == published.body, "\(again.text)")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM draft_responses") == 0)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM survey_versions WHERE draft = 1") == 0)
        let relisted = try p.collect.formList()
        #expect(relisted.forms.count == 1 && relisted.forms.first?.version == "2")
        let afterwards = try f.client.get("/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId)", token: f.adminToken).json
        #expect(afterwards?["versions"]?.arrayValue?.count == 2 && afterwards?["draft"] == nil)
        let gone = try door.formList()
        #expect(gone.reply.status == 404 && gone.reply.header("surveyd-error-code") == "1005")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM audit WHERE action = 'survey.version.publish'") == 2)
    }

    @Test func aDiscardedDraftTakesItsTestSubmissionsAndFilesWithIt() throws {
        let f = try Fixture()
        let v = try f.publishSurvey(definition: Fixture.definition)
        // Without a draft: every draft route is 404 / 1005.
        let door = CollectClient(f, draftOf: v.surveyId)
        #expect(try door.formList().reply.header("surveyd-error-code") == "1005")
        #expect(try door.probe().status == 404)
        P.expectProblem(try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(v.surveyId)/draft/publish", token: f.adminToken), .notFound)
        P.expectProblem(try f.client.request("DELETE", "/v1/orgs/\(f.orgId)/surveys/\(v.surveyId)/draft", token: f.adminToken), .notFound)

        #expect(try publishDraft(f, v.surveyId, Fixture.definition.with(title: "Photo, draft")).status == 201)
        let form = try #require(try door.formList().forms.first)
        let xform = try door.download(form).body
        let photo = Files.jpeg(5_000)
        let xml = try CollectClient.instance(of: xform, instanceID: "uuid:draft-photo-0001", values: [("size", "2"), ("photo", "p.jpg")])
        // A form sent in parts is not taken by the draft door: nothing stored.
        let split = try door.submit(xml, files: [.init(name: "p.jpg", contentType: "image/jpeg", bytes: photo)], incomplete: true)
        #expect(split.status == 400, "\(split.text)")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM draft_files") == 0)
        let sent = try door.submit(xml, files: [.init(name: "p.jpg", contentType: "image/jpeg", bytes: photo)])
        #expect(sent.status == 201, "\(sent.text)")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM draft_files") == 1)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM uploads") == 0)
        let sha = Digest.sha256Hex(photo)
        #expect(blobExists(f, sha))
        // `surveyd check` counts the draft's file as referenced, and finds it whole.
        let check = try TestEngine.check(dataDir: f.server.dataDir)
        #expect(check.ok, "\(check.violations)")

        // Replaced by a new draft: the earlier one's test submissions go with it.
        #expect(try publishDraft(f, v.surveyId, Fixture.definition.with(title: "Photo, draft 2")).status == 201)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM draft_responses") == 0)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM survey_versions WHERE draft = 1") == 1)
        #expect(!blobExists(f, sha))

        let form2 = try #require(try door.formList().forms.first)
        let xml2 = try CollectClient.instance(of: try door.download(form2).body, instanceID: "uuid:draft-photo-0002", values: [("size", "2"), ("photo", "p.jpg")])
        #expect(try door.submit(xml2, files: [.init(name: "p.jpg", contentType: "image/jpeg", bytes: photo)]).status == 201)
        let discarded = try f.client.request("DELETE", "/v1/orgs/\(f.orgId)/surveys/\(v.surveyId)/draft", token: f.adminToken)
        #expect(discarded.status == 204, "\(discarded.text)")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM draft_responses") == 0)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM draft_files") == 0)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM survey_versions WHERE draft = 1") == 0)
        #expect(!blobExists(f, sha))
        #expect(try count(f, "SELECT COUNT(*) AS n FROM audit WHERE action = 'survey.draft.discard'") == 1)
        #expect(try door.formList().reply.status == 404)
        // Only an admin: a collector's discard is 403.
        P.expectProblem(try f.client.request("DELETE", "/v1/orgs/\(f.orgId)/surveys/\(v.surveyId)/draft", token: f.collectorToken), .forbidden)
    }

    @Test func whileExpiredEveryDraftWriteIs1001AndStoresNothing() throws {
        let p = try OpenRosaTests.Published(definition: FormLogicTests.roster)
        let f = p.f
        #expect(try publishDraft(f, p.v.surveyId, FormLogicTests.roster.with(title: "Roster, draft")).status == 201)
        let door = CollectClient(f, draftOf: p.v.surveyId)
        let form = try #require(try door.formList().forms.first)
        let xform = try door.download(form).body
        let xml = try CollectClient.instance(of: xform, instanceID: "uuid:draft-gate-0001", values: [
            ("consent", "yes"), ("household/size", "1"), ("eldest", "41"),
            ("household/people[1]/name", "Ana"), ("household/people[1]/age", "41"), ("household/people[1]/pregnant", "no"),
        ], repeats: [("household/people", 1), ("household/people[1]/visits", 0)])
        func traces() throws -> [Int64] {
            try ["draft_responses", "survey_versions", "audit WHERE action <> 'subscription.set'", "idempotency_keys"]
                .map { try count(f, "SELECT COUNT(*) AS n FROM \($0)") }
        }
        try f.expire()
        let before = try traces()
        let refused = try door.submit(xml)
        #expect(refused.header("surveyd-error-code") == "1001", "\(refused.text)")
        P.expectProblem(try publishDraft(f, p.v.surveyId, FormLogicTests.roster.with(title: "Roster, draft 2")), .subscriptionExpired)
        P.expectProblem(try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId)/draft/publish", token: f.adminToken,
                                             headers: ["Idempotency-Key": "publish-draft-gate-1"]), .subscriptionExpired)
        P.expectProblem(try f.client.request("DELETE", "/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId)/draft", token: f.adminToken),
                        .subscriptionExpired)
        #expect(try traces() == before)

        // Renewed: the same request succeeds, once.
        try f.renew()
        #expect(try door.submit(xml).status == 201)
        #expect(try door.submit(xml).status == 202)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM draft_responses") == 1)
        let published = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(p.v.surveyId)/draft/publish", token: f.adminToken,
                                             headers: ["Idempotency-Key": "publish-draft-gate-1"])
        #expect(published.status == 201, "\(published.text)")
    }

    @Test func aDraftSubmissionCreatesNoEntityUntilTheFormIsPublished() throws {
        let f = try Fixture()
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Registration"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        let draft = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions?draft=true", token: f.adminToken,
                                         body: try FormPublishingTests.bytes("household_registration.xlsx"),
                                         headers: ["Content-Type": FormPublishingTests.xlsx])
        #expect(draft.status == 201 && draft.json?["draft"] == .bool(true), "\(draft.text)")
        #expect(try CollectClient(f).formList().forms.isEmpty)
        let door = CollectClient(f, draftOf: surveyId)
        let form = try #require(try door.formList().forms.first)
        #expect(form.formID == "household_registration")
        let xml = try CollectClient.instance(of: try door.download(form).body, instanceID: "uuid:draft-entity-0001",
                                             values: [("head_name", "Ana"), ("member_count", "3"), ("village_name", "Kisumu")])
        let document = try XMLDocument(data: Data(xml))
        let entity = try #require(try document.nodes(forXPath: "/*/*[local-name()='meta']/*[local-name()='entity']").first as? XMLElement)
        entity.removeAttribute(forName: "id")
        entity.addAttribute(try #require(XMLNode.attribute(withName: "id", stringValue: EntityListTests.household) as? XMLNode))
        let sent = try door.submit(Array(document.xmlData))
        #expect(sent.status == 201, "\(sent.text)")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM entities") == 0)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM entity_versions") == 0)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM entity_lists") == 0)

        let published = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/draft/publish", token: f.adminToken)
        #expect(published.status == 201 && published.json?["number"] == 1, "\(published.text)")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM entity_lists") == 1)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM entities") == 0)
        #expect(try CollectClient(f).formList().forms.first?.formID == "household_registration")
        // The instance sent to the draft is a new submission live, and makes its entity.
        let live = try CollectClient(f).submit(Array(document.xmlData))
        #expect(live.status == 201, "\(live.text)")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM entities") == 1)
    }

    @Test func theSurveyPageShowsTheDraftWithItsDoorCodeAndCountAndPublishesOrDiscardsIt() throws {
        let p = try OpenRosaTests.Published(definition: FormLogicTests.roster)
        let f = p.f
        let admin = try ConsoleAdminTests.Session(f, token: f.adminToken)
        let page = "/console/orgs/\(f.orgId)/surveys/\(p.v.surveyId)"
        #expect(try !admin.get(page).text.contains("id=\"draft\""))

        // Published as draft from the console's publishing form.
        let published = try admin.upload(page + "/versions", file: CanonicalJSON.encode(FormLogicTests.roster.with(title: "Roster, draft")),
                                         fileName: "roster.json", fields: ["draft": "yes"])
        #expect(published.status == 303 && published.header("location")?.hasSuffix("done=draft") == true, "\(published.status) \(published.text.prefix(500))")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM survey_versions WHERE draft = 1") == 1)
        #expect(try p.collect.formList().forms.count == 1)

        let shown = try admin.get(page).text
        #expect(shown.contains("id=\"draft\"") && shown.contains("0 test submissions"), "\(shown.prefix(3000))")
        #expect(shown.contains("/v1/key/{app token}/orgs/\(f.orgId)/drafts/\(p.v.surveyId)"))

        // The test phone's code: a new app token of the collector, the draft door in Collect's settings.
        let code = try admin.post(page + "/draft/code", ["userId": f.collectorId])
        #expect(code.status == 200, "\(code.status)")
        #expect(code.text.contains("<svg") && code.text.contains("QR code of the draft"), "\(code.text.prefix(3000))")
        // The URL with the new token (the card's), not the one with its placeholder.
        let url = try #require(code.text.range(of: #"/v1/key/[^/{<"]+/orgs/[^/]+/drafts/"# + p.v.surveyId, options: .regularExpression)
            .map { String(code.text[$0]) })
        let token = try #require(url.components(separatedBy: "/").dropFirst(3).first)
        let door = CollectClient(f, token: token, draftOf: p.v.surveyId)
        let form = try #require(try door.formList().forms.first)
        let xml = try CollectClient.instance(of: try door.download(form).body, instanceID: "uuid:draft-console-0001", values: [
            ("consent", "yes"), ("household/size", "1"), ("eldest", "41"),
            ("household/people[1]/name", "Ana"), ("household/people[1]/age", "41"), ("household/people[1]/pregnant", "no"),
        ], repeats: [("household/people", 1), ("household/people[1]/visits", 0)])
        #expect(try door.submit(xml).status == 201)
        #expect(try admin.get(page).text.contains("1 test submission"))
        // A user who is not a collector gets no token.
        let tokens = try count(f, "SELECT COUNT(*) AS n FROM tokens")
        let reviewerId = try #require(try f.server.rows("SELECT user_id FROM users WHERE org_id = ? AND name = 'Rae'", [.text(f.orgId)]).first)
            .string("user_id")
        #expect(try admin.post(page + "/draft/code", ["userId": reviewerId]).status == 422)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM tokens") == tokens)

        // Published from the page: the latest version, the test submissions gone.
        let done = try admin.post(page + "/draft/publish", [:])
        #expect(done.status == 303 && done.header("location")?.hasSuffix("done=draftPublished") == true, "\(done.status)")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM draft_responses") == 0)
        #expect(try p.collect.formList().forms.first?.version == "2")
        let after = try admin.get(page + "?done=draftPublished").text
        #expect(!after.contains("id=\"draft\"") && after.contains("its test submissions are deleted"))
        let none = try admin.post(page + "/draft/discard", [:])
        #expect(none.status == 404 && none.text.contains("has no draft"), "\(none.status)")

        // Discarded from the page.
        #expect(try publishDraft(f, p.v.surveyId, FormLogicTests.roster.with(title: "Roster, third")).status == 201)
        let discarded = try admin.post(page + "/draft/discard", [:])
        #expect(discarded.status == 303 && discarded.header("location")?.hasSuffix("done=draftDiscarded") == true)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM survey_versions WHERE draft = 1") == 0)
    }

    /// A draft's form id is checked when it is published as well: another survey may have
    /// published that id since (a form id names one survey, apps know a form by it alone).
    @Test func publishingADraftWhoseFormIdAnotherSurveyTookMeanwhileIs422AndChangesNothing() throws {
        let f = try Fixture()
        func survey(_ title: String) throws -> String {
            try #require(try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": .string(title)]).json?["surveyId"]?.stringValue)
        }
        let a = try survey("A"), b = try survey("B")
        var definition = Fixture.definition
        if case .object(var members) = definition { members["formId"] = "shared_form"; definition = .object(members) }
        #expect(try publishDraft(f, a, definition).status == 201)
        let live = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(b)/versions", token: f.adminToken, ["definition": definition])
        #expect(live.status == 201, "\(live.text)")
        let refused = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(a)/draft/publish", token: f.adminToken)
        P.expectProblem(refused, .validationFailed)
        #expect(refused.text.contains("shared_form"), "\(refused.text)")
        #expect(try count(f, "SELECT COUNT(*) AS n FROM survey_versions WHERE draft = 1") == 1)
        #expect(try count(f, "SELECT COUNT(*) AS n FROM survey_versions WHERE survey_id = '\(a)' AND draft = 0") == 0)
    }

    /// A draft published with the files its form names serves them through the draft door's
    /// manifest, and its published version keeps them.
    @Test func aDraftWithFilesServesItsManifestAndMediaAndItsPublishedVersionKeepsThem() throws {
        let f = try Fixture()
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Village visit"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        let (body, contentType) = FormAttachmentTests.multipart([FormAttachmentTests.form()] + FormAttachmentTests.allFiles)
        let draft = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions?draft=true", token: f.adminToken, body: body,
                                         headers: ["Content-Type": contentType])
        #expect(draft.status == 201 && draft.json?["draft"] == .bool(true), "\(draft.text)")
        #expect(draft.json?["attachments"]?.arrayValue?.count == 3)
        #expect(try CollectClient(f).formList().forms.isEmpty)

        let door = CollectClient(f, draftOf: surveyId)
        let form = try #require(try door.formList().forms.first)
        #expect(form.manifestURL?.contains("/drafts/\(surveyId)/manifest") == true)
        let media = try door.mediaFiles(form)
        #expect(Dictionary(media.map { ($0.name, $0.bytes) }, uniquingKeysWith: { a, _ in a }) == [
            "villages.csv": FormAttachmentTests.villages, "crops.csv": FormAttachmentTests.crops, "map.png": FormAttachmentTests.map,
        ])
        let missing = try f.client.request("GET", try #require(URL(string: form.downloadURL)).path.replacingOccurrences(of: "form.xml", with: "attachments/nope.csv"),
                                           headers: CollectClient.headers)
        #expect(missing.status == 404)

        let published = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/draft/publish", token: f.adminToken)
        #expect(published.status == 201, "\(published.text)")
        #expect(published.json?["attachments"] == draft.json?["attachments"])
        let live = try #require(try CollectClient(f).formList().forms.first)
        #expect(try CollectClient(f).mediaFiles(live).count == 3)
        #expect(try TestEngine.check(dataDir: f.server.dataDir).ok)
    }
}
