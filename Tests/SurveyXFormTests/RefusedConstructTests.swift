import SurveyForms
import Testing
@testable import SurveyXForm

/// What the definition does not carry is refused by name, never dropped.
@Suite struct RefusedConstructTests {
    func refusal(_ bytes: [UInt8]) -> String? {
        do {
            _ = try XFormReader.definition(from: bytes)
            return nil
        } catch {
            return error.message
        }
    }

    func refusal(instance: String, binds: String = "", body: String, model: String = "", root: String = "") -> String? {
        refusal(Array(XFormDocument.make(instance: instance, binds: binds, body: body, model: model, root: root).utf8))
    }

    @Test func filesTheVersionDoesNotCarryAreNamed() throws {
        // Read without its files, a form that reads choices or data from a CSV file is refused naming it.
        #expect(refusal(try Fixture.bytes("csv_choices"))?.contains("names the file villages.csv, whose choices are read when it is attached") == true)
        #expect(refusal(try Fixture.bytes("pulldata"))?.contains("pulldata reads prices.csv, which is not attached to the form") == true)
        let xml = refusal(instance: "<v/>", binds: "<instance id=\"v\" src=\"jr://file/v.xml\"/>",
                          body: "<select1 ref=\"/data/v\"><label>V</label><itemset nodeset=\"instance('v')/root/item\"><value ref=\"name\"/><label ref=\"label\"/></itemset></select1>")
        #expect(xml == "instance('v') reads jr://file/v.xml; surveyd reads choices and data from CSV files the form carries (jr://file-csv/…), not XML or GeoJSON")
    }

    @Test func rankIsNamed() throws {
        let message = refusal(try Fixture.bytes("rank"))
        #expect(message?.contains("ranking question (<odk:rank ref=\"/data/favourite\">)") == true, "\(message ?? "accepted")")
    }

    @Test func acknowledgeAndRangeAreNamed() {
        #expect(refusal(instance: "<ok/>", body: "<trigger ref=\"/data/ok\"><label>OK</label></trigger>")?.contains("acknowledge") == true)
        #expect(refusal(instance: "<r/>", binds: "<bind nodeset=\"/data/r\" type=\"int\"/>",
                        body: "<range ref=\"/data/r\" start=\"1\" end=\"5\" step=\"1\"><label>R</label></range>")?.contains("range") == true)
    }

    @Test func setvalueIsNamed() {
        let message = refusal(instance: "<a/><b/>", body: "<input ref=\"/data/a\"><label>A</label><setvalue event=\"xforms-value-changed\" ref=\"/data/b\" value=\"now()\"/></input><input ref=\"/data/b\"><label>B</label></input>")
        #expect(message?.contains("<setvalue>") == true)
        #expect(refusal(instance: "<a/>", body: "<input ref=\"/data/a\"><label>A</label></input>",
                        model: "<setvalue event=\"odk-instance-first-load\" ref=\"/data/a\" value=\"uuid()\"/>")?.contains("<setvalue>") == true)
    }

    @Test func entitiesAreNamed() {
        let message = refusal(instance: "<a/>", binds: "<bind nodeset=\"/data/a\" type=\"string\" entities:saveto=\"name\"/>",
                              body: "<input ref=\"/data/a\"><label>A</label></input>")
        #expect(message?.contains("ODK entities (entities:saveto") == true)
    }

    @Test func duplicateNamesAreNamed() {
        let message = refusal(instance: "<g1><x/></g1><g2><x/></g2>",
                              body: "<group ref=\"/data/g1\"><input ref=\"/data/g1/x\"><label>X</label></input></group><group ref=\"/data/g2\"><input ref=\"/data/g2/x\"><label>X</label></input></group>")
        #expect(message == "two nodes are named x (/data/g1/x and /data/g2/x); surveyd needs every name unique in the form")
    }

    @Test func anUnknownBindAttributeIsNamed() {
        let message = refusal(instance: "<p/>", binds: "<bind nodeset=\"/data/p\" type=\"binary\" odk:max-pixels=\"1024\"/>",
                              body: "<upload ref=\"/data/p\" mediatype=\"image/*\"><label>P</label></upload>")
        #expect(message == "the bind of /data/p has odk:max-pixels=\"1024\", which surveyd does not carry")
    }

    @Test func aBindWithoutANodeIsRefused() {
        let message = refusal(instance: "<a/>", binds: "<bind nodeset=\"/data/gone\" type=\"string\"/>", body: "<input ref=\"/data/a\"><label>A</label></input>")
        #expect(message == "the bind of /data/gone names no node of the primary instance")
    }

    @Test func aHiddenQuestionIsRefused() {
        let message = refusal(instance: "<a/><secret/>", binds: "<bind nodeset=\"/data/secret\" type=\"string\"/>", body: "<input ref=\"/data/a\"><label>A</label></input>")
        #expect(message == "/data/secret has no control in the body and no calculation; surveyd has no hidden questions")
    }

    @Test func expressionsSurveydCannotReadAreNamed() {
        func constraint(_ c: String) -> String? {
            refusal(instance: "<a/><b/>", binds: "<bind nodeset=\"/data/a\" type=\"int\" constraint=\"\(c)\"/>",
                    body: "<input ref=\"/data/a\"><label>A</label></input><input ref=\"/data/b\"><label>B</label></input>")
        }
        #expect(constraint(". &gt; instance('x')/root/item")?.contains("instance(...)") == true)
        #expect(constraint("count(/data/b[. = 1])")?.contains("filters a path") == true)
        #expect(constraint("/data/nowhere = 1")?.contains("names /data/nowhere, which is not a question") == true)
        #expect(constraint("/data/b/@x = 1")?.contains("attribute") == true)
        #expect(constraint("b = 1")?.contains("relative path b") == true)
        #expect(constraint("jr:choice-name(/data/b, '/data/b') = 'x'")?.contains("surveyd refuses") == true)
        // And one it reads: `. > ${b}`.
        #expect(constraint(". &gt; /data/b") == nil)
    }

    @Test func aLabelShowingAnAnswerIsNamed() {
        let message = refusal(instance: "<a/><b/>", body: "<input ref=\"/data/a\"><label>A</label></input><input ref=\"/data/b\"><label>Hello <output value=\" /data/a \"/></label></input>")
        #expect(message?.contains("<output> (it shows an answer)") == true)
    }
}
