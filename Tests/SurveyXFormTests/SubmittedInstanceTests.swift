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
}
