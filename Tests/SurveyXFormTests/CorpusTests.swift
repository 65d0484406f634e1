import Foundation
import SurveyForms
import Testing
@testable import SurveyXForm

/// The corpus of Fixtures/make_corpus.py: XLSForms as field teams write them, read from the XForm
/// pyxform 4.5.0 made of each. Every node, column and setting lands where `Docs/forms.md` says.
/// (Tests/EndToEndTests/XLSFormCorpusTests.swift publishes them on a real server.)
@Suite struct CorpusTests {
    func read(_ name: String) throws -> (JSONValue, SurveyDefinition) {
        let definition = try XFormReader.definition(from: try Fixture.bytes(name))
        return (definition, try SurveyDefinition.parse(definition))
    }

    func types(_ definition: JSONValue) -> [String] {
        var out: [String] = []
        var stack = (definition["questions"]?.arrayValue ?? []).reversed() as [JSONValue]
        while let n = stack.popLast() {
            out.append("\(n["id"]?.stringValue ?? "?"):\(n["type"]?.stringValue ?? "?")")
            stack += (n["children"]?.arrayValue ?? []).reversed()
        }
        return out
    }

    @Test func healthFacilityChecklist() throws {
        let (d, parsed) = try read("health_facility")
        #expect(parsed.title == "Health facility checklist" && parsed.formId == "health_facility")
        #expect(parsed.defaultLanguage == "English (en)")
        #expect(Set(parsed.languages) == ["English (en)", "French (fr)"])
        #expect(types(d) == ["intro:note", "visit_date:date", "facility_type:select_one",
                             "staff:group", "doctors:integer", "nurses:integer", "midwives:integer", "total_staff:calculate", "staff_trained:select_one",
                             "equipment:group", "working_equipment:select_multiple", "fridge_temp:decimal", "broken_equipment:text",
                             "medicines:group", "in_stock:select_multiple", "stockout_days:integer", "ors_litres:decimal"])
        #expect(d.node("staff")?["label"] == ["English (en)": "Staff", "French (fr)": "Personnel"])
        #expect(d.node("doctors")?["hint"] == ["English (en)": "Count everyone present today", "French (fr)": "Comptez toutes les personnes présentes aujourd'hui"])
        #expect(d.node("doctors")?["constraint"] == ". >= 0 and . <= 50")
        #expect(d.node("doctors")?["constraintMessage"] == ["English (en)": "Between 0 and 50 doctors", "French (fr)": "Entre 0 et 50 médecins"])
        #expect(d.node("visit_date")?["constraint"] == ". >= date('2024-01-01')")
        #expect(d.node("fridge_temp")?["relevant"] == "selected(${working_equipment}, 'fridge')")
        #expect(d.node("fridge_temp")?["required"] == true)
        #expect(d.node("broken_equipment")?["required"] == "count-selected(${working_equipment}) < 3")
        #expect(d.node("broken_equipment")?["appearance"] == "multiline")
        #expect(d.node("midwives")?["relevant"] == "${facility_type} != 'dispensary'")
        #expect(d.node("total_staff")?["calculation"] == "${doctors} + ${nurses}")
        #expect(d.node("facility_type")?["choiceList"] == "facility_types")
        #expect(d["choiceLists"]?["facility_types"]?.arrayValue?.first == ["name": "hospital", "label": ["English (en)": "Hospital", "French (fr)": "Hôpital"]])
    }

    @Test func waterPointInspection() throws {
        let (d, parsed) = try read("water_point")
        #expect(parsed.title == "Water point inspection" && parsed.formId == "water_point")
        #expect(Set(parsed.languages) == ["English (en)", "Kiswahili (sw)"])
        #expect(types(d) == ["inspected_at:datetime", "district:select_one", "village:select_one", "location:geopoint", "photo:file",
                             "pump_tag:barcode", "point_type:select_one", "tap_count:integer", "taps:repeat", "tap_working:select_one",
                             "flow_rate:decimal", "taps_recorded:calculate", "opens_at:time", "closes_at:time", "fee:select_one", "fee_per_bucket:decimal"])
        #expect(d.node("photo")?["accept"] == ["image/*"])
        #expect(d.node("village")?["choiceFilter"] == "district=${district}")
        #expect(d["choiceLists"]?["villages"]?.arrayValue?.last == ["name": "mziha", "district": "mvomero",
                                                                     "label": ["English (en)": "Mziha", "Kiswahili (sw)": "Mziha"]])
        #expect(d.node("taps")?["repeatCount"] == "${tap_count}")
        #expect(d.node("flow_rate")?["relevant"] == "${tap_working} = 'yes'")
        #expect(d.node("taps_recorded")?["calculation"] == "count(${taps})")
        #expect(d.node("fee_per_bucket")?["appearance"] == "numbers")
    }

    @Test func everyColumnLandsInTheDefinition() throws {
        let (d, parsed) = try read("every_column")
        #expect(parsed.title == "Every column" && parsed.formId == "every_column")
        // settings' default_language: the translation pyxform marks default="true()".
        #expect(parsed.defaultLanguage == "Español (es)")
        #expect(types(d) == ["started:calculate", "ended:calculate", "day:calculate", "device:calculate", "welcome:note",
                             "name:text", "age:integer", "weight:decimal", "visits_planned:integer", "village_code:text", "born:date",
                             "woke_up:time", "last_meal:datetime", "home:geopoint", "route:geotrace", "plot:geoshape",
                             "portrait:file", "greeting:file", "walkthrough:file", "document:file", "card:barcode",
                             "consent:select_one", "foods:select_multiple", "region:select_one", "district:select_one", "food_count:calculate",
                             "household:group", "members:integer", "member:repeat", "member_name:text", "member_age:integer",
                             "jobs:repeat", "job_title:text", "oldest:calculate", "visits_count:calculate", "visits:repeat", "visit_day:date"])
        #expect(["portrait", "greeting", "walkthrough", "document"].map { d.node($0)?["accept"] } == [["image/*"], ["audio/*"], ["video/*"], ["application/*"]])
        #expect(d.node("started")?["calculation"] == nil) // a preload: the device's value, kept as sent
        #expect(d.node("visits_planned")?["default"] == "2" && d.node("visits_planned")?["readonly"] == "true()")
        #expect(d.node("village_code")?["default"] == "VC-01" && d.node("village_code")?["readonly"] == "${age} < 18")
        #expect(d.node("weight")?["required"] == "${age} < 5")
        #expect(d.node("name")?["constraintMessage"] == ["English (en)": "At least 2 letters", "Español (es)": "Al menos 2 letras"])
        #expect(d.node("home")?["appearance"] == "maps" && d.node("consent")?["appearance"] == "horizontal")
        #expect(d.node("district")?["choiceFilter"] == "region=${region}")
        #expect(d.node("foods")?["constraint"] == "not(selected(., 'none') and count-selected(.) > 1)")
        #expect(d.node("household")?["relevant"] == "${consent} = 'yes'")
        #expect(d.node("member")?["repeatCount"] == "${members}")
        #expect(d.node("jobs")?["relevant"] == "${member_age} >= 15")
        #expect(d.node("oldest")?["calculation"] == "max(${member_age})")
        // A fixed repeat_count: pyxform's read-only calculate node holds it, and the repeat reads it.
        #expect(d.node("visits_count")?["calculation"] == "2" && d.node("visits_count")?["readonly"] == nil)
        #expect(d.node("visits")?["repeatCount"] == "${visits_count}")
        // settings' instance_name is the device's bookkeeping (meta), as instanceID is.
        #expect(d.node("instanceName") == nil && d.node("meta") == nil)
    }

    /// pyxform writes a repeat_count that is a number or an expression as a read-only calculate
    /// node; `readonly="true()"` on a calculation says nothing more and is read. Any other
    /// read-only expression on a calculation is kept as its `readonly`.
    @Test func aComputedRepeatCountIsRead() throws {
        let doc = XFormDocument.make(
            instance: "<n/><r_count/><r jr:template=\"\"><a/></r><r><a/></r>",
            binds: """
                <bind nodeset="/data/n" type="int"/>
                <bind nodeset="/data/r_count" type="string" readonly="true()" calculate=" /data/n  + 1"/>
                <bind nodeset="/data/r/a" type="string"/>
                """,
            body: """
                <input ref="/data/n"><label>N</label></input>
                <group ref="/data/r"><label>R</label><repeat nodeset="/data/r" jr:count=" /data/r_count "><input ref="/data/r/a"><label>A</label></input></repeat></group>
                """)
        let definition = try XFormReader.definition(from: Array(doc.utf8))
        #expect(definition.node("r_count") == ["id": "r_count", "type": "calculate", "label": "r_count", "calculation": "${n} + 1"])
        #expect(definition.node("r")?["repeatCount"] == "${r_count}")
        let parsed = try SurveyDefinition.parse(definition)
        let answers: JSONValue = ["n": 1, "r_count": "2", "r": [["a": "x"]]]
        #expect(parsed.validate(answers: answers).errors.map(\.description) == ["answers.r: must have at least 2 instances (its repeat count), has 1"])

        let other = XFormDocument.make(
            instance: "<n/><c/>",
            binds: "<bind nodeset=\"/data/n\" type=\"int\"/><bind nodeset=\"/data/c\" type=\"string\" readonly=\"/data/n = 1\" calculate=\"1\"/>",
            body: "<input ref=\"/data/n\"><label>N</label></input>")
        // Any other read-only expression on a calculation is carried as the calculation's `readonly`.
        #expect(try XFormReader.definition(from: Array(other.utf8)).node("c")?["readonly"] == "${n} = 1")
    }
}
