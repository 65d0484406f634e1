import SurveyForms
import Testing
@testable import SurveyXForm

/// Small XForms, each broken in one way, and the sentence each is refused with: a form author
/// reads what to change, and nothing of the form is published.
@Suite struct BrokenXFormTests {
    struct Broken: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let instance: String
        /// Model content after the primary instance: binds, secondary instances.
        let model: String
        /// Model content before the primary instance: itext.
        let head: String
        let body: String
        let message: String

        init(_ what: String, instance: String = "<a/>", model: String = "", head: String = "",
             body: String = #"<input ref="/data/a"><label>A</label></input>"#, _ message: String) {
            self.testDescription = what
            self.instance = instance
            self.model = model
            self.head = head
            self.body = body
            self.message = message
        }

        var xml: [UInt8] {
            Array(XFormDocument.make(instance: instance, binds: model, body: body, model: head,
                                     root: #" xmlns:surveyd="https://surveyd.dev/xforms""#).utf8)
        }
    }

    /// A choice list in a secondary instance, for the itemset cases.
    static func list(_ items: String, attributes: String = "") -> String {
        #"<instance id="list"\#(attributes)><root>\#(items)</root></instance>"#
    }

    static let itemset = #"<select1 ref="/data/a"><label>A</label><itemset nodeset="instance('list')/root/item"><value ref="name"/><label ref="label"/></itemset></select1>"#

    static let cases: [Broken] = [
        // The itext block.
        Broken("itext holding another element", head: "<itext><translation lang=\"en\"/><languages/></itext>",
               "the itext block holds <languages>, which surveyd does not read"),
        Broken("itext translation without lang", head: #"<itext><translation><text id="a:label"><value>A</value></text></translation></itext>"#,
               "an itext translation has no lang"),
        Broken("itext translation holding text without id", head: #"<itext><translation lang="English (en)"><text><value>A</value></text></translation></itext>"#,
               "the English (en) translation holds <text> without an id, which surveyd does not read"),
        Broken("itext translation holding another element", head: #"<itext><translation lang="en"><h:p/></translation></itext>"#,
               "the en translation holds <h:p> without an id, which surveyd does not read"),
        Broken("itext text holding another element", head: #"<itext><translation lang="en"><text id="a:label"><label>A</label></text></translation></itext>"#,
               "the text a:label holds <label>, which surveyd does not read"),
        Broken("itext text showing a computed value",
               instance: "<a/><b/>",
               head: #"<itext><translation lang="en"><text id="b:label"><value>Hello <output value="/data/a + 1"/></value></text></translation></itext>"#,
               body: #"<input ref="/data/a"><label>A</label></input><input ref="/data/b"><label ref="jr:itext('b:label')"/></input>"#,
               "the label of /data/b shows <output value=\"/data/a + 1\"/>; surveyd keeps an output that shows an answer (${name}), not one that computes"),
        Broken("itext text holding another element inside its value",
               instance: "<a/><b/>",
               head: #"<itext><translation lang="en"><text id="b:label"><value>Hello <h:b>you</h:b></value></text></translation></itext>"#,
               body: #"<input ref="/data/a"><label>A</label></input><input ref="/data/b"><label ref="jr:itext('b:label')"/></input>"#,
               "the label of /data/b holds <h:b>, which surveyd does not read"),

        // The body.
        Broken("body holding XHTML", body: #"<h:p>Welcome</h:p><input ref="/data/a"><label>A</label></input>"#,
               "the body holds <h:p>, which surveyd does not read"),
        Broken("body holding an unknown control", body: #"<textarea ref="/data/a"><label>A</label></textarea>"#,
               "the body holds <textarea>, which surveyd does not read"),
        Broken("setvalue of a node the form does not have", body: #"<input ref="/data/a"><label>A</label></input><setvalue event="xforms-ready" ref="/data/zz" value="1"/>"#,
               "the action <setvalue> sets /data/zz, which is not a node of the form"),
        Broken("setvalue whose value names a node the form does not have",
               body: #"<input ref="/data/a"><label>A</label><setvalue event="xforms-value-changed" ref="/data/a" value="/data/zz"/></input>"#,
               "the value <setvalue> sets /data/a to: the expression /data/zz names /data/zz, which is not a question, group or repeat of the form"),
        Broken("setvalue with an attribute surveyd does not read", model: #"<setvalue event="odk-instance-first-load" ref="/data/a" value="1" if="true()"/>"#,
               "the action <setvalue ref=\"/data/a\"> has if=\"true()\", which surveyd does not read"),
        Broken("control without ref", body: #"<input><label>A</label></input>"#,
               "the body has an <input> without ref"),
        Broken("repeat without nodeset", instance: "<r><a/></r>", body: #"<repeat><input ref="/data/r/a"><label>A</label></input></repeat>"#,
               "the body has an <repeat> without nodeset"),
        Broken("relative ref", body: #"<input ref="a"><label>A</label></input>"#,
               "the body's <input> names a; surveyd reads absolute paths such as /data/name"),
        Broken("ref with a predicate", instance: "<g><a/></g>", body: #"<group ref="/data/g[1]"><input ref="/data/g/a"><label>A</label></input></group>"#,
               "the body's <group> names /data/g[1]; surveyd reads absolute paths such as /data/name"),
        Broken("ref with a descendant step", body: #"<input ref="//a"><label>A</label></input>"#,
               "the body's <input> names //a; surveyd reads absolute paths such as /data/name"),

        // The model and the primary instance.
        Broken("bind without an absolute nodeset", model: #"<bind nodeset="a" type="string"/>"#,
               "the XForm has a <bind> without an absolute nodeset"),
        Broken("bind without nodeset", model: #"<bind ref="/data/a" type="string"/>"#,
               "the XForm has a <bind> without an absolute nodeset"),
        Broken("ODK entity that neither creates nor updates", instance: "<a/><meta><entity dataset=\"trees\"/></meta>",
               "meta/entity neither creates nor updates (no create or update attribute)"),
        Broken("node without control of a type surveyd does not know", instance: "<a/><b/>", model: #"<bind nodeset="/data/b" type="boolean"/>"#,
               "/data/b has no control in the body, and its bind's type boolean is none surveyd knows"),
        Broken("calculation that says it is a text", instance: "<a/><b/>",
               model: #"<bind nodeset="/data/b" type="string" calculate="concat('x', /data/a)" surveyd:type="text"/>"#,
               "/data/b has no control in the body, so it is a calculation, yet its bind says surveyd:type=\"text\""),
        Broken("group shown as a question", instance: "<g><a/></g>", body: #"<input ref="/data/g"><label>G</label></input><input ref="/data/g/a"><label>A</label></input>"#,
               "/data/g holds other nodes, yet the body shows it as a question"),
        Broken("fixed repeat without a count", instance: "<r><a/></r>",
               body: #"<group ref="/data/r"><label>R</label><repeat nodeset="/data/r" jr:noAddRemove="true()"><input ref="/data/r/a"><label>A</label></input></repeat></group>"#,
               "the repeat /data/r has jr:noAddRemove without jr:count; surveyd counts a fixed repeat with repeat_count"),
        Broken("question with a calculation", model: #"<bind nodeset="/data/a" type="string" calculate="'x'"/>"#,
               "/data/a is shown in the body and has a calculation; surveyd calculates only in calculate questions"),
        Broken("rank by its bind type", model: #"<bind nodeset="/data/a" type="odk:rank"/>"#,
               body: #"<select ref="/data/a"><label>A</label><item><label>X</label><value>x</value></item></select>"#,
               "/data/a is an <select> of type odk:rank; surveyd has no such question type"),
        Broken("input of an unknown type", model: #"<bind nodeset="/data/a" type="boolean"/>"#,
               "/data/a is an <input> of type boolean; surveyd has no such question type"),
        Broken("upload that is not binary", body: #"<upload ref="/data/a" mediatype="image/*"><label>A</label></upload>"#,
               "/data/a is an <upload> of type string; surveyd has no such question type"),
        Broken("control holding an alert", body: #"<input ref="/data/a"><label>A</label><alert>Wrong</alert></input>"#,
               "/data/a holds <alert>, which surveyd does not carry"),
        Broken("hint on a note holding another element", model: #"<bind nodeset="/data/a" type="string" readonly="true()"/>"#,
               body: #"<input ref="/data/a"><label>A</label><hint>H<h:b/></hint></input>"#,
               "the hint of /data/a holds <h:b>, which surveyd does not read"),
        Broken("constraint on a group", instance: "<g><a/></g>", model: #"<bind nodeset="/data/g" constraint="true()"/>"#,
               body: #"<group ref="/data/g"><label>G</label><input ref="/data/g/a"><label>A</label></input></group>"#,
               "the bind of /data/g has constraint=\"true()\", which surveyd does not carry on a group"),
        Broken("constraint message on a note", model: #"<bind nodeset="/data/a" type="string" readonly="true()" jr:constraintMsg="No"/>"#,
               "the bind of /data/a has jr:constraintMsg=\"No\", which surveyd does not carry on a note"),
        Broken("label that is a path", instance: "<a/><b/>",
               body: #"<input ref="/data/a"><label ref="/data/b"/></input><input ref="/data/b"><label>B</label></input>"#,
               "the label of /data/a is /data/b; surveyd reads a label's text or jr:itext('...')"),

        // Choices.
        Broken("choice without a value", body: #"<select1 ref="/data/a"><label>A</label><item><label>X</label><value/></item></select1>"#,
               "a choice of /data/a has no value"),
        Broken("choice without a value element", body: #"<select1 ref="/data/a"><label>A</label><item><label>X</label></item></select1>"#,
               "a choice of /data/a has no value"),
        Broken("select without choices", body: #"<select1 ref="/data/a"><label>A</label></select1>"#,
               "/data/a has no choices, or both items and an itemset"),
        Broken("select with items and an itemset", model: list("<item><name>x</name><label>X</label></item>"),
               body: #"<select1 ref="/data/a"><label>A</label><item><label>Y</label><value>y</value></item><itemset nodeset="instance('list')/root/item"><value ref="name"/><label ref="label"/></itemset></select1>"#,
               "/data/a has no choices, or both items and an itemset"),
        Broken("itemset without nodeset", body: #"<select1 ref="/data/a"><label>A</label><itemset><value ref="name"/><label ref="label"/></itemset></select1>"#,
               "/data/a has no choices, or both items and an itemset"),
        Broken("itemset from a missing instance", body: itemset,
               "the choices of /data/a come from instance('list'), which the XForm does not have"),
        Broken("itemset from an instance of another kind", model: list("<item><name>x</name><label>X</label></item>", attributes: #" surveyd:list="shared""#),
               body: itemset,
               "the choices of /data/a come from instance('list'), which says surveyd:list=\"shared\""),
        Broken("choice list with two roots", model: #"<instance id="list"><root><item><name>x</name><label>X</label></item></root><root/></instance>"#,
               body: itemset,
               "instance('list') has no single root element"),
        Broken("choice label read from a path", model: list("<item><name>x</name><label>X</label></item>"),
               body: #"<select1 ref="/data/a"><label>A</label><itemset nodeset="instance('list')/root/item"><value ref="name"/><label ref="../label"/></itemset></select1>"#,
               "the choices of instance('list') take their label from ../label; surveyd reads a column or jr:itext(itextId)"),
        Broken("choice holding nested elements", model: list("<item><name>x</name><label><b>X</b></label></item>"), body: itemset,
               "a choice of instance('list') holds nested elements"),
        Broken("choice with an unknown mark", model: list(#"<item surveyd:choice="bold"><name>x</name><label>X</label></item>"#), body: itemset,
               "a choice of instance('list') has surveyd:choice=\"bold\", which surveyd does not read"),
        Broken("choice column that is not the number it says", model: list(#"<item><name>x</name><label>X</label><size surveyd:type="number">big</size></item>"#),
               body: itemset,
               "the column size of a choice of instance('list') is not a number, yet it says surveyd:type=\"number\""),
        Broken("choice without its value column", model: list("<item><label>X</label></item>"), body: itemset,
               "a choice of instance('list') has no name"),
    ]

    @Test(arguments: cases)
    func isRefusedWithItsSentence(_ broken: Broken) {
        #expect(throws: XFormRefusal(broken.message)) { try XFormReader.definition(from: broken.xml) }
    }

    /// Each case differs from a form surveyd reads by its one defect: the same document without
    /// it is read.
    @Test func theFormTheCasesBreakIsRead() throws {
        let good = Broken("good", model: Self.list(#"<item><name>x</name><label>X</label><size surveyd:type="number">3</size></item>"#),
                          body: Self.itemset, "")
        let definition = try XFormReader.definition(from: good.xml)
        #expect(definition["choiceLists"]?["list"] == [["name": "x", "label": "X", "size": 3]])
        #expect(definition.node("a")?["choiceList"] == "list")
    }
}
