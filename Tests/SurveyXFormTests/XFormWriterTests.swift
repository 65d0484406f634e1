import Foundation
import SurveyForms
import Testing
@testable import SurveyXForm

/// `XFormWriter` is `XFormReader`'s inverse: a definition written as an XForm reads back into the
/// same definition — the same canonical JSON, so the same `contentHash` — and the same
/// definition always gives the same bytes.
@Suite struct XFormWriterTests {
    static let formCases = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/form-cases.json")

    /// Every definition of the shared case table (`Tests/Fixtures/form-cases.json`): its
    /// `definition`, and a case's own `definition` where one has it.
    static func formCaseDefinitions() throws -> [(String, JSONValue)] {
        let table = try JSONParser.parse(Array(try Data(contentsOf: formCases)))
        var out: [(String, JSONValue)] = []
        if let d = table["definition"] { out.append(("form-cases.json", d)) }
        for c in table["cases"]?.arrayValue ?? [] {
            if let d = c["definition"] { out.append(("form-cases.json: \(c["name"]?.stringValue ?? "?")", d)) }
        }
        return out
    }

    /// The version-1 definition the end-to-end tests publish: flat questions, bounds, lengths, files.
    static let flat: JSONValue = [
        "title": "Household",
        "questions": [
            ["id": "size", "type": "integer", "label": "People", "required": true, "minimum": 1, "maximum": 50],
            ["id": "source", "type": "select_one", "label": "Water", "choices": ["well", "piped", "river"]],
            ["id": "notes", "type": "text", "label": "Notes", "maxLength": 20],
            ["id": "photo", "type": "file", "label": "Photo", "accept": ["image/jpeg", "image/png"], "maxBytes": 1_000_000],
            ["id": "income", "type": "decimal", "label": "Income", "minimum": 0.5, "required": false],
            ["id": "report", "type": "file", "label": "Report", "accept": ["application/pdf"]],
        ],
    ]

