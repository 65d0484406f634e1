import SurveyForms
import Testing
@testable import SurveyXForm

/// ODK entities as pyxform 4.5.0 writes them (Fixtures/make_entity_forms.py) read into the
/// definition's `entity`: the list, when the form creates or updates, the label, and which
/// answer is saved to which property.
@Suite struct EntityDeclarationTests {
    @Test func aRegistrationFormDeclaresItsList() throws {
        let definition = try XFormReader.definition(from: try Fixture.bytes("household_registration"))
        let entity = try #require(definition["entity"])
        #expect(entity == ["list": "households", "create": true, "id": "uuid()", "label": "concat('Household of ', ${head_name})",
                           "saveTo": ["head_name": "head", "member_count": "members", "village_name": "village"],
                           "specVersion": "2024.1.0"])
        let parsed = try SurveyDefinition.parse(definition)
        #expect(parsed.entity?.properties == ["head", "members", "village"])
        #expect(parsed.entity?.create == .always && parsed.entity?.update == .never)
        // meta is the device's bookkeeping, not a question.
        #expect(parsed.questions.map(\.id) == ["head_name", "member_count", "village_name"])
    }

    @Test func aFollowUpFormReadsTheListItUpdates() throws {
        let definition = try XFormReader.definition(from: try Fixture.bytes("household_visit"))
        #expect(definition["entity"] == ["list": "households", "update": true, "id": "${household}",
                                         "label": "concat('Household of ', ${members_now}, ' people')",
                                         "saveTo": ["members_now": "members"], "specVersion": "2024.1.0"])
        // The list's file is served from its entities, not published with the version.
        #expect(definition.node("household")?["choiceList"] == "households.csv")
        #expect(FormAttachments.named(in: definition).isEmpty)
        // Any entity id is an answer: one created offline may not have reached the server yet.
        let parsed = try SurveyDefinition.parse(definition)
        #expect(parsed.validate(answers: ["household": "4b1c2d3e-0000-4000-8000-000000000001", "members_now": 3]).errors.isEmpty)
    }

    /// A follow-up form without a label on its entities sheet: its updates keep the entity's label.
    @Test func aFollowUpFormWithoutALabelDeclaresNone() throws {
        let definition = try XFormReader.definition(from: try Fixture.bytes("household_move"))
        #expect(definition["entity"] == ["list": "households", "update": true, "id": "${household}",
                                         "saveTo": ["village_now": "village"], "specVersion": "2024.1.0"])
        #expect(definition.node("household")?["choiceList"] == "households.csv")
    }

    @Test func whatSurveydDoesNotReadIsNamed() throws {
        func refusal(_ entity: String, binds: String = "", root: String = "") -> String? {
            let xml = XFormDocument.make(instance: "<a/><meta>\(entity)</meta>", binds: binds,
                                         body: "<input ref=\"/data/a\"><label>A</label></input>", root: root)
            do { _ = try XFormReader.definition(from: Array(xml.utf8)); return nil } catch { return error.message }
        }
        #expect(refusal(#"<entity dataset="1bad" create="1" id=""/>"#) == #"meta/entity's dataset="1bad" is not an entity list's name (an XML name)"#)
        #expect(refusal(#"<entity dataset="trees" create="1" id="" colour="red"/>"#) == #"meta/entity has colour="red", which surveyd does not read"#)
        #expect(refusal(#"<entity dataset="trees" create="1" id=""/>"#, binds: #"<bind nodeset="/data/a" type="string" entities:saveto="__version"/>"#)
                == #"the bind of /data/a saves to "__version", which is not a property name (an XML name, not name, label or __…)"#)
        let inGroup = XFormDocument.make(instance: #"<g><a/><meta><entity dataset="trees" create="1" id=""/></meta></g>"#, binds: "",
                                         body: #"<group ref="/data/g"><input ref="/data/g/a"><label>A</label></input></group>"#)
        do { _ = try XFormReader.definition(from: Array(inGroup.utf8)); Issue.record("accepted") } catch {
            #expect(error.message.contains("surveyd reads one entity per form, in the top-level meta") || error.message.contains("meta"), "\(error.message)")
        }
    }

    @Test func aJSONDefinitionsEntityIsChecked() throws {
        let base: JSONValue = ["title": "T", "questions": [["id": "a", "type": "text", "label": "A"]]]
        func errors(_ entity: JSONValue) -> [String] {
            var o = base.objectValue ?? [:]
            o["entity"] = entity
            do { _ = try SurveyDefinition.parse(.object(o)); return [] } catch { return error.errors.map(\.description) }
        }
        #expect(errors(["list": "trees", "create": true, "saveTo": ["a": "species"]]).isEmpty)
        #expect(errors(["list": "trees"]) == ["definition.entity.create: a form with an entity creates or updates it: give create or update"])
        #expect(errors(["list": "trees", "create": true, "saveTo": ["b": "species"]]) == ["definition.entity.saveTo.b: names no question outside repeats"])
        #expect(errors(["list": "trees", "update": true, "saveTo": ["a": "label"]])
                == ["definition.entity.saveTo.a: must be a property name: an XML name, not name, label or one starting with __"])
    }
}
