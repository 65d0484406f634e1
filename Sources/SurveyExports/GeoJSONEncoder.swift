import SurveyDomain

/// GeoJSON (RFC 7946): one FeatureCollection, written in pieces — the head, one Point feature per
/// response with a value for the geopoint question (`[lon, lat]`), the tail — so it streams.
/// `properties` holds the metadata columns and the other answers.
public struct GeoJSONEncoder: Sendable {
    public let geoField: String
    private var first = true

    public init(geoField: String) { self.geoField = geoField }

    public static let head = Array(#"{"type":"FeatureCollection","features":["#.utf8)
    public static let tail = Array("]}\n".utf8)

    /// The row's feature (with its separator), or nothing when it has no point.
    public mutating func feature(_ r: ExportRow, into out: inout [UInt8]) {
        guard let point = r.answers[geoField]?.objectValue, let lat = point["lat"]?.doubleValue, let lon = point["lon"]?.doubleValue else { return }
        var properties: [String: JSONValue] = [
            "responseId": .string(r.responseId), "clientSubmissionId": .string(r.clientSubmissionId),
            "surveyVersionId": .string(r.surveyVersionId), "submittedBy": .string(r.submittedBy),
            "receivedAt": .string(Timestamp.format(r.receivedAt)), "reviewState": .string(r.reviewState),
            "revision": .number(Double(r.revision)),
        ]
        if let n = r.versionNumber { properties["versionNumber"] = .number(Double(n)) }
        if let n = r.submitterName { properties["submitterName"] = .string(n) }
        if let c = r.capturedAt { properties["capturedAt"] = .string(Timestamp.format(c)) }
        if let t = r.fieldTaskId { properties["fieldTaskId"] = .string(t) }
        if let a = point["accuracy"], !a.isNull { properties["\(geoField).accuracy"] = a }
        // A file answer as its clientUploadId, as in the CSV: a GIS reads flat properties best.
        for (k, v) in r.answers where k != geoField { properties[k] = v.objectValue?["clientUploadId"] ?? v }
        let feature: JSONValue = ["type": "Feature", "geometry": ["type": "Point", "coordinates": [.number(lon), .number(lat)]],
                                  "properties": .object(properties)]
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        out += CanonicalJSON.encode(feature)
    }
}
