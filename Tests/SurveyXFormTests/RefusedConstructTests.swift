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




    @Test func entitiesAreNamed() {
        let message = refusal(instance: "<a/>", binds: "<bind nodeset=\"/data/a\" type=\"string\" entities:saveto=\"name\"/>",
                              body: "<input ref=\"/data/a\"><label>A</label></input>")
        #expect(message == "the form names ODK entities (entities:entities-version or entities:saveto) but its meta has no <entity>")
    }

    @Test func duplicateNamesAreNamed() {
        let message = refusal(instance: "<g1><x/></g1><g2><x/></g2>",
                              body: "<group ref=\"/data/g1\"><input ref=\"/data/g1/x\"><label>X</label></input></group><group ref=\"/data/g2\"><input ref=\"/data/g2/x\"><label>X</label></input></group>")
        #expect(message == "two nodes are named x (/data/g1/x and /data/g2/x); surveyd needs every name unique in the form")
    }


    @Test func anUnknownBindAttributeIsNamed() {
        let message = refusal(instance: "<p/>", binds: "<bind nodeset=\"/data/p\" type=\"binary\" jr:pixels=\"1024\"/>",
                              body: "<upload ref=\"/data/p\" mediatype=\"image/*\"><label>P</label></upload>")
        #expect(message == "the bind of /data/p has jr:pixels=\"1024\", which surveyd does not carry")
    }

    @Test func anEncryptedFormIsNamed() {
        let message = refusal(instance: "<a/>", body: "<input ref=\"/data/a\"><label>A</label></input>",
                              model: "<submission action=\"https://example.org/submission\" method=\"post\" base64RsaPublicKey=\"MIIB\"/>")
        #expect(message?.hasPrefix("the form is encrypted") == true, "\(message ?? "accepted")")
    }

    @Test func aBindWithoutANodeIsRefused() {
        let message = refusal(instance: "<a/>", binds: "<bind nodeset=\"/data/gone\" type=\"string\"/>", body: "<input ref=\"/data/a\"><label>A</label></input>")
        #expect(message == "the bind of /data/gone names no node of the primary instance")
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
        #expect(constraint("frobnicate(/data/b) = 'x'")?.contains("surveyd refuses") == true)
        // And one it reads: `. > ${b}`.
        #expect(constraint(". &gt; /data/b") == nil)
    }

}
