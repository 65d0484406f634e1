import SurveyForms
import Testing
@testable import SurveyXForm

/// One language, labels without itext, and the question types the roster does not have.
@Suite struct SimpleFormTests {
    @Test func typesAndPlainLabels() throws {
        let definition = try XFormReader.definition(from: try Fixture.bytes("simple"))
        let parsed = try SurveyDefinition.parse(definition)
        #expect(parsed.defaultLanguage == nil && parsed.languages == [])
        let types = parsed.questions.map { "\($0.id):\($0.type.rawValue)" }
        #expect(types == ["full_name:text", "age:integer", "smoker:select_one", "start_time:time", "ended:datetime", "code:barcode",
                          "path:geotrace", "field:geoshape", "report:file"])
        #expect(definition.node("age")?["constraintMessage"] == "Not negative")
        #expect(definition.node("smoker")?["relevant"] == "${age} >= 12")
        #expect(definition["choiceLists"]?["yn"] == [["name": "yes", "label": "Yes"], ["name": "no", "label": "No"]])
        #expect(parsed.question(id: "report")?.accept == ["application/*"])
    }

    @Test func inlineItemsDefaultsAndPreloadsAreRead() throws {
        let doc = XFormDocument.make(
            instance: "<start/><colour>red</colour><n/>",
            binds: """
                <bind nodeset="/data/start" type="dateTime" jr:preload="timestamp" jr:preloadParams="start"/>
                <bind nodeset="/data/n" type="int" readonly="/data/colour = 'red'" required="/data/colour != 'red'"/>
                """,
            body: """
                <select1 ref="/data/colour"><label>Colour</label><item><label>Red</label><value>red</value></item><item><label>Blue</label><value>blue</value></item></select1>
                <input ref="/data/n"><label>N</label></input>
                """)
        let definition = try XFormReader.definition(from: Array(doc.utf8))
        _ = try SurveyDefinition.parse(definition)
        #expect(definition.node("start")?["type"] == "calculate")
        #expect(definition.node("colour")?["choices"] == [["name": "red", "label": "Red"], ["name": "blue", "label": "Blue"]])
        #expect(definition.node("colour")?["default"] == "red")
        #expect(definition.node("n")?["readonly"] == "${colour} = 'red'")
        #expect(definition.node("n")?["required"] == "${colour} != 'red'")
    }

    @Test func aRepeatWithoutAWrappingGroupAndPositionInside() throws {
        let doc = XFormDocument.make(
            instance: "<visit jr:template=\"\"><k/></visit><visit><k/></visit>",
            binds: "<bind nodeset=\"/data/visit/k\" type=\"int\" constraint=\". = position(..)\"/>",
            body: "<repeat nodeset=\"/data/visit\"><input ref=\"/data/visit/k\"><label>K</label></input></repeat>")
        let definition = try XFormReader.definition(from: Array(doc.utf8))
        #expect(definition.node("visit")?["type"] == "repeat")
        #expect(definition.node("k")?["constraint"] == ". = position(..)")
    }

    @Test func aReadOnlyTextWithAValueIsNotANote() throws {
        let doc = XFormDocument.make(
            instance: "<intro/><site>north</site>",
            binds: "<bind nodeset=\"/data/intro\" type=\"string\" readonly=\"true()\"/><bind nodeset=\"/data/site\" type=\"string\" readonly=\"true()\"/>",
            body: "<input ref=\"/data/intro\"><label>Welcome</label></input><input ref=\"/data/site\"><label>Site</label></input>")
        let definition = try XFormReader.definition(from: Array(doc.utf8))
        #expect(definition.node("intro")?["type"] == "note")
        #expect(definition.node("intro")?["readonly"] == nil)
        #expect(definition.node("site")?["type"] == "text")
        #expect(definition.node("site")?["readonly"] == "true()")
        #expect(definition.node("site")?["default"] == "north")
    }
}
