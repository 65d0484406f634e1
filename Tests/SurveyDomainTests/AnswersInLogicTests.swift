import Testing
@testable import SurveyDomain
@testable import SurveyForms

/// What form logic reads of answers that are not text or numbers, as ODK writes them in an
/// instance: a point is `lat lon altitude accuracy`, a line or shape its points joined by `;`,
/// and a file question its file's name (here the clientUploadId that names the file).
@Suite struct AnswersInLogicTests {
    static let form = #"""
    {"title": "Site visit", "questions": [
      {"id": "here", "type": "geopoint", "label": "Here"},
      {"id": "here_text", "type": "text", "label": "Here, as text", "constraint": ". = ${here}"},
      {"id": "route", "type": "geotrace", "label": "Route"},
      {"id": "route_text", "type": "text", "label": "Route, as text", "constraint": ". = ${route}"},
      {"id": "field", "type": "geoshape", "label": "Field"},
      {"id": "corners", "type": "integer", "label": "Corners", "constraint": ". = count-selected(translate(${field}, ' ;', '_ '))"},
      {"id": "photo", "type": "file", "label": "Photo", "accept": ["image/jpeg"]},
      {"id": "caption", "type": "text", "label": "Caption", "relevant": "${photo} != ''", "constraint": "contains(., ${photo})"}
    ]}
    """#

    private func errors(_ answers: String) throws -> [FieldError] {
        let d = try SurveyDefinition.parse(try JSONParser.parse(Self.form))
        return d.validate(answers: try JSONParser.parse(answers)).errors
    }

    private func fe(_ path: String, _ message: String) -> FieldError { FieldError(path: path, message: message) }

    @Test func aPointReadsAsLatitudeLongitudeAltitudeAccuracy() throws {
        #expect(try errors(#"{"here": {"lat": 5.6, "lon": -0.2, "altitude": 61.5, "accuracy": 4}, "here_text": "5.6 -0.2 61.5 4"}"#) == [])
        // Altitude and accuracy the device did not give read as 0.
        #expect(try errors(#"{"here": {"lat": 5.6, "lon": -0.2}, "here_text": "5.6 -0.2 0 0"}"#) == [])
        #expect(try errors(#"{"here": {"lat": 5.6, "lon": -0.2}, "here_text": "5.6 -0.2"}"#)
                == [fe("answers.here_text", "does not meet the constraint . = ${here}")])
        // No point: the empty string.
        #expect(try errors(#"{"here_text": ""}"#) == [])
    }

    @Test func aLineReadsAsItsPointsJoinedBySemicolons() throws {
        let route = #"[{"lat": 1, "lon": 2}, {"lat": 1.5, "lon": 2.5, "altitude": 10, "accuracy": 3}]"#
        #expect(try errors(#"{"route": \#(route), "route_text": "1 2 0 0;1.5 2.5 10 3"}"#) == [])
        #expect(try errors(#"{"route": \#(route), "route_text": "1 2 0 0 1.5 2.5 10 3"}"#)
                == [fe("answers.route_text", "does not meet the constraint . = ${route}")])
    }

    @Test func aShapeReadsAsItsPointsJoinedBySemicolons() throws {
        let field = #"[{"lat": 0, "lon": 0}, {"lat": 0, "lon": 1}, {"lat": 1, "lon": 1}, {"lat": 0, "lon": 0}]"#
        #expect(try errors(#"{"field": \#(field), "corners": 4}"#) == [])
        #expect(try errors(#"{"field": \#(field), "corners": 3}"#)
                == [fe("answers.corners", "does not meet the constraint . = count-selected(translate(${field}, ' ;', '_ '))")])
    }

    @Test func aFileReadsAsTheNameItWasSentUnder() throws {
        #expect(try errors(#"{"photo": {"clientUploadId": "IMG-20261203-0001"}, "caption": "IMG-20261203-0001, the well"}"#) == [])
        #expect(try errors(#"{"photo": {"clientUploadId": "IMG-20261203-0001"}, "caption": "the well"}"#)
                == [fe("answers.caption", "does not meet the constraint contains(., ${photo})")])
        // Without a file the caption is not relevant.
        #expect(try errors(#"{"caption": "the well"}"#) == [fe("answers.caption", "not relevant")])
    }
}