    /// A roster in two languages, with a choice filter outside and inside the repeat.
    static let roster: JSONValue = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/roster-two-languages.json")
        return (try? JSONParser.parse(Array(Data(contentsOf: url)))) ?? .null
    }()

    static func roundTrip(_ definition: JSONValue, label: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let xml = try XFormWriter.xform(of: definition, formId: "srv_fallback", version: "7")
        let read: JSONValue
        do {
            read = try XFormReader.definition(from: xml)
        } catch {
            Issue.record("\(label): the reader refused the written XForm: \(error.message)\n\(String(decoding: xml, as: UTF8.self))",
                         sourceLocation: sourceLocation)
            return
        }
        #expect(CanonicalJSON.string(read) == CanonicalJSON.string(definition),
                "\(label)\n\(String(decoding: xml, as: UTF8.self))", sourceLocation: sourceLocation)
    }

    @Test func everyFormCaseDefinitionReadsBack() throws {
        let definitions = try Self.formCaseDefinitions()
        #expect(!definitions.isEmpty)
        for (label, definition) in definitions { try Self.roundTrip(definition, label: label) }
    }

    @Test func theFixturesReadBackAsTheyWereRead() throws {
        for name in ["household", "simple", "household_registration", "household_visit"] {
            let definition = try XFormReader.definition(from: try Fixture.bytes(name))
            try Self.roundTrip(definition, label: name)
        }
    }

    @Test func aFlatVersionOneDefinitionReadsBack() throws {
        try Self.roundTrip(Self.flat, label: "flat")
        let xml = String(decoding: try XFormWriter.xform(of: Self.flat, formId: "srv_1", version: "1"), as: UTF8.self)
        #expect(xml.contains(#"<upload ref="/data/photo" mediatype="image/*">"#), "\(xml)")
        #expect(xml.contains(#"surveyd:accept="image/jpeg image/png""#))
        #expect(xml.contains(#"<upload ref="/data/report" mediatype="application/pdf">"#))
    }

    @Test func aTwoLanguageRosterWithAChoiceFilterReadsBack() throws {
        try Self.roundTrip(Self.roster, label: "roster")
        let xml = String(decoding: try XFormWriter.xform(of: Self.roster, formId: "srv_1", version: "3"), as: UTF8.self)
        // pyxform's shape: the default language first and marked, the form id and version on the root,
        // meta/instanceID, the repeat's template and first instance, its count, the filters.
        #expect(xml.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<h:html xmlns=\"http://www.w3.org/2002/xforms\""))
        #expect(xml.contains(#"xmlns:orx="http://openrosa.org/xforms""#))
        #expect(xml.contains(#"<translation lang="English (en)" default="true()">"#))
        let english = try #require(xml.range(of: "lang=\"English (en)\""))
        let spanish = try #require(xml.range(of: "lang=\"Español (es)\""))
        #expect(english.lowerBound < spanish.lowerBound)
        #expect(xml.contains(#"<data id="household_roster" version="3">"#))
        #expect(xml.contains("<meta>\n            <instanceID/>\n          </meta>"))
        #expect(xml.contains(#"<bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>"#))
        #expect(xml.contains(#"<people jr:template="">"#))
        #expect(xml.contains(#"<repeat nodeset="/data/household/people" jr:count=" /data/household/size ">"#))
        #expect(xml.contains(#"<itemset nodeset="instance('districts')/root/item[region =  /data/region ]">"#))
        #expect(xml.contains(#"<itemset nodeset="instance('districts')/root/item[region =  current()/../birth_region ]">"#))
        #expect(xml.contains(#"<bind nodeset="/data/household" relevant=" /data/consent  = 'yes'"/>"#))
        #expect(xml.contains(#"<bind nodeset="/data/household/eldest" type="string" calculate="max( /data/household/people/age )" surveyd:label="jr:itext('/data/household/eldest:label')"/>"#))
    }

    /// A question's bounds are part of the constraint ODK apps check (Collect ignores surveyd's
    /// namespace), beside the definition's own constraint, and read back as they were.
    @Test func boundsAreConstraintsODKAppsCheck() throws {
        let definition: JSONValue = ["title": "Bounds", "questions": [
            ["id": "size", "type": "integer", "label": "Size", "minimum": 1, "maximum": 50],
            ["id": "price", "type": "decimal", "label": "Price", "maximum": 2.5, "constraint": ". != 1"],
            ["id": "note", "type": "text", "label": "Note", "maxLength": 20],
            ["id": "free", "type": "integer", "label": "Free", "constraint": ". > 0"],
        ]]
        let xml = String(decoding: try XFormWriter.xform(of: definition, formId: "srv_1", version: "1"), as: UTF8.self)
        #expect(xml.contains(#"nodeset="/data/size" type="int" constraint=". &gt;= 1 and . &lt;= 50""#), "\(xml)")
        #expect(xml.contains(#"constraint="(. != 1) and . &lt;= 2.5""#), "\(xml)")
        #expect(xml.contains(#"constraint="string-length(.) &lt;= 20""#), "\(xml)")
        #expect(xml.contains(#"nodeset="/data/free" type="int" constraint=". &gt; 0"/>"#), "\(xml)")
        try Self.roundTrip(definition, label: "bounds")
    }

    @Test func theFormIdIsTheDefinitionsElseTheOneGiven() throws {
        let named = String(decoding: try XFormWriter.xform(of: Self.roster, formId: "srv_x", version: nil), as: UTF8.self)
        #expect(named.contains("<data id=\"household_roster\">"))
        let unnamed = String(decoding: try XFormWriter.xform(of: Self.flat, formId: "srv_x", version: "12"), as: UTF8.self)
        #expect(unnamed.contains("<data id=\"srv_x\" version=\"12\">"))
        #expect(try XFormReader.identity(from: Array(unnamed.utf8)) == ("srv_x", "12"))
        // Read back, the definition still has no formId: the model says the id was the server's.
        #expect(try XFormReader.definition(from: Array(unnamed.utf8))["formId"] == nil)
    }

    @Test func theSameDefinitionGivesTheSameBytes() throws {
        for definition in [Self.roster, Self.flat] + (try Self.formCaseDefinitions().map(\.1)) {
            let a = try XFormWriter.xform(of: definition, formId: "srv_1", version: "2")
            // The same definition parsed again from its text: dictionaries in another order.
            let again = try JSONParser.parse(CanonicalJSON.encode(definition))
            let b = try XFormWriter.xform(of: again, formId: "srv_1", version: "2")
            #expect(a == b)
        }
    }

    /// What a definition may hold beyond the fixtures and the XForm has no place for.
    static let edges: JSONValue = [
        "title": "Edges",
        "defaultLanguage": "fr",
        "choiceLists": [
            "mixed": ["plain", ["name": "b"], ["name": "c", "label": "Cee"], ["name": "d", "label": ["fr": "Dé", "en": "Dee"]],
                      ["name": "e", "label": "Eh", "rank": 2, "code": "x"]],
            "spare": [["name": "u", "label": "Unused", "weight": 1.5]],
            "it's (odd)": ["one", "two"],
        ],
        "questions": [
            ["id": "a", "type": "text", "label": ["fr": "Texte", "en": "Text"], "readonly": "true()"],
            ["id": "b", "type": "text", "label": "B", "readonly": "false()", "required": "true()"],
            ["id": "c", "type": "text", "label": "C", "required": "false()", "default": ""],
            ["id": "d", "type": "text", "label": "D", "default": "  padded  ", "appearance": "multiline"],
            ["id": "e", "type": "calculate", "label": "e"],
            ["id": "f", "type": "calculate", "label": "Eff", "hint": "a hint", "appearance": "hidden", "default": "3",
             "required": "${a} != ''", "constraint": ". > 0", "constraintMessage": ["fr": "Positif", "en": "Positive"]],
            ["id": "g", "type": "select_multiple", "label": "G", "choiceList": "mixed"],
            ["id": "h", "type": "select_one", "label": "H", "choiceList": "it's (odd)"],
            ["id": "i", "type": "select_one", "label": "I", "choices": [["name": "x", "label": "X", "zone": "1"], ["name": "y", "zone": "2"]],
             "choiceFilter": "zone = ${k}"],
            ["id": "j", "type": "select_one", "label": "J", "choices": ["p", ["name": "q"], ["name": "r", "label": ["fr": "Air", "en": "Arr"]]]],
            ["id": "k", "type": "text", "label": "K", "relevant": "${b} = 'x'\nor\t${c}='y'"],
            ["id": "visits", "type": "repeat", "repeatCount": "${k} + 1", "minCount": 0, "maxCount": 9, "children": [
                ["id": "when", "type": "date", "label": "When", "default": "2026-01-01"],
                ["id": "zoned", "type": "select_one", "label": "Zoned", "choiceList": "mixed", "choiceFilter": "code = ${k} or rank=${n1}",
                 "relevant": "(${k})!=-${when}+${visits}"],
                ["id": "inner", "type": "repeat", "label": "Inner", "repeatCount": "2", "children": [
                    ["id": "v", "type": "geopoint", "label": "Where"],
                ]],
            ]],
            ["id": "ungrouped", "type": "group", "children": [["id": "n1", "type": "note", "label": "Just a note", "relevant": "${k} = 'x'"]]],
        ],
    ]

    @Test func whatAnXFormHasNoPlaceForIsKept() throws {
        try Self.roundTrip(Self.edges, label: "edges")
    }

    @Test func languagesWithoutADefaultAndADefaultWithoutLanguages() throws {
        try Self.roundTrip(["title": "L", "questions": [["id": "a", "type": "text", "label": ["en": "A", "fr": "Ah"]]]], label: "no default")
        try Self.roundTrip(["title": "L", "defaultLanguage": "en", "questions": [["id": "a", "type": "text", "label": "A"]]], label: "no languages")
        try Self.roundTrip(["title": "L", "formId": "x", "questions": [["id": "a", "type": "integer", "label": "A"]]], label: "form id")
    }

    static let hostile = "</label><script>&amp; \"quoted\" 'single' & <b> ]]> é 漢字 🙂"
    static let hostileDefinition: JSONValue = [
        "title": .string("Title " + Self.hostile),
        "formId": "id \"with\" <quotes> & amps",
        "choiceLists": ["l<&>\"": [["name": "a&b", "label": .string(Self.hostile), "col": "<x/>"]]],
        "questions": [
            ["id": "q", "type": "text", "label": .string(Self.hostile), "hint": "tab\there\nline\r\nbreaks",
             "constraint": "regex(., '^[<&>]+$') and . != \"'\"", "constraintMessage": .string(Self.hostile), "default": "<&>"],
            ["id": "s", "type": "select_one", "label": "S", "choices": [["name": "<v>", "label": ["en": .string(Self.hostile), "fr": " spaced "]]]],
            ["id": "t", "type": "select_one", "label": "T", "choiceList": "l<&>\""],
        ],
    ]

    @Test func hostileNamesAndLabelsAreEscaped() throws {
        let definition = Self.hostileDefinition
        try Self.roundTrip(definition, label: "hostile")
        let xml = String(decoding: try XFormWriter.xform(of: definition, formId: "f", version: "1"), as: UTF8.self)
        #expect(!xml.contains("<script>"))
        #expect(xml.contains("&lt;/label&gt;&lt;script&gt;&amp;amp;"))
        #expect(xml.contains("é 漢字 🙂"))
        // Still one well-formed document that libxml2 reads.
        #expect(throws: Never.self) { try XMLDocumentReader.parse(Array(xml.utf8)) }
    }

    @Test func whatNoXFormCanHoldIsRefusedByName() {
        func refusal(_ definition: JSONValue) -> String? {
            do { _ = try XFormWriter.xform(of: definition, formId: "f", version: nil); return nil } catch { return error.message }
        }
        #expect(refusal(["title": "T", "questions": [["id": "meta", "type": "text", "label": "M"]]])?.contains("meta") == true)
        #expect(refusal(["title": "T", "questions": [["id": "a", "type": "text", "label": "bell \u{7}"]]])?.contains("U+0007") == true)
        #expect(refusal(["title": "T", "questions": [["id": "a", "type": "text"]]])?.contains("not valid") == true)
        #expect(refusal(["title": "T", "questions": [["id": "a", "type": "text", "label": ["": "A"]]]])?.contains("language") == true)
        #expect(refusal(["title": "T", "choiceLists": ["": ["a"]], "questions": [["id": "a", "type": "select_one", "label": "A", "choiceList": ""]]])?
            .contains("named") == true)
        #expect(refusal(["title": "T", "choiceLists": ["l": [["name": "a", "bad column": "x"]]], "questions": [["id": "a", "type": "text", "label": "A"]]])?
            .contains("bad column") == true)
        // ODK Collect (JavaRosa) has no floor() or ceiling(): ODK Validate refuses a form calling either.
        #expect(refusal(["title": "T", "questions": [["id": "a", "type": "decimal", "label": "A"],
                                                     ["id": "b", "type": "calculate", "label": "B", "calculation": "floor(${a})"]]])?
            .contains("floor()") == true)
        #expect(refusal(["title": "T", "questions": [["id": "a", "type": "decimal", "label": "A", "constraint": "ceiling(.) = 2"]]])?
            .contains("ceiling()") == true)
        // `meta` inside a group is an ordinary node.
        #expect(refusal(["title": "T", "questions": [["id": "g", "type": "group", "children": [["id": "meta", "type": "text", "label": "M"]]]]]) == nil)
    }

    /// surveyd's marks are read only where the writer puts them; anywhere else they are refused by name.
    @Test func surveydsMarksOutOfPlaceAreRefused() {
        let root = #" xmlns:surveyd="https://surveyd.dev/xforms""#
        func refusal(instance: String = "<n/>", binds: String, body: String = #"<input ref="/data/n"><label>N</label></input>"#) -> String? {
            let doc = XFormDocument.make(instance: instance, binds: binds, body: body, root: root)
            do { _ = try XFormReader.definition(from: Array(doc.utf8)); return nil } catch { return error.message }
        }
        #expect(refusal(binds: #"<bind nodeset="/data/n" type="int" surveyd:maxLength="3"/>"#)?.contains("surveyd:maxLength") == true)
        #expect(refusal(binds: #"<bind nodeset="/data/n" type="int" surveyd:colour="red"/>"#)?.contains("surveyd:colour") == true)
        #expect(refusal(binds: #"<bind nodeset="/data/n" type="int" surveyd:minimum="one"/>"#)?.contains("not a number") == true)
        #expect(refusal(binds: #"<bind nodeset="/data/n" type="int" surveyd:type="text"/>"#)?.contains("surveyd:type") == true)
        #expect(refusal(binds: #"<bind nodeset="/data/n" type="string"/>"#, body: #"<select1 ref="/data/n"><label>N</label><item surveyd:choice="odd"><label>A</label><value>a</value></item></select1>"#)?
            .contains("surveyd:choice") == true)
        #expect(refusal(binds: #"<bind nodeset="/data/n" type="int"/><instance id="mine" surveyd:list="inline"><root><item><name>a</name></item></root></instance>"#)?
            .contains("no question's itemset") == true)
        #expect(refusal(instance: "<n/><c/>", binds: #"<bind nodeset="/data/n" type="int"/><bind nodeset="/data/c" type="string" calculate="1" surveyd:type="repeatCount"/>"#)?
            .contains("jr:count") == true)
        // Read where it belongs, the same attribute is the definition's property.
        #expect(refusal(binds: #"<bind nodeset="/data/n" type="int" surveyd:minimum="1"/>"#) == nil)
    }

    /// The names the writer makes up — a repeat count's node, a question's own choice list, a
    /// translated text's id — step aside from the definition's own names, and the XForm reads
    /// back into the same definition.
    @Test func namesTheWriterMakesUpStepAsideFromTheDefinitions() throws {
        let definition: JSONValue = [
            "title": "Clashes",
            "choiceLists": [
                "town": [["name": "a", "label": "A"]],
                "town_2": [["name": "b", "label": "B"]],
                "it's": [["name": "x", "label": ["en": "Ex", "fr": "Ixe"]]],
                "it_s": [["name": "y", "label": ["en": "Why", "fr": "I grec"]]],
            ],
            "questions": [
                ["id": "visits_count", "type": "integer", "label": "How many visits?"],
                ["id": "visits", "type": "repeat", "label": "Visit", "repeatCount": "${visits_count} + 1", "children": [
                    ["id": "when", "type": "date", "label": "When"],
                ]],
                ["id": "town", "type": "select_one", "label": "Town", "choices": [["name": "n", "label": "North", "zone": "1"]],
                 "choiceFilter": "zone = '1'"],
                ["id": "first", "type": "select_one", "label": "First", "choiceList": "it's"],
                ["id": "second", "type": "select_one", "label": "Second", "choiceList": "it_s"],
                ["id": "spare", "type": "select_one", "label": "Spare", "choiceList": "town"],
                ["id": "other", "type": "select_one", "label": "Other", "choiceList": "town_2"],
            ],
        ]
        let xml = String(decoding: try XFormWriter.xform(of: definition, formId: "clash", version: "1"), as: UTF8.self)
        // The repeat's count node is visits_count2, the question's own list town_3, the second
        // list's text it_s-0~2: each beside, not over, the definition's name.
        #expect(xml.contains("<visits_count2"))
        #expect(xml.contains("jr:count=\" /data/visits_count2 \""))
        #expect(xml.contains("<instance id=\"town_3\" surveyd:list=\"inline\">"))
        #expect(xml.contains("<text id=\"it_s-0\">") && xml.contains("<text id=\"it_s-0~2\">"))
        try Self.roundTrip(definition, label: "clashes")
    }
}
