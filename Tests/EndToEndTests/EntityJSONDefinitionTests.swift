import Foundation
import FoundationXML
import SurveyDomain
import SurveyStorage
import Testing

/// A form with entities published as a JSON definition reaches ODK Collect as an XForm surveyd
/// writes of it, entity block included (as pyxform writes one): ODK Validate accepts it, and the
/// instances Collect fills from it create and then update the entity like those of an XLSForm.
@Suite struct EntityJSONDefinitionTests {
    static let registration: JSONValue = [
        "title": "Water point", "formId": "water_point",
        "questions": [
            ["id": "site", "type": "text", "label": "Site name", "required": true],
            ["id": "depth", "type": "integer", "label": "Depth (m)"],
        ],
        "entity": ["list": "water_points", "create": true, "label": "concat('Point ', ${site})", "saveTo": ["site": "site", "depth": "depth"]],
    ]
    static let inspection: JSONValue = [
        "title": "Water point inspection", "formId": "water_point_inspection",
        "questions": [
            ["id": "point", "type": "select_one", "label": "Which point?", "choiceList": "water_points.csv", "required": true],
            ["id": "depth_now", "type": "integer", "label": "Depth now (m)"],
        ],
        "entity": ["list": "water_points", "update": true, "id": "${point}", "saveTo": ["depth_now": "depth"], "specVersion": "2024.1.0"],
    ]

    /// The version's XForm as the OpenRosa door serves it.
    func xform(_ f: Fixture, _ versionId: String) throws -> [UInt8] {
        let x = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(versionId)/xform", token: f.collectorToken)
        #expect(x.status == 200, "\(x.text)")
        return x.body
    }

    /// The instance Collect writes: the answers, and `meta/entity` with what the form's binds computed.
    func instance(_ xform: [UInt8], _ instanceID: String, values: [(String, String)], entity: [String: String]) throws -> [UInt8] {
        let xml = try CollectClient.instance(of: xform, instanceID: instanceID, values: values)
        let document = try XMLDocument(data: Data(xml))
        let e = try #require(try document.nodes(forXPath: "/*/*[local-name()='meta']/*[local-name()='entity']").first as? XMLElement)
        for (name, value) in entity {
            e.removeAttribute(forName: name)
            e.addAttribute(XMLNode.attribute(withName: name, stringValue: value) as! XMLNode)
        }
        return Array(document.xmlData)
    }

    @Test func aJSONDefinitionsEntityIsWrittenIntoItsXFormAndWorksFromCollect() throws {
        let f = try Fixture()
        let made = try f.publishSurvey(definition: Self.registration)
        let follow = try f.publishSurvey(definition: Self.inspection)
        let registering = try xform(f, made.versionId), inspecting = try xform(f, follow.versionId)
        let text = String(decoding: registering, as: UTF8.self)
        #expect(text.contains(#"<entity dataset="water_points" create="1" id="">"#) && text.contains("<label/>"), "\(text)")
        #expect(text.contains(#"entities:saveto="depth""#) && text.contains(#"entities:entities-version="2024.1.0""#))
        #expect(text.contains(#"<setvalue ref="/data/meta/entity/@id" event="odk-instance-first-load" value="uuid()"/>"#))
        let served = String(decoding: inspecting, as: UTF8.self).replacingOccurrences(of: " ", with: "")
        #expect(served.contains("calculate=\"instance('water_points')/root/item[name=/data/point]/__version\"")
                && served.contains(#"<instanceid="water_points"src="jr://file-csv/water_points.csv"/>"#), "\(served)")
        try ODKValidate.accept(registering, label: "a JSON definition that creates an entity")
        try ODKValidate.accept(inspecting, label: "a JSON definition that updates an entity")

        // Collect's instances: the registration creates the entity, the inspection updates it.
        let collect = CollectClient(f)
        let id = "5f0c2b0e-7d1a-4c3e-9a51-0b9f5d1e2a01"
        let created = try collect.submit(try instance(registering, "uuid:wp-reg-0001", values: [("site", "North well"), ("depth", "12")],
                                                      entity: ["id": id, "create": "1"]))
        #expect(created.status == 201, "\(created.text)")
        let updated = try collect.submit(try instance(inspecting, "uuid:wp-insp-0001", values: [("point", id), ("depth_now", "9")],
                                                      entity: ["id": id, "update": "1", "baseVersion": "1"]))
        #expect(updated.status == 201, "\(updated.text)")
        let rows = try f.server.rows("SELECT version, properties FROM entities WHERE entity_id = ?", [.text(id)])
        let version = try rows.first?.int("version")
        #expect(rows.count == 1 && version == 2, "\(rows)")
        let properties = try JSONParser.parse(Array((try rows.first?.string("properties") ?? "").utf8))
        #expect(properties["depth"] == "9" && properties["site"] == "North well", "\(properties)")
    }
}
