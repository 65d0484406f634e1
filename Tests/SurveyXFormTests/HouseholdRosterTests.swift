import Foundation
import SurveyForms
import Testing
@testable import SurveyXForm

/// The XForms pyxform 4.5.0 wrote from the XLSForms of Fixtures/make_xforms.py.
enum Fixture {
    static func bytes(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name).xml")
        return Array(try Data(contentsOf: url))
    }
}

extension JSONValue {
    /// The node with this id, anywhere in a definition's tree.
    func node(_ id: String) -> JSONValue? {
        var stack = (self["questions"]?.arrayValue ?? []).reversed() as [JSONValue]
        while let n = stack.popLast() {
            if n["id"]?.stringValue == id { return n }
            stack += (n["children"]?.arrayValue ?? []).reversed()
        }
        return nil
    }
}

@Suite struct HouseholdRosterTests {
    let definition: JSONValue

    init() throws {
        definition = try XFormReader.definition(from: try Fixture.bytes("household"))
    }

    @Test func parsesAsADefinitionWithTitleFormIdAndLanguages() throws {
        let parsed = try SurveyDefinition.parse(definition)
        #expect(parsed.title == "Household roster")
        #expect(parsed.formId == "household_roster")
        #expect(parsed.defaultLanguage == "English (en)")
        #expect(Set(parsed.languages) == ["English (en)", "Français (fr)"])
        #expect(parsed.nodes.map(\.id) == ["welcome", "consent", "visit_date", "location", "household", "assets", "income", "house_photo"])
        #expect(definition.node("instanceID") == nil && definition.node("meta") == nil)
    }

    @Test func typesFollowTheBindsAndControls() {
        let expected: [String: String] = [
            "welcome": "note", "consent": "select_one", "visit_date": "date", "location": "geopoint", "household": "group",
            "region": "select_one", "district": "select_one", "size": "integer", "people": "repeat", "name": "text", "age": "integer",
            "phones": "repeat", "number": "text", "members": "calculate", "eldest": "calculate", "assets": "select_multiple",
            "income": "decimal", "house_photo": "file",
        ]
        for (id, type) in expected { #expect(definition.node(id)?["type"]?.stringValue == type, "\(id)") }
        #expect(definition.node("house_photo")?["accept"] == ["image/*"])
        #expect(definition.node("assets")?["appearance"] == "minimal")
    }

    @Test func repeatsNestWithTheirCount() {
        let people = definition.node("people")
        #expect(people?["repeatCount"] == "${size}")
        #expect(people?["label"] == ["English (en)": "Person", "Français (fr)": "Personne"])
        let children = people?["children"]?.arrayValue?.compactMap { $0["id"]?.stringValue }
        #expect(children == ["name", "age", "school", "birth_region", "birth_district", "phones"])
        #expect(definition.node("phones")?["children"]?.arrayValue?.first?["id"] == "number")
    }

    @Test func logicReadsInTheDefinitionSyntax() {
        #expect(definition.node("household")?["relevant"] == "${consent} = 'yes'")
        #expect(definition.node("school")?["relevant"] == "${age} >= 5 and ${age} <= 18")
        #expect(definition.node("size")?["constraint"] == ". >= 1 and . <= 30")
        #expect(definition.node("size")?["constraintMessage"] == ["English (en)": "Between 1 and 30 people", "Français (fr)": "Entre 1 et 30 personnes"])
        #expect(definition.node("size")?["required"] == true)
        #expect(definition.node("size")?["hint"] == ["English (en)": "Everyone who slept here last night", "Français (fr)": "Tous ceux qui ont dormi ici"])
        #expect(definition.node("visit_date")?["constraint"] == ". <= today()")
        #expect(definition.node("number")?["constraint"] == "regex(., '[0-9]{8,12}')")
        #expect(definition.node("members")?["calculation"] == "count(${people})")
        #expect(definition.node("eldest")?["calculation"] == "max(${age})")
        #expect(definition.node("income")?["relevant"] == "selected(${assets}, 'car')")
        #expect(definition.node("welcome")?["readonly"] == nil)
        #expect(definition.node("welcome")?["label"] == ["English (en)": "Thank you for your time", "Français (fr)": "Merci de votre temps"])
    }

    @Test func choiceListsKeepTheirColumnsAndFilters() {
        #expect(definition.node("district")?["choiceList"] == "districts")
        #expect(definition.node("district")?["choiceFilter"] == "region=${region}")
        #expect(definition.node("birth_district")?["choiceFilter"] == "region=${birth_region}")
        #expect(definition["choiceLists"]?["districts"]?.arrayValue?.first == [
            "name": "d1", "label": ["English (en)": "Lakeside", "Français (fr)": "Bord du lac"], "region": "north",
        ])
        #expect(definition["choiceLists"]?["yesno"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["yes", "no"])
        #expect(definition.node("school")?["choiceList"] == "yesno")
    }

    @Test func theDefinitionChecksAnswers() throws {
        let parsed = try SurveyDefinition.parse(definition)
        let good: JSONValue = [
            "consent": "yes", "visit_date": "2026-01-05", "region": "north", "district": "d2", "size": 1,
            "people": [["name": "Ana", "age": 41, "birth_region": "south", "birth_district": "d3"]],
        ]
        #expect(parsed.validate(answers: good).errors == [])
        let filteredOut: JSONValue = ["consent": "yes", "visit_date": "2026-01-05", "region": "south", "district": "d1", "size": 1,
                                      "people": [["name": "Ana"]]]
        #expect(parsed.validate(answers: filteredOut).errors.map(\.path) == ["answers.district"])
    }
}
