import Testing
@testable import SurveyForms

/// CSV files a form names, read as spreadsheets write them; every mistake refused naming its line.
@Suite struct CSVTableTests {
    func read(_ text: String, limits: CSVTable.Limits = CSVTable.Limits()) throws -> CSVTable {
        try CSVTable.read(Array(text.utf8), limits: limits)
    }
    func refusal(_ bytes: [UInt8], limits: CSVTable.Limits = CSVTable.Limits()) -> String? {
        do { _ = try CSVTable.read(bytes, limits: limits); return nil } catch { return (error as? CSVTable.Refusal)?.message ?? "\(error)" }
    }

    @Test func quotedFieldsHoldSeparatorsQuotesAndLineBreaks() throws {
        let t = try read("name,label\r\nv1,\"A, B\"\r\nv2,\"Say \"\"hi\"\"\"\nv3,\"two\nlines\"\rv4,\n")
        #expect(t.columns == ["name", "label"])
        #expect(t.rows == [["v1", "A, B"], ["v2", "Say \"hi\""], ["v3", "two\nlines"], ["v4", ""]])
    }

    @Test func excelsSemicolonsAndByteOrderMarkAreRead() throws {
        let t = try CSVTable.read([0xEF, 0xBB, 0xBF] + Array("name;label;price\nrice;Rice;\"1,5\"\n".utf8))
        #expect(t.columns == ["name", "label", "price"])
        #expect(t.rows == [["rice", "Rice", "1,5"]])
    }

    @Test func shortRowsArePaddedAndBlankLinesSkipped() throws {
        let t = try read("a,b,c\n1\n\n2,3,4\n")
        #expect(t.rows == [["1", "", ""], ["2", "3", "4"]])
    }

    @Test func mistakesAndLimitsAreRefusedByLine() {
        #expect(refusal(Array("a,b\n1,\"x\n2,3\n".utf8)) == "line 2: a quoted field (field 2) is never closed")
        #expect(refusal(Array("a,b\n1,x\"y\n".utf8))?.hasPrefix("line 2: a quote inside an unquoted field") == true)
        #expect(refusal(Array("a,b\n1,\"x\"y\n".utf8)) == "line 2: text after the closing quote of field 2")
        #expect(refusal(Array("a,b\n1,2,3\n".utf8)) == "line 2: the row has 3 fields, the header 2")
        #expect(refusal(Array("a,a\n".utf8)) == "line 1: two columns are named a")
        #expect(refusal(Array("a,\n".utf8)) == "line 1: column 2 has no name")
        #expect(refusal([]) == "it is empty; its first line names the columns")
        #expect(refusal(Array("a\nok\n".utf8) + [0xFF]) == "line 3: it is not UTF-8 text (save it as CSV UTF-8)")
        #expect(refusal(Array("a\n\u{0}\n".utf8))?.hasPrefix("line 2: it is not UTF-8 text") == true)
        var small = CSVTable.Limits()
        small.maxBytes = 10
        small.maxRows = 2
        small.maxColumns = 3
        small.maxFieldBytes = 4
        #expect(refusal(Array("a,b,c,d\n".utf8), limits: small) == "line 1: the row has more than 3 fields")
        #expect(refusal(Array("a\n12345\n".utf8), limits: small) == "line 2: field 1 is over 4 bytes")
        #expect(refusal(Array("a\n1\n2\n3\n".utf8), limits: small) == "it has more than 2 rows")
        var fewFields = CSVTable.Limits()
        fewFields.maxFields = 5
        #expect(refusal(Array("a,b\n1,2\n3,4\n".utf8), limits: fewFields) == "it has more than 5 fields in all")
        #expect(refusal(Array("a\n1\n2\n3\n4\n5\n".utf8), limits: small) == "it is 12 bytes; a CSV file a form reads is at most 10 bytes")
    }

    @Test func aMillionColumnsStopAtTheLimit() {
        let wide = Array(String(repeating: "c,", count: 1_000_000).utf8)
        #expect(refusal(wide) == "line 1: the row has more than 1000 fields")
    }
}

/// What a definition names, and its CSV files read into it.
@Suite struct FormAttachmentsTests {
    static let definition: JSONValue = [
        "title": "Visit",
        "questions": [
            ["id": "village", "type": "select_one", "label": "Village", "choiceList": "villages.csv", "media": ["image": "map.png"]],
            ["id": "population", "type": "calculate", "label": "Population", "calculation": "pulldata('villages', 'population', 'name', ${village})"],
            ["id": "count", "type": "integer", "label": "Count", "constraint": ". <= pulldata('villages', 'population', 'name', ${village})"],
        ],
    ]
    static let villages = Array("name,label::English (en),label::Français (fr),population\nv1,Hill,Colline,120\nv2,Lake,Lac,40\n".utf8)

