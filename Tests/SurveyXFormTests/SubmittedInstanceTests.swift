import SurveyForms
import Testing
@testable import SurveyXForm

/// A filled-in form as ODK Collect sends it, read into the answers the JSON API takes, and the
/// same check run on them.
@Suite struct SubmittedInstanceTests {
    static let definition = #"""
    {"title": "Walk", "formId": "walk", "questions": [
      {"id": "age", "type": "integer", "label": "Age"},
      {"id": "route", "type": "geotrace", "label": "Route"},
      {"id": "plot", "type": "geoshape", "label": "Plot"},
      {"id": "visits", "type": "repeat", "label": "Visit", "children": [{"id": "where", "type": "geotrace", "label": "Where"}]}
    ]}
    """#

    private func read(_ inner: String) throws -> (answers: JSONValue, errors: [FieldError]) {
        let d = try SurveyDefinition.parse(try JSONParser.parse(Self.definition))
        let xml = #"<?xml version="1.0"?><data id="walk" version="3">\#(inner)<meta><instanceID>uuid:7d1c</instanceID></meta></data>"#
        let instance = try SubmittedInstance(xml: Array(xml.utf8))
        #expect(instance.formId == "walk" && instance.version == "3" && instance.instanceID == "uuid:7d1c")
        let answers = instance.answers(for: d, uploadId: { $0 }).answers
        return (answers, d.validate(answers: answers).errors)
    }

    @Test func aLineAndAShapeAreReadAsTheirPoints() throws {
        let (answers, errors) = try read("""
            <route>5.6 -0.2 61.5 4; 5.7 -0.25 60 3;</route>\
            <plot>0 0;0 1;1 1;0 0</plot>\
            <visits><where>1 2;3 4 5</where></visits>
            """)
        #expect(answers["route"] == [["lat": 5.6, "lon": -0.2, "altitude": 61.5, "accuracy": 4],
                                     ["lat": 5.7, "lon": -0.25, "altitude": 60, "accuracy": 3]])
        #expect(answers["plot"] == [["lat": 0, "lon": 0], ["lat": 0, "lon": 1], ["lat": 1, "lon": 1], ["lat": 0, "lon": 0]])
        #expect(answers["visits"] == [["where": [["lat": 1, "lon": 2], ["lat": 3, "lon": 4, "altitude": 5]]]])
        #expect(errors == [])
    }

    /// A point that is not one keeps the line as text, so that the check names the question.
    @Test func aLineWithAPointThatIsNotOneIsRefusedByName() throws {
        let (answers, errors) = try read("<route>5.6 -0.2;north 3</route><plot>0 0;0 1;1 1;1 0</plot>")
        #expect(answers["route"] == "5.6 -0.2;north 3")
        #expect(errors.map(\.path) == ["answers.route", "answers.plot"])
        #expect(errors.last?.message == "must end where it starts (a closed shape)")
    }

    /// A question appears once in an instance; a second element of its name is an answer no node
    /// takes, refused rather than either value kept.
    @Test func aQuestionAnsweredTwiceIsRefused() throws {
        let (answers, errors) = try read("<age>34</age><age>35</age>")
        #expect(answers["age"] == "34 35")
        #expect(errors == [FieldError(path: "answers.age", message: "must be an integer")])
    }

    /// Elements are found by name wherever the app put them: in the form's order, shuffled, with a
    /// stray element between, a question's element missing, or one answered twice apart — the
    /// answers are the same as those of the form's order, and a second element still refused.
    @Test func elementsAreFoundInAnyOrder() throws {
        let route = "<route>5.6 -0.2;5.7 -0.25</route>", plot = "<plot>0 0;0 1;1 1;0 0</plot>", age = "<age>34</age>"
        let visits = "<visits><where>1 2;3 4</where></visits><visits><where>5 6;7 8</where></visits>"
        let (inOrder, errors) = try read(age + route + plot + visits)
        #expect(errors == [])
        #expect(inOrder["visits"]?.arrayValue?.count == 2)
        for shuffled in [plot + visits + age + route, visits + route + age + plot, age + "<stray>x</stray>" + route + plot + visits,
                         "<visits><where>1 2;3 4</where></visits>" + age + route + plot + "<visits><where>5 6;7 8</where></visits>"] {
            let (answers, _) = try read(shuffled)
            #expect(answers["age"] == inOrder["age"] && answers["route"] == inOrder["route"] && answers["plot"] == inOrder["plot"]
                    && answers["visits"] == inOrder["visits"], "\(shuffled)")
        }
        let (missing, _) = try read(route + plot + visits)
        #expect(missing["age"] == nil && missing["route"] == inOrder["route"])
        let (stray, _) = try read(age + "<stray>x</stray>" + route + plot)
        #expect(stray["stray"] == "x")
        let (twiceApart, twiceErrors) = try read(age + route + plot + "<age>35</age>")
        #expect(twiceApart["age"] == "34 35")
        #expect(twiceErrors == [FieldError(path: "answers.age", message: "must be an integer")])
    }

    /// Decimals as JavaRosa writes them (Java's `Double.toString`): an exponent after the digits.
    /// Nothing else Java or Swift would read, and nothing that overflows.
    @Test func numbersAreReadAsJavaRosaWritesThem() {
        for (text, value) in [("1.5E7", 15_000_000.0), ("1.23456789E8", 123_456_789), ("5.0E-4", 0.0005), ("-2.5e-3", -0.0025),
                              ("12", 12), ("-.5", -0.5), ("3.", 3), ("1E+2", 100)] {
            #expect(SubmittedInstance.number(text, fraction: true) == value, "\(text)")
        }
        for text in ["Infinity", "NaN", "inf", "0x1p3", "1E400", "1.5E", "E7", "1.5E7.0", "+1.5", "1e-", "--1", "1-2", "", ".", "-", "1.5E7", "2.5"] {
            #expect(SubmittedInstance.number(text, fraction: text == "1.5E7" || text == "2.5" ? false : true) == nil, "\(text)")
        }
        #expect(SubmittedInstance.number("2147483648", fraction: false) == 2_147_483_648)
    }

    /// An integer JavaRosa cannot hold (32 bits) is a problem the door reports at its path.
    @Test func anIntegerBeyondThirtyTwoBitsIsAProblemAtItsPath() throws {
        let d = try SurveyDefinition.parse(try JSONParser.parse(Self.definition))
        let xml = #"<data id="walk"><age>2147483648</age><visits><where>1 2;3 4</where></visits><meta><instanceID>uuid:7d1d</instanceID></meta></data>"#
        let read = try SubmittedInstance(xml: Array(xml.utf8)).answers(for: d, uploadId: { $0 })
        #expect(read.problems == [FieldError(path: "answers.age", message: "too large for an integer question (ODK apps hold -2147483648 to 2147483647)")])
        let fine = #"<data id="walk"><age>2147483647</age><meta><instanceID>uuid:7d1e</instanceID></meta></data>"#
        #expect(try SubmittedInstance(xml: Array(fine.utf8)).answers(for: d, uploadId: { $0 }).problems.isEmpty)
    }
}
