import SurveyForms
import Testing
@testable import SurveyXForm

/// What ODK apps do with a form on the device, which the server keeps in the XForm (served as
/// uploaded) and carries into the definition only as far as it checks answers: actions on events,
/// answers shown in labels, a submission URL, the device's attributes, acknowledge, range, rank,
/// hidden questions, functions only the device evaluates. Nothing of an answer is dropped: every
/// node of the instance is a node of the definition.
@Suite struct CarriedConstructTests {
    func read(instance: String, binds: String = "", body: String, model: String = "") throws -> (JSONValue, [String]) {
        let read = try XFormReader.read(Array(XFormDocument.make(instance: instance, binds: binds, body: body, model: model, root: #" xmlns:orx="http://openrosa.org/xforms""#).utf8))
        try XFormReader.check(read.definition)
        return (read.definition, read.warnings)
    }

    @Test func actionsOnEventsKeepTheNodesTheySet() throws {
        // A dynamic default, a start-geopoint, background audio and a trigger's setvalue.
        let (d, warnings) = try read(
            instance: "<visit/><warmup/><audio/><adults/><changed/>",
            binds: """
                <bind nodeset="/data/visit" type="date"/><bind nodeset="/data/warmup" type="geopoint"/>
                <bind nodeset="/data/audio" type="binary"/><bind nodeset="/data/adults" type="int"/>
                <bind nodeset="/data/changed" type="dateTime" readonly="true()"/>
                <setvalue event="odk-instance-first-load" ref="/data/visit" value="today()"/>
                <odk:setgeopoint event="odk-instance-first-load" ref="/data/warmup"/>
                <odk:recordaudio event="odk-instance-load" ref="/data/audio" odk:quality="voice-only"/>
                """,
            body: """
                <input ref="/data/visit"><label>Visit</label></input>
                <input ref="/data/adults"><label>Adults</label><setvalue event="xforms-value-changed" ref="/data/changed" value="now()"/></input>
                <input ref="/data/changed"><label>Changed</label></input>
                """)
        #expect(warnings.isEmpty)
        #expect(d.node("visit")?["type"] == "date")
        #expect(d.node("warmup") == ["id": "warmup", "type": "geopoint", "label": "warmup"])
        #expect(d.node("audio") == ["id": "audio", "type": "file", "label": "audio", "accept": ["*/*"]])
        #expect(d.node("changed")?["type"] == "datetime")
    }

    @Test func aHiddenQuestionIsACalculationTakenAsSent() throws {
        let (d, _) = try read(instance: "<a/><secret>B</secret>", binds: "<bind nodeset=\"/data/secret\" type=\"string\"/>",
                              body: "<input ref=\"/data/a\"><label>A</label></input>")
        #expect(d.node("secret") == ["id": "secret", "type": "calculate", "label": "secret", "default": "B"])
    }

    @Test func answersShownInTextsAreTemplates() throws {
        let (d, _) = try read(
            instance: "<name/><r><age/></r>",
            binds: #"<bind nodeset="/data/r/age" type="int" constraint=". &lt; 120" jr:constraintMsg="jr:itext('/data/r/age:constraintMsg')"/>"#,
            body: """
                <input ref="/data/name"><label>Name</label></input>
                <group ref="/data/r"><label>About <output value=" /data/name "/></label><repeat nodeset="/data/r">
                <input ref="/data/r/age"><label>Age of <output value=" /data/name "/></label><hint>Next: <output value=" ../age "/>!</hint></input>
                </repeat></group>
                """,
            model: #"<itext><translation lang="en"><text id="/data/r/age:constraintMsg"><value><output value=" /data/name "/> is not that old</value></text></translation></itext>"#)
        #expect(d.node("r")?["label"] == "About ${name}")
        #expect(d.node("age")?["label"] == "Age of ${name}")
        #expect(d.node("age")?["hint"] == "Next: ${age}!")
        #expect(d.node("age")?["constraintMessage"] == ["en": "${name} is not that old"])
    }

    @Test func aSubmissionURLIsAWarning() throws {
        let (_, warnings) = try read(instance: "<a/>", body: "<input ref=\"/data/a\"><label>A</label></input>",
                                     model: "<submission action=\"https://example.org/submission\" method=\"post\"/>")
        #expect(warnings == ["The form sends its submissions to https://example.org/submission (the settings' submission_url): ODK apps send them there, not to this server."])
    }

    @Test func acknowledgeRangeAndRankAreQuestions() throws {
        let (d, _) = try read(
            instance: "<ok/><r/><x/><rank/>",
            binds: """
                <bind nodeset="/data/r" type="int"/><bind nodeset="/data/x" type="decimal"/><bind nodeset="/data/rank" type="odk:rank"/>
                """,
            body: """
                <trigger ref="/data/ok"><label>I agree</label></trigger>
                <range ref="/data/r" start="1" end="5" step="1"><label>R</label></range>
                <range ref="/data/x" start="10" end="0" step="0.5" appearance="vertical"><label>X</label></range>
                <odk:rank ref="/data/rank"><label>Rank</label><item><label>A</label><value>a</value></item><item><label>B</label><value>b</value></item></odk:rank>
                """)
        #expect(d.node("ok") == ["id": "ok", "type": "select_one", "choices": ["OK"], "label": "I agree"])
        #expect(d.node("r")?["minimum"] == 1 && d.node("r")?["maximum"] == 5 && d.node("r")?["type"] == "integer")
        #expect(d.node("x")?["minimum"] == 0 && d.node("x")?["maximum"] == 10 && d.node("x")?["type"] == "decimal")
        #expect(d.node("rank")?["type"] == "select_multiple")
        #expect(d.node("rank")?["choices"] == [["name": "a", "label": "A"], ["name": "b", "label": "B"]])
    }

    /// A question or a choice shown by its picture only, and a hint that is only guidance.
    @Test func textsWithoutWords() throws {
        let (d, _) = try read(
            instance: "<a/>",
            body: #"<select1 ref="/data/a"><label ref="jr:itext('a:label')"/><hint ref="jr:itext('a:hint')"/><item><label ref="jr:itext('x')"/><value>x</value></item></select1>"#,
            model: """
                <itext><translation lang="en"><text id="a:label"><value form="image">jr://images/a.png</value></text>
                <text id="a:hint"><value form="guidance">Ask twice</value></text>
                <text id="x"><value form="image">jr://images/x.png</value></text></translation></itext>
                """)
        #expect(d.node("a")?["media"] == ["image": ["en": "a.png"]])
        #expect(d.node("a")?["hint"] == nil)
        #expect(d.node("a")?["label"] == "")
        #expect(d.node("a")?["choices"] == [["name": "x", "media": ["image": ["en": "x.png"]]]])
    }

    /// pyxform's ranking question (Fixtures/rank): every choice once, in the order given.
    @Test func pyxformsRankIsASelectMultiple() throws {
        let d = try XFormReader.definition(from: try Fixture.bytes("rank"))
        #expect(d.node("favourite")?["type"] == "select_multiple")
    }

    @Test func theDevicesAttributesAndMessagesStayInTheXForm() throws {
        let (d, _) = try read(
            instance: "<p/><g/><n/>",
            binds: """
                <bind nodeset="/data/p" type="binary" orx:max-pixels="1024" required="true()" jr:requiredMsg="A photo, please"/>
                <bind nodeset="/data/g" type="geopoint"/><bind nodeset="/data/n" type="string" readonly="true()"/>
                """,
            body: """
                <upload ref="/data/p" mediatype="image/*" appearance="new-front"><label>P</label></upload>
                <input ref="/data/g" accuracyThreshold="10" unacceptableAccuracyThreshold="20"><label>G</label></input>
                <input ref="/data/n" appearance="minimal"><label>N</label><hint>H</hint></input>
                """,
            model: "")
        #expect(d.node("p") == ["id": "p", "type": "file", "label": "P", "accept": ["image/*"], "appearance": "new-front", "required": true])
        #expect(d.node("g")?["type"] == "geopoint")
        #expect(d.node("n") == ["id": "n", "type": "note", "label": "N"])
    }

    @Test func functionsOnlyTheDeviceEvaluatesAreKept() throws {
        let (d, _) = try read(
            instance: "<r><age/></r><head/><first/>",
            binds: """
                <bind nodeset="/data/r/age" type="int"/>
                <bind nodeset="/data/head" type="int" constraint=". = indexed-repeat( /data/r/age , /data/r , 1)"/>
                <bind nodeset="/data/first" type="string" calculate="jr:choice-name( /data/head , ' /data/head ')"/>
                """,
            body: """
                <group ref="/data/r"><label>R</label><repeat nodeset="/data/r"><input ref="/data/r/age"><label>Age</label></input></repeat></group>
                <input ref="/data/head"><label>Head</label></input>
                """)
        #expect(d.node("head")?["constraint"] == ". = indexed-repeat(${age},${r}, 1)")
        #expect(d.node("first")?["calculation"] == "jr:choice-name(${head}, ' /data/head ')")
    }

    @Test func aCalculationTheServerCannotReadIsTheDevicesWithAWarning() throws {
        let (d, warnings) = try read(
            instance: "<r><age/></r><children/>",
            binds: #"<bind nodeset="/data/r/age" type="int"/><bind nodeset="/data/children" type="string" calculate="count( /data/r/age [. &lt; 18])"/>"#,
            body: #"<group ref="/data/r"><label>R</label><repeat nodeset="/data/r"><input ref="/data/r/age"><label>Age</label></input></repeat></group>"#)
        #expect(d.node("children") == ["id": "children", "type": "calculate", "label": "children"])
        #expect(warnings.count == 1 && warnings[0].contains("the device computes children, and its value is taken as sent"))
    }
}
