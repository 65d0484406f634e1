import Testing
@testable import SurveyDomain
@testable import SurveyForms

private func errors(_ json: String) throws -> [FieldError] {
    let v = try JSONParser.parse(json)
    do {
        _ = try SurveyDefinition.parse(v)
        return []
    } catch {
        return error.errors
    }
}

private func fe(_ path: String, _ message: String) -> FieldError { FieldError(path: path, message: message) }

@Suite struct SurveyDefinitionTests {
    static let full = #"""
    {"title": "Household survey", "extra": {"ignored": true}, "questions": [
      {"id": "name", "type": "text", "label": "Name", "required": true, "maxLength": 40, "hint": "ignored"},
      {"id": "age", "type": "integer", "label": "Age", "minimum": 0, "maximum": 120},
      {"id": "income", "type": "decimal", "label": "Income", "minimum": -0.5},
      {"id": "tenure", "type": "select_one", "label": "Tenure", "choices": ["own", "rent"]},
      {"id": "assets", "type": "select_multiple", "label": "Assets", "choices": ["car", "bike", "radio"], "required": false},
      {"id": "visit_date", "type": "date", "label": "Visit date"},
      {"id": "loc", "type": "geopoint", "label": "Location", "required": null},
      {"id": "photo", "type": "file", "label": "Photo", "accept": ["image/jpeg", "Image/PNG"], "maxBytes": 5000000}
    ]}
    """#

    @Test func parsesAValidDefinition() throws {
        let d = try SurveyDefinition.parse(try JSONParser.parse(Self.full))
        #expect(d.title == "Household survey")
        #expect(d.questions.map(\.id) == ["name", "age", "income", "tenure", "assets", "visit_date", "loc", "photo"])
        #expect(d.questions.map(\.type) == [.text, .integer, .decimal, .selectOne, .selectMultiple, .date, .geopoint, .file])
        let name = try #require(d.question(id: "name"))
        #expect(name.required && name.maxLength == 40 && name.label == "Name")
        let age = try #require(d.question(id: "age"))
        #expect(age.minimum == 0 && age.maximum == 120 && !age.required)
        #expect(d.question(id: "income")?.minimum == -0.5)
        #expect(d.question(id: "income")?.maximum == nil)
        #expect(d.question(id: "tenure")?.choices == ["own", "rent"])
        #expect(d.question(id: "loc")?.required == false)
        let photo = try #require(d.question(id: "photo"))
        #expect(photo.accept == ["image/jpeg", "image/png"])
        #expect(photo.maxBytes == 5_000_000)
        #expect(d.question(id: "nope") == nil)
    }

    @Test func acceptsMatching() throws {
        let d = try SurveyDefinition.parse(try JSONParser.parse(#"""
        {"title": "t", "questions": [
          {"id": "a", "type": "file", "label": "A", "accept": ["image/jpeg", "audio/*"]},
          {"id": "b", "type": "file", "label": "B", "accept": ["*/*"]}]}
        """#))
        let a = try #require(d.question(id: "a"))
        #expect(a.accepts(contentType: "image/jpeg"))
        #expect(a.accepts(contentType: "IMAGE/JPEG; charset=binary"))
        #expect(a.accepts(contentType: "audio/ogg"))
        #expect(!a.accepts(contentType: "image/png"))
        #expect(!a.accepts(contentType: "audiox/ogg"))
        #expect(!a.accepts(contentType: "garbage"))
        #expect(try #require(d.question(id: "b")).accepts(contentType: "application/pdf"))
    }

    @Test func topLevelErrors() throws {
        #expect(try errors("[]") == [fe("definition", "must be an object")])
        #expect(try errors("{}") == [fe("definition.title", "required"), fe("definition.questions", "required")])
        #expect(try errors(#"{"title": 5, "questions": {}}"#)
                == [fe("definition.title", "must be a string"), fe("definition.questions", "must be an array")])
        #expect(try errors(#"{"title": "  ", "questions": []}"#)
                == [fe("definition.title", "must not be empty"), fe("definition.questions", "must not be empty")])
        #expect(try errors(#"{"title": "", "questions": [1]}"#)
                == [fe("definition.title", "must not be empty"), fe("definition.questions[0]", "must be an object")])
    }

    @Test func questionBasics() throws {
        let json = #"""
        {"title": "t", "questions": [
          {},
          {"id": "1abc", "type": "number", "label": 3, "required": 1},
          {"id": "ok", "type": "text", "label": "x"},
          {"id": "ok", "type": "text", "label": "dup"},
          {"id": "a_b_C_9", "type": 7, "label": "x"},
          {"id": "has-dash", "type": "date", "label": "x"},
          {"id": "\#(String(repeating: "a", count: 65))", "type": "date", "label": "x"}
        ]}
        """#
        let idRule = "must be a letter followed by up to 63 letters, digits or underscores"
        #expect(try errors(json) == [
            fe("definition.questions[0].id", "required"),
            fe("definition.questions[0].type", "required"),
            fe("definition.questions[0].label", "required"),
            fe("definition.questions[1].id", idRule),
            fe("definition.questions[1].type", "must be one of text, integer, decimal, select_one, select_multiple, date, geopoint, file, time, datetime, geotrace, geoshape, barcode, calculate, note, group, repeat"),
            fe("definition.questions[1].label", "must be a string"),
            fe("definition.questions[1].required", "must be a boolean or an expression"),
            fe("definition.questions[3].id", "duplicate id \"ok\""),
            fe("definition.questions[4].type", "must be a string"),
            fe("definition.questions[5].id", idRule),
            fe("definition.questions[6].id", idRule),
        ])
        // 64 characters is the longest id.
        let longest = String(repeating: "b", count: 64)
        #expect(try errors(#"{"title": "t", "questions": [{"id": "\#(longest)", "type": "date", "label": ""}]}"#) == [])
    }

    @Test func duplicateIdReportedEvenWhenTheFirstIsInvalid() throws {
        let json = #"{"title": "t", "questions": [{"id": "q", "type": "bogus", "label": "x"}, {"id": "q", "type": "text", "label": "y"}]}"#
        #expect(try errors(json).map(\.path) == ["definition.questions[0].type", "definition.questions[1].id"])
    }

    @Test func typeSpecificRules() throws {
        let json = #"""
        {"title": "t", "questions": [
          {"id": "t1", "type": "text", "label": "x", "maxLength": 0},
          {"id": "t2", "type": "text", "label": "x", "maxLength": 2.5},
          {"id": "t3", "type": "text", "label": "x", "maxLength": "10"},
          {"id": "i1", "type": "integer", "label": "x", "minimum": 1.5, "maximum": "9"},
          {"id": "i2", "type": "integer", "label": "x", "minimum": 10, "maximum": 1},
          {"id": "d1", "type": "decimal", "label": "x", "minimum": 0.5, "maximum": 0.25},
          {"id": "d2", "type": "decimal", "label": "x", "minimum": 0.5, "maximum": 0.5},
          {"id": "s1", "type": "select_one", "label": "x"},
          {"id": "s2", "type": "select_one", "label": "x", "choices": []},
          {"id": "s3", "type": "select_multiple", "label": "x", "choices": ["a", "", 3, "a"]},
          {"id": "s4", "type": "select_multiple", "label": "x", "choices": "a,b"},
          {"id": "f1", "type": "file", "label": "x"},
          {"id": "f2", "type": "file", "label": "x", "accept": ["image/jpeg", "jpeg", "image/", "image/png; q=1", "a/b/c", 1], "maxBytes": -1},
          {"id": "f3", "type": "file", "label": "x", "accept": []},
          {"id": "g1", "type": "geopoint", "label": "x", "choices": 5, "maxLength": "ignored"}
        ]}
        """#
        #expect(try errors(json) == [
            fe("definition.questions[0].maxLength", "must be a positive integer"),
            fe("definition.questions[1].maxLength", "must be a positive integer"),
            fe("definition.questions[2].maxLength", "must be a positive integer"),
            fe("definition.questions[3].minimum", "must be an integer"),
            fe("definition.questions[3].maximum", "must be a number"),
            fe("definition.questions[4].maximum", "must not be less than minimum"),
            fe("definition.questions[5].maximum", "must not be less than minimum"),
            fe("definition.questions[7].choices", "required"),
            fe("definition.questions[8].choices", "must not be empty"),
            fe("definition.questions[9].choices[1]", "must not be empty"),
            fe("definition.questions[9].choices[2]", "must be a string"),
            fe("definition.questions[9].choices[3]", "duplicate choice"),
            fe("definition.questions[10].choices", "must be an array"),
            fe("definition.questions[11].accept", "required"),
            fe("definition.questions[12].accept[1]", "must be a MIME type such as image/jpeg"),
            fe("definition.questions[12].accept[2]", "must be a MIME type such as image/jpeg"),
            fe("definition.questions[12].accept[3]", "must be a MIME type such as image/jpeg"),
            fe("definition.questions[12].accept[4]", "must be a MIME type such as image/jpeg"),
            fe("definition.questions[12].accept[5]", "must be a string"),
            fe("definition.questions[12].maxBytes", "must be a positive integer"),
            fe("definition.questions[13].accept", "must not be empty"),
        ])
    }

    @Test func integerBoundsAcceptIntegralDoubles() throws {
        let d = try SurveyDefinition.parse(try JSONParser.parse(
            #"{"title": "t", "questions": [{"id": "n", "type": "integer", "label": "n", "minimum": -5.0, "maximum": 1e3}]}"#))
        #expect(d.questions[0].minimum == -5 && d.questions[0].maximum == 1000)
    }
}