    @Test func everyNamedFileIsFoundOnceWithWhereItIsNamed() {
        #expect(FormAttachments.named(in: Self.definition) == [
            FormAttachments.Named(fileName: "map.png", path: "definition.questions[0].media.image"),
            FormAttachments.Named(fileName: "villages.csv", path: "definition.questions[0].choiceList"),
        ])
    }

    @Test func filesAreReadIntoChoicesAndLookupTablesAndAnswersCheckedAgainstThem() throws {
        let resolved = try FormAttachments.resolve(Self.definition, sent: ["villages.csv", "map.png"]) { _ in Self.villages }
        #expect(resolved["choiceLists"]?["villages.csv"] == [
            ["name": "v1", "label": ["English (en)": "Hill", "Français (fr)": "Colline"], "population": "120"],
            ["name": "v2", "label": ["English (en)": "Lake", "Français (fr)": "Lac"], "population": "40"],
        ])
        #expect(resolved["lookupTables"]?["villages.csv"]?["columns"] == ["name", "label::English (en)", "label::Français (fr)", "population"])
        let d = try SurveyDefinition.parse(resolved)
        #expect(d.validate(answers: ["village": "v2", "count": 40]).isValid)
        #expect(d.validate(answers: ["village": "v2", "count": 41]).errors == [FieldError(path: "answers.count", message: "does not meet the constraint . <= pulldata('villages', 'population', 'name', ${village})")])
        #expect(d.validate(answers: ["village": "v3"]).errors == [FieldError(path: "answers.village", message: "\"v3\" is not one of the choices")])
        // A key no row holds looks up the empty string, as in ODK Collect: the constraint is false.
        #expect(!d.validate(answers: ["count": 1]).isValid)
    }

    @Test func missingAndExtraFilesAreRefusedNamingEach() {
        do {
            _ = try FormAttachments.resolve(Self.definition, sent: ["villages.csv", "notes.txt"]) { _ in Self.villages }
            Issue.record("resolved")
        } catch {
            #expect((error as? ValidationErrors)?.errors == [
                FieldError(path: "attachments.map.png", message: "the form names map.png (at definition.questions[0].media.image), which was not sent"),
                FieldError(path: "attachments.notes.txt", message: "notes.txt was sent, but the form names no such file"),
            ])
        }
    }

    @Test func aChoiceListFileWithAColumnNamedMediaIsRefusedNamingIt() {
        let file = Array("name,label,media\nv1,Hill,hill.png\n".utf8)
        #expect(throws: ValidationErrors([FieldError(path: "attachments.villages.csv",
                                                     message: "villages.csv cannot be read as choices: its column media would stand for a choice's media files; give that column another name")])) {
            try FormAttachments.resolve(Self.definition, sent: ["villages.csv", "map.png"]) { _ in file }
        }
    }

    @Test func aPulldataColumnTheFileLacksIsRefusedAtPublishing() throws {
        var q = Self.definition
        q = ["title": "Visit", "questions": [["id": "p", "type": "calculate", "label": "P", "calculation": "pulldata('villages', 'people', 'name', 'v1')"]]]
        let resolved = try FormAttachments.resolve(q, sent: ["villages.csv"]) { _ in Self.villages }
        #expect(throws: ValidationErrors([FieldError(path: "definition.questions[0].calculation",
                                                     message: "pulldata reads the column people of villages.csv, which has no such column")])) {
            try SurveyDefinition.parse(resolved)
        }
    }

    @Test func aFiftyThousandRowListIsCheckedByOneLookUp() throws {
        var csv = "name,label,district\n"
        for i in 0..<50_000 { csv += "v\(i),Village \(i),d\(i % 40)\n" }
        let resolved = try FormAttachments.resolve(Self.definition, sent: ["villages.csv", "map.png"]) { _ in Array(csv.utf8) }
        let d = try SurveyDefinition.parse(["title": "Visit", "choiceLists": resolved["choiceLists"] ?? .null,
                                            "questions": [["id": "village", "type": "select_one", "label": "V", "choiceList": "villages.csv",
                                                           "choiceFilter": "district = 'd9'"]]])
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for i in stride(from: 9, to: 50_000, by: 40) { _ = d.validate(answers: ["village": .string("v\(i)")]) }
        }
        // 1,250 checks; a scan of the list each would be 31 million comparisons.
        #expect(elapsed < .seconds(1), "\(elapsed)")
        #expect(d.validate(answers: ["village": "v49929"]).isValid)
        #expect(!d.validate(answers: ["village": "v49930"]).isValid)
    }
}
