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

    /// A name in two groups: each node's id is its path below the root, a number after it where
    /// that path is already an id, and its name the element's.
    @Test func aNameInTwoGroupsTakesItsPathAsId() throws {
        let body = "<group ref=\"/data/g1\"><input ref=\"/data/g1/x\"><label>X</label></input></group>"
            + "<group ref=\"/data/g2\"><input ref=\"/data/g2/x\"><label>X</label></input></group>"
            + "<input ref=\"/data/g1_x\"><label>Y</label></input>"
        let xml = XFormDocument.make(instance: "<g1><x/></g1><g2><x/></g2><g1_x/>", binds: "", body: body)
        let definition = try XFormReader.definition(from: Array(xml.utf8))
        let groups = definition["questions"]?.arrayValue ?? []
        #expect(groups.map { $0["id"]?.stringValue } == ["g1", "g2", "g1_x"])
        #expect(groups.map { $0["name"]?.stringValue } == [nil, nil, nil])
        let xs = groups.prefix(2).map { $0["children"]?.arrayValue?.first }
        #expect(xs.map { $0?["id"]?.stringValue } == ["g1_x_2", "g2_x"])
        #expect(xs.map { $0?["name"]?.stringValue } == ["x", "x"])
        // A bind's surveyd:id that is another node's is refused, naming it.
        let clash = refusal(instance: "<g1><x/></g1><g2><x/></g2>", binds: "<bind nodeset=\"/data/g2/x\" type=\"string\" surveyd:id=\"g1\"/>",
                            body: "<group ref=\"/data/g1\"><input ref=\"/data/g1/x\"><label>X</label></input></group>"
                                + "<group ref=\"/data/g2\"><input ref=\"/data/g2/x\"><label>X</label></input></group>",
                            root: #" xmlns:surveyd="https://surveyd.dev/xforms""#)
        #expect(clash == "the bind of /data/g2/x gives the id g1 (surveyd:id), which is not an id or is another node's")
    }

    /// An attribute only the device reads (`bind::` and `body::` columns of an XLSForm, `intent`)
    /// is kept in the XForm and named in a warning; one in surveyd's namespace it does not write
    /// is refused.
    @Test func aDeviceAttributeIsKeptWithAWarning() throws {
        let xml = XFormDocument.make(instance: "<p/>", binds: "<bind nodeset=\"/data/p\" type=\"binary\" jr:pixels=\"1024\" saveIncomplete=\"true()\"/>",
                                     body: "<upload ref=\"/data/p\" mediatype=\"image/*\" intent=\"org.example.camera\"><label>P</label></upload>")
        let read = try XFormReader.read(Array(xml.utf8))
        #expect(read.warnings.contains("the bind of /data/p has jr:pixels=\"1024\", which ODK apps read: surveyd keeps it in the XForm and does not check it."))
        #expect(read.warnings.contains { $0.hasPrefix("the bind of /data/p has saveIncomplete=\"true()\"") })
        #expect(read.warnings.contains { $0.hasPrefix("the control of /data/p has intent=\"org.example.camera\"") })
        let ours = refusal(instance: "<p/>", binds: "<bind nodeset=\"/data/p\" type=\"string\" surveyd:colour=\"red\"/>",
                           body: "<input ref=\"/data/p\"><label>P</label></input>", root: #" xmlns:surveyd="https://surveyd.dev/xforms""#)
        #expect(ours == "the bind of /data/p has surveyd:colour=\"red\", which surveyd does not carry")
    }

    /// An encrypted form is read with its public key (its submissions are then the envelope), and
    /// a presentation-only group (no ref) shows its controls, which read as any others.
    @Test func anEncryptedFormKeepsItsKeyAndARefLessGroupItsControls() throws {
        let key = String(repeating: "MIIBIjANBgkqhkiG", count: 8)
        let read = try XFormReader.read(Array(XFormDocument.make(
            instance: "<a/><b/>", binds: "",
            body: "<group appearance=\"field-list\"><label>Both</label><input ref=\"/data/a\"><label>A</label></input></group><input ref=\"/data/b\"><label>B</label></input>",
            model: "<submission action=\"https://example.org/submission\" method=\"post\" base64RsaPublicKey=\"\(key)\"/>").utf8))
        #expect(read.definition["encryption"]?["publicKey"]?.stringValue == key)
        #expect(read.definition["questions"]?.arrayValue?.map { $0["id"]?.stringValue } == ["a", "b"])
        #expect(read.warnings.contains { $0.hasPrefix("The form is encrypted (public_key)") })
        let parsed = try XFormReader.definition(from: Array(XFormDocument.make(instance: "<a/>", binds: "",
            body: "<input ref=\"/data/a\"><label>A</label></input>", model: "<submission base64RsaPublicKey=\"\(key)\"/>").utf8))
        #expect(parsed["encryption"]?["publicKey"]?.stringValue == key)
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
