import Foundation
import Testing
import SurveyDomain

/// Two nodes of one name in different groups (`boys/count`, `girls/count`), as real forms write
/// them: the XLSForm publishes, each node's id is its path below the root (`boys_count`), the
/// XForm and the instances Collect sends keep the form's own names, and the definition says so
/// with `name`.
@Suite struct SharedNodeNameTests {
    static let form = RealFormsCorpusTests.corpus.appendingPathComponent("surveys/repeated_names.xlsx")

    func survey(_ f: Fixture, _ title: String = "Class count") throws -> String {
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": .string(title)])
        return try #require(s.json?["surveyId"]?.stringValue)
    }

    func publish(_ f: Fixture, _ surveyId: String, _ body: [UInt8], _ contentType: String) throws -> Reply {
        try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, body: body,
                             headers: ["Content-Type": contentType])
    }

    @Test func anXLSFormNamingANodeInTwoGroupsPublishesAndCollectsBoth() throws {
        let f = try Fixture()
        let id = try survey(f)
        let published = try publish(f, id, [UInt8](try Data(contentsOf: Self.form)), FormPublishingTests.xlsx)
        #expect(published.status == 201, "\(published.text)")
        let questions = try #require(published.json?["definition"]?["questions"]?.arrayValue)
        #expect(questions.map { $0["id"]?.stringValue } == ["boys", "girls"])
        let counts = questions.map { $0["children"]?.arrayValue?.first }
        #expect(counts.map { $0?["id"]?.stringValue } == ["boys_count", "girls_count"])
        #expect(counts.map { $0?["name"]?.stringValue } == ["count", "count"])
        // A node whose name is its own keeps no `name`.
        #expect(questions[0]["name"] == nil)

        let c = CollectClient(f)
        let form = try #require(try c.formList().forms.first)
        let xform = try c.download(form).body
        try ODKValidate.accept(xform, label: "repeated_names.xlsx as the OpenRosa door serves it")
        let instance = try CollectClient.instance(of: xform, instanceID: "uuid:shared-name-1", values: [("boys/count", "12"), ("girls/count", "14")])
        let r = try c.submit(instance)
        #expect(r.status == 201, "\(r.text)")
        let stored = try f.client.get("/v1/orgs/\(f.orgId)/responses?clientSubmissionId=uuid:shared-name-1", token: f.collectorToken)
        #expect(stored.json?["answers"] == ["boys_count": 12, "girls_count": 14], "\(stored.text)")

        // The girls' count missing: refused at that node, by its id, and nothing stored.
        let missing = try CollectClient.instance(of: xform, instanceID: "uuid:shared-name-2", values: [("boys/count", "12")])
        let refused = try c.submit(missing)
        #expect(refused.status == 422, "\(refused.text)")
        #expect(OpenRosaTests.message(refused).contains("girls_count"), "\(refused.text)")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses") == 1)
    }

    /// The same shape written as JSON: `name` gives both the element `count`; the served XForm
    /// read back is the same definition, ids and all.
    static let definition: JSONValue = [
        "title": "Class count", "formId": "class_count_json",
        "questions": [
            ["type": "group", "id": "boys", "label": "Boys", "children": [
                ["type": "integer", "id": "boys_total", "name": "count", "label": "How many boys?", "required": true],
            ]],
            ["type": "group", "id": "girls", "label": "Girls", "children": [
                ["type": "integer", "id": "girls_total", "name": "count", "label": "How many girls?", "required": true],
            ]],
            ["type": "text", "id": "why_so_many", "label": "Why so many pupils?", "required": true,
             "relevant": "${boys_total} + ${girls_total} > 40"],
        ],
    ]

    @Test func aJSONDefinitionNamesElementsAndItsXFormReadsBackTheSame() throws {
        let f = try Fixture()
        let id = try survey(f)
        let json = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(id)/versions", token: f.adminToken, ["definition": Self.definition])
        #expect(json.status == 201, "\(json.text)")
        let versionId = try #require(json.json?["surveyVersionId"]?.stringValue)
        let xform = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(versionId)/xform", token: f.adminToken).body
        let text = String(decoding: xform, as: UTF8.self)
        #expect(text.contains("/data/boys/count") && text.contains("/data/girls/count") && !text.contains("<boys_total"), "\(text)")
        #expect(text.contains("surveyd:id=\"boys_total\""), "\(text)")
        try ODKValidate.accept(xform, label: "a JSON definition naming two nodes count")

        let back = try publish(f, id, xform, "application/xml")
        #expect(back.status == 201, "\(back.text)")
        #expect(back.json?["contentHash"] == json.json?["contentHash"], "\(back.text)")

        // Collect's instances: the relevance reads both counts by their ids.
        let c = CollectClient(f)
        let small = try CollectClient.instance(of: xform, instanceID: "uuid:shared-name-3", values: [("boys/count", "3"), ("girls/count", "4")])
        let r = try c.submit(small)
        #expect(r.status == 201, "\(r.text)")
        let stored = try f.client.get("/v1/orgs/\(f.orgId)/responses?clientSubmissionId=uuid:shared-name-3", token: f.collectorToken)
        #expect(stored.json?["answers"] == ["boys_total": 3, "girls_total": 4], "\(stored.text)")
        let large = try CollectClient.instance(of: xform, instanceID: "uuid:shared-name-4", values: [("boys/count", "30"), ("girls/count", "24")])
        let refused = try c.submit(large)
        #expect(refused.status == 422 && OpenRosaTests.message(refused).contains("why_so_many"), "\(refused.text)")
    }

    @Test func twoNodesOfOneGroupNamingTheSameElementAreRefusedByPath() throws {
        let f = try Fixture()
        let id = try survey(f)
        let clash: JSONValue = [
            "title": "Clash",
            "questions": [
                ["type": "integer", "id": "a", "name": "count", "label": "A"],
                ["type": "integer", "id": "count", "label": "B"],
                ["type": "integer", "id": "c", "name": "not a name", "label": "C"],
            ],
        ]
        let r = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(id)/versions", token: f.adminToken, ["definition": clash])
        #expect(r.status == 422, "\(r.text)")
        let paths = Set(r.json?["errors"]?.arrayValue?.compactMap { $0["path"]?.stringValue } ?? [])
        #expect(paths == ["definition.questions[1].name", "definition.questions[2].name"], "\(r.text)")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM survey_versions") == 0)
    }
}
