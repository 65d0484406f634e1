import Foundation
import SurveyDomain
import SurveyStorage
import Testing
@testable import SurveyExports

/// The map's compact points read a stored answers document's location (and lines) without
/// parsing the rest: they must find exactly what a whole parse finds, whatever the other answers
/// hold, and write a document the page can read.
@Suite struct MapPointsEncoderTests {
    static let documents: [JSONValue] = [
        ["where": ["lat": 52.01, "lon": 4.35, "accuracy": 3]],
        ["a": "}{][\",\\", "where": ["lat": -3.5, "lon": 39.25], "z": [["where": ["lat": 1, "lon": 1]]]],
        ["members": [["name": "x\"y}", "where": "no"]], "path": [["lat": 1, "lon": 2], ["lat": 3, "lon": 4]],
         "where": ["lat": 0, "lon": -0.5], "zz": nil],
        ["note": "where", "n": 1.5e-7, "t": true, "u": false, "v": nil],
        ["where": "not a point"],
        [:],
    ]

    @Test func theMembersReadAloneEqualAWholeParse() throws {
        let wanted = ["where", "path"].map { Array($0.utf8) }
        for doc in Self.documents {
            let text = CanonicalJSON.string(doc)
            let whole = try #require(try JSONParser.parse(text).objectValue)
            let read = MapPointsEncoder.members(text, wanted)
            #expect(read == whole.filter { $0.key == "where" || $0.key == "path" }, "\(text)")
            // Not canonical (spaces, escaped key): the same.
            let spaced = " { " + text.dropFirst().replacingOccurrences(of: "\":", with: "\" : ").replacingOccurrences(of: ",\"", with: " , \"")
            #expect(MapPointsEncoder.members(spaced, wanted) == read, "\(spaced)")
        }
        #expect(MapPointsEncoder.members(#"{"wh\u0065re":{"lat":1,"lon":2}}"#, wanted)["where"] == ["lat": 1, "lon": 2])
        #expect(MapPointsEncoder.members("[1]", wanted).isEmpty)
    }

    @Test func aDocumentOfPointsLinesAndCollectors() throws {
        var encoder = MapPointsEncoder(geoField: "where", lineFields: ["path"])
        var out = MapPointsEncoder.head
        for (i, doc) in Self.documents.enumerated() {
            let r = ExportedResponse(responseId: "rsp_\(i)", clientSubmissionId: "c\"\(i)", surveyVersionId: "sv_1", submitter: "usr_\(i % 2)",
                                     receivedAt: 1_700_000_000_000 + Int64(i), capturedAt: nil, reviewState: .submitted, revision: 1,
                                     fieldTaskId: nil, answers: CanonicalJSON.string(doc))
            encoder.point(r, submitterName: i % 2 == 0 ? "Ana \"A\"" : nil, into: &out)
        }
        out += encoder.tail()
        let doc = try JSONParser.parse(out)
        let points = try #require(doc["points"]?.arrayValue)
        #expect(encoder.points == 3 && points.count == 3)
        #expect(points[1] == [-3.5, 39.25, "rsp_1", "c\"1", 1, 1_700_000_000_001, "submitted"])
        #expect(points[2] == [0, -0.5, "rsp_2", "c\"2", 0, 1_700_000_000_002, "submitted"])
        #expect(doc["submitters"] == ["Ana \"A\"", "usr_1"])
        #expect(doc["lines"] == ["2": ["path": [["lat": 1, "lon": 2], ["lat": 3, "lon": 4]]]])
    }
}
