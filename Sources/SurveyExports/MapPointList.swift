import Foundation
import SurveyDomain
import SurveyStorage

/// A survey's located responses as the console map clusters them, held in memory: per point its
/// place and what its popup shows, in flat arrays (about 110 bytes a point, no object per point),
/// so that clustering a view of 100,000 points is a pass over arrays (`MapClusters`) and never a
/// read of the stored answers. Built once from an export's rows (`add`), in response-id order;
/// `MapPointLists` keeps a few of them.
///
/// A point is a response whose `geoField` answer has a numeric `lat` and `lon` (the compact
/// points' rule, `MapPointsEncoder`). Its longitude is kept in [-180, 180) (a stored 190 is
/// -170) and its latitude within [-90, 90], so every point lies in some view's box.
public struct MapPointList: Sendable {
    public let geoField: String
    public let lineFields: [String]
    private let wanted: [[UInt8]]

    public private(set) var lat: [Double] = []
    public private(set) var lon: [Double] = []
    /// Web Mercator y in [0, 1], 0 at the top (latitude 85.05°), for the pixel grid.
    public private(set) var mercatorY: [Double] = []
    public private(set) var receivedAt: [Int64] = []
    private var states: [UInt8] = []
    /// An index into `submitterIds`.
    public private(set) var submitter: [Int32] = []
    /// Each collector's user id, in order of their first point.
    public private(set) var submitterIds: [String] = []
    private var submitterIndex: [String: Int32] = [:]
    /// responseId and clientSubmissionId of every point, one after the other; `textEnds[2i]` and
    /// `textEnds[2i + 1]` end point i's two.
    private var text: [UInt8] = []
    private var textEnds: [Int] = []
    /// The `lineFields` answers of the points that have any, as a JSON object, by point.
    public private(set) var lines: [Int: [UInt8]] = [:]
    /// The box of every point: south, west, north, east (nil without points).
    public private(set) var bounds: (south: Double, west: Double, north: Double, east: Double)?

    public init(geoField: String, lineFields: [String]) {
        self.geoField = geoField
        self.lineFields = lineFields
        wanted = ([geoField] + lineFields).map { Array($0.utf8) }
    }

    public var count: Int { lat.count }

    /// Adds the response's point, when it has one.
    public mutating func add(_ r: ExportedResponse) {
        let answers = MapPointsEncoder.members(r.answers, wanted)
        guard let point = answers[geoField]?.objectValue, let la = point["lat"]?.doubleValue, let lo = point["lon"]?.doubleValue,
              la.isFinite, lo.isFinite else { return }
        let latitude = min(90, max(-90, la)), longitude = Self.wrapped(lo)
        let index = count
        lat.append(latitude)
        lon.append(longitude)
        mercatorY.append(Self.mercatorY(latitude))
        receivedAt.append(r.receivedAt)
        states.append(UInt8(ReviewState.allCases.firstIndex(of: r.reviewState) ?? 0))
        if let s = submitterIndex[r.submitter] { submitter.append(s) } else {
            let s = Int32(submitterIds.count)
            submitterIndex[r.submitter] = s
            submitterIds.append(r.submitter)
            submitter.append(s)
        }
        text += r.responseId.utf8
        textEnds.append(text.count)
        text += r.clientSubmissionId.utf8
        textEnds.append(text.count)
        let drawn = lineFields.compactMap { id in answers[id].flatMap { $0.isNull ? nil : (id, $0) } }
        if !drawn.isEmpty { lines[index] = CanonicalJSON.encodeObject(drawn) }
        if let b = bounds {
            bounds = (min(b.south, latitude), min(b.west, longitude), max(b.north, latitude), max(b.east, longitude))
        } else {
            bounds = (latitude, longitude, latitude, longitude)
        }
    }

    public func responseId(_ i: Int) -> String {
        String(decoding: text[(i == 0 ? 0 : textEnds[2 * i - 1])..<textEnds[2 * i]], as: UTF8.self)
    }

    public func clientSubmissionId(_ i: Int) -> String {
        String(decoding: text[textEnds[2 * i]..<textEnds[2 * i + 1]], as: UTF8.self)
    }

    public func reviewState(_ i: Int) -> ReviewState {
        let all = ReviewState.allCases, s = Int(states[i])
        return s < all.count ? all[s] : ReviewState.none
    }

    /// A longitude in [-180, 180).
    static func wrapped(_ lon: Double) -> Double {
        guard lon < -180 || lon >= 180 else { return lon }
        let w = (lon + 180).truncatingRemainder(dividingBy: 360)
        return (w < 0 ? w + 360 : w) - 180
    }

    /// The latest latitude Web Mercator shows (its square world's edge).
    static let mercatorLimit = 85.051_128_779_806_59

    /// Web Mercator y of a latitude, in [0, 1] (0 at the top).
    static func mercatorY(_ lat: Double) -> Double {
        let la = min(mercatorLimit, max(-mercatorLimit, lat)) * Double.pi / 180
        return min(1, max(0, 0.5 - log(tan(Double.pi / 4 + la / 2)) / (2 * Double.pi)))
    }

    /// The latitude of a Web Mercator y.
    static func latitude(mercatorY y: Double) -> Double {
        atan(sinh(Double.pi * (1 - 2 * y))) * 180 / Double.pi
    }

    /// About the bytes the list holds (for the cache's bound).
    public var bytes: Int {
        count * (8 * 4 + 1 + 4 + 16) + text.count + lines.values.reduce(0) { $0 + $1.count + 48 } + submitterIds.reduce(0) { $0 + $1.utf8.count + 32 }
    }
}
