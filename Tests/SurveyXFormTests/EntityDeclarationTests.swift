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

    /// Entities 2025.1: a household at the root and one member per repeat instance, to two lists.
    @Test func aRosterDeclaresAnEntityAtItsRootAndOneInItsRepeat() throws {
        let definition = try XFormReader.definition(from: try Fixture.bytes("household_roster"))
        #expect(definition["entity"] == nil)
        #expect(definition["entities"] == [
            ["list": "households", "create": true, "id": "uuid()", "label": "concat('Household of ', ${head_name})",
             "saveTo": ["head_name": "head", "village_name": "village"], "specVersion": "2025.1.0"],
            ["list": "members", "create": true, "id": "uuid()", "label": "${member_name}",
             "saveTo": ["member_name": "full_name", "member_age": "age"], "specVersion": "2025.1.0", "container": "member"],
        ])
        let parsed = try SurveyDefinition.parse(definition)
        #expect(parsed.entities.map(\.container) == [nil, "member"])
        #expect(parsed.entity?.list == "households")
        #expect(parsed.repeatHolding("member") == "member")
        // A repeat's meta is the device's bookkeeping too: no question of it.
        #expect(parsed.question(id: "meta") == nil && parsed.question(id: "entity") == nil)
    }

    @Test func aFollowUpUpdatesAnEntityPerRepeatInstanceAndReadsItsList() throws {
        let definition = try XFormReader.definition(from: try Fixture.bytes("member_visit"))
        #expect(definition["entities"] == [
            ["list": "members", "update": true, "id": "${member}", "saveTo": ["age_now": "age"], "specVersion": "2025.1.0", "container": "checkup"],
        ])
        let parsed = try SurveyDefinition.parse(definition)
        #expect(parsed.entityListsRead == ["members"])
        #expect(FormAttachments.named(in: definition).isEmpty)
    }

    /// A submitted roster: each repeat instance's meta/entity, in document order, and no answer of it.
    @Test func aSubmittedInstanceCarriesEachRepeatInstancesEntity() throws {
        let parsed = try SurveyDefinition.parse(try XFormReader.definition(from: try Fixture.bytes("household_roster")))
        let xml = """
            <data id="household_roster" version="1"><head_name>Ada</head_name><village_name/>\
            <member><member_name>Ada</member_name><member_age>41</member_age><meta><entity dataset="members" create="1" id="m-000001"><label>Ada</label></entity></meta></member>\
            <member><member_name>Bo</member_name><member_age/><meta><entity dataset="members" create="1" id="m-000002"><label>Bo</label></entity></meta></member>\
            <meta><entity dataset="households" create="1" id="h-000001"><label>Household of Ada</label></entity><instanceID>uuid:x-0001</instanceID></meta></data>
            """
        let instance = try SubmittedInstance(xml: Array(xml.utf8))
        #expect(instance.entity?["id"] == "h-000001")
        #expect(instance.entities(for: parsed) == [
            ["dataset": "members", "create": true, "id": "m-000001", "label": "Ada", "container": "member", "index": 0],
            ["dataset": "members", "create": true, "id": "m-000002", "label": "Bo", "container": "member", "index": 1],
        ])
        let answers = instance.answers(for: parsed) { $0 }.answers
        #expect(answers == ["head_name": "Ada", "member": [["member_name": "Ada", "member_age": 41], ["member_name": "Bo"]]])
        #expect(parsed.validate(answers: answers).errors.isEmpty)
        // In a form that declares no entity there, such a meta is an answer of no node: refused by name.
        let plain = try SurveyDefinition.parse(try XFormReader.definition(from: try Fixture.bytes("household_registration")))
        let stray = try SubmittedInstance(xml: Array("""
            <data id="household_registration" version="1"><head_name>Ada</head_name><member_count>2</member_count>\
            <meta><instanceID>uuid:x-0002</instanceID></meta><extra><meta><entity dataset="x" create="1" id="m-000003"/></meta></extra></data>
            """.utf8))
        #expect(stray.entities(for: plain).isEmpty)
        #expect(!plain.validate(answers: stray.answers(for: plain) { $0 }.answers).errors.isEmpty)
    }

    @Test func whereADefinitionsEntitiesSitIsChecked() throws {
        let questions: JSONValue = [
            ["id": "a", "type": "text", "label": "A"],
            ["id": "g", "type": "group", "label": "G", "children": [["id": "b", "type": "text", "label": "B"]]],
            ["id": "r", "type": "repeat", "label": "R", "children": [
                ["id": "c", "type": "text", "label": "C"],
                ["id": "inner", "type": "repeat", "label": "I", "children": [["id": "d", "type": "text", "label": "D"]]],
            ]],
        ]
        func errors(_ members: [String: JSONValue]) -> [String] {
            var o: [String: JSONValue] = ["title": "T", "questions": questions]
            for (k, v) in members { o[k] = v }
            do { _ = try SurveyDefinition.parse(.object(o)); return [] } catch { return error.errors.map(\.description) }
        }
        let root: JSONValue = ["list": "households", "create": true, "saveTo": ["a": "head", "b": "village"]]
        let member: JSONValue = ["list": "members", "create": true, "saveTo": ["c": "name_given"], "container": "r"]
        #expect(errors(["entities": [root, member]]).isEmpty)
        #expect(errors(["entity": root, "entities": [member]]).first?.hasPrefix("definition.entities: ") == true)
        #expect(errors(["entity": member]) == ["definition.entity.container: the entity of `entity` is the form's root's; an entity of a group or repeat goes in `entities`"])
        #expect(errors(["entities": [member, member]]) == ["definition.entities[1].container: another entity of the form is declared in r: one entity per group or repeat"])
        #expect(errors(["entities": [["list": "m", "create": true, "container": "c"]]]) == ["definition.entities[0].container: names no group or repeat of the form"])
        #expect(errors(["entities": [["list": "m", "create": true, "container": "inner"]]])
                == ["definition.entities[0].container: inner is inside a repeat inside a repeat: surveyd reads entities of groups and repeats inside one repeat at most"])
        // Saved questions are the container's own, not those of a repeat nested in it nor outside it.
        #expect(errors(["entities": [["list": "m", "create": true, "container": "r", "saveTo": ["d": "x", "a": "y"]]]])
                == ["definition.entities[0].saveTo.a: names no question of r (outside repeats nested in it)",
                    "definition.entities[0].saveTo.d: names no question of r (outside repeats nested in it)"])
        #expect(errors(["entities": [["list": "m", "create": true, "container": "g", "saveTo": ["b": "x"]]]]).isEmpty)
        // One list in two places is two declarations; the root's stays `entity` when alone.
        #expect(errors(["entities": [["list": "m", "create": true, "container": "g"], ["list": "m", "create": true, "container": "r"]]]).isEmpty)
        #expect(errors(["entities": []]) == ["definition.entities: must be an array of 1 to 100 entity declarations"])
    }

    /// Two lists written from two groups: each entity declared in its group, one per submission.
    @Test func twoGroupsDeclareAnEntityEach() throws {
        let definition = try XFormReader.definition(from: try Fixture.bytes("farm_survey"))
        #expect(definition["entities"] == [
            ["list": "farms", "create": true, "id": "uuid()", "label": "${farm_name}", "saveTo": ["farm_name": "title"],
             "specVersion": "2025.1.0", "container": "farm"],
            ["list": "wells", "create": true, "id": "uuid()", "label": "concat('Well of ', ${farm_name})", "saveTo": ["well_depth": "depth"],
             "specVersion": "2025.1.0", "container": "well"],
        ])
        let parsed = try SurveyDefinition.parse(definition)
        #expect(parsed.entity == nil && parsed.repeatHolding("farm") == nil)
        let xml = """
            <data id="farm_survey" version="1"><farm><farm_name>Hill</farm_name><meta><entity dataset="farms" create="1" id="f-000001"><label>Hill</label></entity></meta></farm>\
            <well><well_depth>12</well_depth><meta><entity dataset="wells" create="1" id="w-000001"><label>Well of Hill</label></entity></meta></well>\
            <meta><instanceID>uuid:f-0001</instanceID></meta></data>
            """
        let instance = try SubmittedInstance(xml: Array(xml.utf8))
        #expect(instance.entity == nil)
        #expect(instance.entities(for: parsed) == [
            ["dataset": "farms", "create": true, "id": "f-000001", "label": "Hill", "container": "farm"],
            ["dataset": "wells", "create": true, "id": "w-000001", "label": "Well of Hill", "container": "well"],
        ])
        let answers = instance.answers(for: parsed) { $0 }.answers
        #expect(answers == ["farm_name": "Hill", "well_depth": 12])
        #expect(parsed.validate(answers: answers).errors.isEmpty)
    }
}
