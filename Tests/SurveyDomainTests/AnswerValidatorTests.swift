import Testing
@testable import SurveyDomain
@testable import SurveyForms

private let definition: SurveyDefinition = {
    let json = #"""
    {"title": "All types", "questions": [
      {"id": "name", "type": "text", "label": "Name", "required": true, "maxLength": 5},
      {"id": "note", "type": "text", "label": "Note"},
      {"id": "age", "type": "integer", "label": "Age", "minimum": 0, "maximum": 120},
      {"id": "count", "type": "integer", "label": "Count"},
      {"id": "weight", "type": "decimal", "label": "Weight", "minimum": 0.5, "maximum": 300.25},
      {"id": "tenure", "type": "select_one", "label": "Tenure", "choices": ["own", "rent"]},
      {"id": "assets", "type": "select_multiple", "label": "Assets", "choices": ["car", "bike", "radio"]},
      {"id": "crops", "type": "select_multiple", "label": "Crops", "choices": ["maize", "rice"], "required": true},
      {"id": "visited", "type": "date", "label": "Visited"},
      {"id": "loc", "type": "geopoint", "label": "Location"},
      {"id": "photo", "type": "file", "label": "Photo", "accept": ["image/jpeg"]},
      {"id": "scan", "type": "file", "label": "Scan", "accept": ["application/pdf"]}
    ]}
    """#
    return try! SurveyDefinition.parse(try! JSONParser.parse(json))
}()

/// Checks one answer for `id` on top of an otherwise valid minimal set of answers.
private func problem(_ id: String, _ answerJSON: String) -> [FieldError] {
    var answers = try! JSONParser.parse(#"{"name": "Ann", "crops": ["rice"]}"#).objectValue!
    answers[id] = try! JSONParser.parse(answerJSON)
    return definition.validate(answers: .object(answers)).errors
}

private func expectValid(_ id: String, _ answers: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    for a in answers {
        #expect(problem(id, a) == [], "\(id) = \(a)", sourceLocation: sourceLocation)
    }
}

private func expectInvalid(_ id: String, _ cases: [(String, String)], sourceLocation: SourceLocation = #_sourceLocation) {
    for (a, message) in cases {
        #expect(problem(id, a) == [FieldError(path: "answers.\(id)", message: message)], "\(id) = \(a)",
                sourceLocation: sourceLocation)
    }
}

@Suite struct AnswerValidatorTests {
    @Test func completeValidAnswers() throws {
        let answers = try JSONParser.parse(#"""
        {"name": "Zoë", "note": "", "age": 42, "count": -3, "weight": 72.5, "tenure": "own",
         "assets": ["car", "radio"], "crops": ["maize"], "visited": "2024-02-29",
         "loc": {"lat": 52.37, "lon": 4.89, "accuracy": 12.5},
         "photo": {"clientUploadId": "0f8fad5b-d9cb-469f-a165-70867728950e"},
         "scan": {"clientUploadId": "scan:0001.pdf"}}
        """#)
        let check = definition.validate(answers: answers)
        #expect(check == AnswerCheck(errors: [], fileAnswers: [
            FileAnswer(questionId: "photo", clientUploadId: "0f8fad5b-d9cb-469f-a165-70867728950e"),
            FileAnswer(questionId: "scan", clientUploadId: "scan:0001.pdf"),
        ]))
        #expect(check.isValid)
    }

    @Test func answersMustBeAnObject() {
        for bad: JSONValue in [[], "x", nil, 1] {
            #expect(definition.validate(answers: bad).errors == [FieldError(path: "answers", message: "must be an object")])
        }
    }

    @Test func requiredUnknownAndOrdering() throws {
        let check = definition.validate(answers: try JSONParser.parse(#"{"zeta": 1, "age": "x", "alpha": null, "crops": null}"#))
        #expect(check.errors == [
            FieldError(path: "answers.name", message: "required"),
            FieldError(path: "answers.age", message: "must be an integer"),
            FieldError(path: "answers.crops", message: "required"),
            FieldError(path: "answers.alpha", message: "unknown question"),
            FieldError(path: "answers.zeta", message: "unknown question"),
        ])
        #expect(check.fileAnswers == [])
        #expect(!check.isValid)
    }

    @Test func optionalQuestionsMayBeNullOrMissing() throws {
        let check = definition.validate(answers: try JSONParser.parse(
            #"{"name": "A", "crops": ["rice"], "note": null, "photo": null, "loc": null, "age": null}"#))
        #expect(check == AnswerCheck())
    }

    @Test func text() {
        expectValid("name", [#""Ann""#, #""12345""#, #""ééééé""#, #""👩‍👩‍👧‍👦abcd""#])
        expectInvalid("name", [
            (#""123456""#, "must be at most 5 characters"),
            (#""""#, "required"),
            ("5", "must be a string"),
            ("null", "required"),
        ])
        expectValid("note", [#""""#, "\"\(String(repeating: "x", count: 10_000))\""])
        expectInvalid("note", [("true", "must be a string"), (#"["a"]"#, "must be a string")])
    }

    @Test func integer() {
        expectValid("age", ["0", "120", "42", "42.0", "1e2"])
        expectInvalid("age", [
            ("-1", "must be at least 0"),
            ("121", "must be at most 120"),
            ("4.5", "must be an integer"),
            (#""42""#, "must be an integer"),
            ("true", "must be an integer"),
        ])
        expectValid("count", ["-9007199254740992", "9007199254740992"])
        expectInvalid("count", [("1e300", "must be an integer")])
    }

    @Test func decimal() {
        expectValid("weight", ["0.5", "300.25", "72", "1e2"])
        expectInvalid("weight", [
            ("0.49", "must be at least 0.5"),
            ("300.26", "must be at most 300.25"),
            (#""72.5""#, "must be a number"),
            ("{}", "must be a number"),
        ])
    }

    @Test func selectOne() {
        expectValid("tenure", [#""own""#, #""rent""#])
        expectInvalid("tenure", [
            (#""Own""#, #""Own" is not one of the choices"#),
            (#"["own"]"#, "must be a string"),
            ("1", "must be a string"),
        ])
    }

    @Test func selectMultiple() {
        expectValid("assets", ["[]", #"["car"]"#, #"["radio", "car", "bike"]"#])
        expectInvalid("assets", [
            (#"["car", "boat"]"#, #""boat" is not one of the choices"#),
            (#"["car", "car"]"#, #""car" is chosen more than once"#),
            (#"["car", 1]"#, "must be an array of choices"),
            (#""car""#, "must be an array of choices"),
        ])
        expectInvalid("crops", [("[]", "required")])
    }

    @Test func date() {
        expectValid("visited", [#""2024-02-29""#, #""2000-02-29""#, #""1999-12-31""#, #""2023-01-01""#, #""0001-01-01""#])
        expectInvalid("visited", [
            (#""2023-02-29""#, "2023-02-29 is not a calendar date"),
            (#""1900-02-29""#, "1900-02-29 is not a calendar date"),
            (#""2024-04-31""#, "2024-04-31 is not a calendar date"),
            (#""2024-13-01""#, "2024-13-01 is not a calendar date"),
            (#""2024-00-10""#, "2024-00-10 is not a calendar date"),
            (#""2024-01-00""#, "2024-01-00 is not a calendar date"),
            (#""2024-1-01""#, "must be a date YYYY-MM-DD"),
            (#""2024-01-01T00:00:00Z""#, "must be a date YYYY-MM-DD"),
            (#""2024/01/01""#, "must be a date YYYY-MM-DD"),
            (#""２０２４-01-01""#, "must be a date YYYY-MM-DD"),
            ("20240101", "must be a date YYYY-MM-DD"),
        ])
    }

    @Test func geopoint() {
        expectValid("loc", [
            #"{"lat": 0, "lon": 0}"#, #"{"lat": -90, "lon": 180, "accuracy": 0}"#,
            #"{"lat": 90, "lon": -180, "accuracy": 3.5}"#, #"{"lat": 1, "lon": 2, "accuracy": null}"#,
        ])
        expectInvalid("loc", [
            (#"[52, 4]"#, "must be an object {lat, lon, accuracy?}"),
            (#"{"lon": 4}"#, "lat must be a number"),
            (#"{"lat": "52", "lon": 4}"#, "lat must be a number"),
            (#"{"lat": 90.5, "lon": 4}"#, "lat must be between -90 and 90"),
            (#"{"lat": 52}"#, "lon must be a number"),
            (#"{"lat": 52, "lon": -180.1}"#, "lon must be between -180 and 180"),
            (#"{"lat": 52, "lon": 4, "accuracy": -1}"#, "accuracy must be a number >= 0"),
            (#"{"lat": 52, "lon": 4, "accuracy": "5"}"#, "accuracy must be a number >= 0"),
            (#"{"lat": 52, "lon": 4, "alt": 3}"#, #"unexpected key "alt""#),
        ])
    }

    @Test func file() {
        expectValid("photo", [#"{"clientUploadId": "abcdefgh"}"#, #"{"clientUploadId": "A-Z_a.z:09"}"#])
        let shape = #"must be {"clientUploadId": "..."}"#
        let idRule = "clientUploadId must be 8-128 characters of A-Z a-z 0-9 _ - : ."
        expectInvalid("photo", [
            (#""abcdefgh""#, shape),
            (#"{}"#, shape),
            (#"{"clientUploadId": 12345678}"#, shape),
            (#"{"clientUploadId": "abcdefgh", "size": 1}"#, shape),
            (#"{"clientUploadId": "short"}"#, idRule),
            (#"{"clientUploadId": "has space in it"}"#, idRule),
            ("{\"clientUploadId\": \"\(String(repeating: "a", count: 129))\"}", idRule),
        ])
    }

    @Test func fileAnswersOnlyForValidFileAnswers() throws {
        let check = definition.validate(answers: try JSONParser.parse(#"""
        {"name": "A", "crops": ["rice"], "photo": {"clientUploadId": "bad id"}, "scan": {"clientUploadId": "upload-0001"}}
        """#))
        #expect(check.errors.map(\.path) == ["answers.photo"])
        #expect(check.fileAnswers == [FileAnswer(questionId: "scan", clientUploadId: "upload-0001")])
    }
}
