import SurveyDomain
import SurveyOperations
import SurveyStorage

/// The console map's points in a compact form: what the map draws and its popups show, and
/// nothing else — a tenth of the bytes of the GeoJSON export's features, which carry every
/// answer. One JSON object, written in pieces so it streams:
///
///     {"points":[[lat,lon,"responseId","clientSubmissionId",submitter,receivedAt,"reviewState"],…],
///      "lines":{"<point's index>":{"<geotrace or geoshape id>":answer,…},…},
///      "submitters":["name or id",…]}
///
/// `submitter` is an index into `submitters` (each collector's name, or their id without one),
/// `receivedAt` milliseconds since 1970. `lines` holds the `lineFields` answers (geotraces and
/// geoshapes) of the points that have any, by the point's index, as they are stored.
public struct MapPointsEncoder: Sendable {
    public let geoField: String
    public let lineFields: [String]
    private var count = 0
    private var submitters: [String: Int] = [:]
    private var submitterLabels: [String] = []
    private var lines: [(Int, [(String, JSONValue)])] = []

    private let wanted: [[UInt8]]

    public init(geoField: String, lineFields: [String]) {
        self.geoField = geoField
        self.lineFields = lineFields
        wanted = ([geoField] + lineFields).map { Array($0.utf8) }
    }

    /// The members of the answers document (a JSON object) whose keys are `wanted`, each value
    /// parsed alone: the other answers are skipped over, not parsed (a point is a few of the
    /// document's hundreds of bytes). A document this cannot follow is parsed whole.
    static func members(_ answers: String, _ wanted: [[UInt8]]) -> [String: JSONValue] {
        var text = answers
        return text.withUTF8 { b -> [String: JSONValue] in
            if let found = scan(b, wanted) { return found }
            return (try? JSONParser.parse(Array(b)))?.objectValue ?? [:]
        }
    }

    private static func scan(_ b: UnsafeBufferPointer<UInt8>, _ wanted: [[UInt8]]) -> [String: JSONValue]? {
        let n = b.count
        var i = 0
        func space() { while i < n, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 } }
        // Past the string starting at i (a quote); false when it does not end.
        func string() -> Bool {
            i += 1
            while i < n {
                if b[i] == UInt8(ascii: "\\") { i += 2; continue }
                if b[i] == UInt8(ascii: "\"") { i += 1; return true }
                i += 1
            }
            return false
        }
        // Past the value starting at i.
        func value() -> Bool {
            guard i < n else { return false }
            switch b[i] {
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while i < n {
                    switch b[i] {
                    case UInt8(ascii: "\""): if !string() { return false }; continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 { i += 1; return true }
                    default: break
                    }
                    i += 1
                }
                return false
            default:
                while i < n, b[i] != UInt8(ascii: ","), b[i] != UInt8(ascii: "}"), b[i] != UInt8(ascii: "]"),
                      b[i] != 0x20, b[i] != 0x0A, b[i] != 0x0D, b[i] != 0x09 { i += 1 }
                return true
            }
        }
        var found: [String: JSONValue] = [:]
        space()
        guard i < n, b[i] == UInt8(ascii: "{") else { return nil }
        i += 1
        space()
        if i < n, b[i] == UInt8(ascii: "}") { return found }
        while true {
            space()
            guard i < n, b[i] == UInt8(ascii: "\"") else { return nil }
            let keyStart = i + 1
            guard string() else { return nil }
            let key = UnsafeBufferPointer(rebasing: b[keyStart..<(i - 1)])
            if key.contains(UInt8(ascii: "\\")) { return nil }  // an escaped key: the whole parse decodes it
            space()
            guard i < n, b[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            space()
            let valueStart = i
            guard value() else { return nil }
            if wanted.contains(where: { $0.count == key.count && $0.elementsEqual(key) }) {
                guard let v = try? JSONParser.parse(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(b)[valueStart..<i])) else { return nil }
                found[String(decoding: key, as: UTF8.self)] = v
            }
            space()
            guard i < n else { return nil }
            if b[i] == UInt8(ascii: "}") { return found }
            guard b[i] == UInt8(ascii: ",") else { return nil }
            i += 1
        }
    }

    public static let head = Array(#"{"points":["#.utf8)

    /// The points written so far.
    public var points: Int { count }

    /// The response's point (with its separator), or nothing when it has none.
    public mutating func point(_ r: ExportedResponse, submitterName: String?, into out: inout [UInt8]) {
        let answers = Self.members(r.answers, wanted)
        guard let point = answers[geoField]?.objectValue, let lat = point["lat"]?.doubleValue, let lon = point["lon"]?.doubleValue else { return }
        let submitter: Int
        if let i = submitters[r.submitter] { submitter = i } else {
            submitter = submitterLabels.count
            submitters[r.submitter] = submitter
            submitterLabels.append(submitterName ?? r.submitter)
        }
        if count > 0 { out.append(UInt8(ascii: ",")) }
        CanonicalJSON.encode(.array([.number(lat), .number(lon), .string(r.responseId), .string(r.clientSubmissionId),
                                     .number(Double(submitter)), .number(Double(r.receivedAt)), .string(r.reviewState.rawValue)]), into: &out)
        let drawn = lineFields.compactMap { id in answers[id].flatMap { $0.isNull ? nil : (id, $0) } }
        if !drawn.isEmpty { lines.append((count, drawn)) }
        count += 1
    }

    /// The end: the lines and the submitters' labels.
    public func tail() -> [UInt8] {
        var out = Array(#"],"lines":{"#.utf8)
        for (n, (i, members)) in lines.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            out += Array("\"\(i)\":".utf8)
            out += CanonicalJSON.encodeObject(members)
        }
        out += Array(#"},"submitters":"#.utf8)
        CanonicalJSON.encode(.array(submitterLabels.map { .string($0) }), into: &out)
        out += Array("}\n".utf8)
        return out
    }
}

/// The console map's points (`MapPointsEncoder`) of an export.
public final class MapPointsProducer: ExportProducer {
    private let export: Export
    private var encoder: MapPointsEncoder
    private var started = false

    public init(_ export: Export, geoField: String, lineFields: [String]) {
        self.export = export
        encoder = MapPointsEncoder(geoField: geoField, lineFields: lineFields)
    }

    public func produce(into out: inout [UInt8]) throws -> Bool {
        if !started { started = true; out += MapPointsEncoder.head }
        while out.count < chunk {
            guard let r = try export.next() else {
                out += encoder.tail()
                close()
                return false
            }
            encoder.point(r, submitterName: export.submitterNames[r.submitter], into: &out)
        }
        return true
    }

    public func close() { export.close() }
}
