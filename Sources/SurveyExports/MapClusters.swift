import Foundation
import SurveyDomain

/// The points of a `MapPointList` inside a view, grouped as the console map draws them: a grid of
/// `cellSize` × `cellSize` pixels of Web Mercator at the view's zoom (the 80 px of
/// Leaflet.markercluster's default radius), each cell with two points or more a cluster — its
/// count, the centre of its points and their box — and each cell with one its point. From zoom
/// `singlyFrom` up (where a cluster holds points at about one spot) every point comes singly.
/// The counts add up to the points in the view's box. One pass over the list's arrays: about
/// 100,000 points in a few milliseconds.
///
/// A view across the antimeridian (east > 180) holds a point west of its west edge at its
/// longitude + 360, and gives it (and its cluster) there, where the page draws it.
public struct MapClusters: Sendable {
    public static let cellSize = 80.0
    public static let singlyFrom = 18

    public struct Cluster: Sendable, Equatable {
        public let count: Int
        public let lat: Double
        public let lon: Double
        public let south: Double
        public let west: Double
        public let north: Double
        public let east: Double
    }

    public let view: MapView
    public private(set) var clusters: [Cluster] = []
    /// The single points: an index into the list, and the longitude to draw it at.
    public private(set) var points: [(index: Int, lon: Double)] = []
    /// The points in the view: the clusters' counts and the single points.
    public var inView: Int { clusters.reduce(points.count) { $0 + $1.count } }

    public init(_ list: MapPointList, _ view: MapView) {
        self.view = view
        let scale = 256 * pow(2, Double(view.zoom))
        let lat = list.lat, lon = list.lon, y = list.mercatorY
        let singly = view.zoom >= Self.singlyFrom
        struct Cell {
            var count = 0, first = 0
            var x = 0.0, y = 0.0
            var south = 90.0, west = Double.infinity, north = -90.0, east = -Double.infinity
        }
        var cells: [Cell] = []
        var cellOf: [Int64: Int] = [:]
        for i in 0..<lat.count {
            let la = lat[i]
            guard la >= view.south && la <= view.north else { continue }
            var lo = lon[i]
            if lo < view.west { lo += 360 }
            guard lo <= view.east else { continue }
            if singly { points.append((i, lo)); continue }
            let px = (lo + 180) / 360 * scale, py = y[i] * scale
            let key = Int64((px / Self.cellSize).rounded(.down)) << 32 | Int64((py / Self.cellSize).rounded(.down))
            let c: Int
            if let found = cellOf[key] { c = found } else {
                c = cells.count
                cellOf[key] = c
                cells.append(Cell(first: i))
            }
            cells[c].count += 1
            cells[c].x += px
            cells[c].y += py
            if la < cells[c].south { cells[c].south = la }
            if la > cells[c].north { cells[c].north = la }
            if lo < cells[c].west { cells[c].west = lo }
            if lo > cells[c].east { cells[c].east = lo }
        }
        for c in cells {
            if c.count == 1 {
                points.append((c.first, c.west))
                continue
            }
            let n = Double(c.count)
            let centreLon = c.x / n / scale * 360 - 180
            let centreLat = MapPointList.latitude(mercatorY: c.y / n / scale)
            // The centre stays inside its points' box (rounding, and the poles' clamp).
            clusters.append(Cluster(count: c.count, lat: min(c.north, max(c.south, centreLat)), lon: min(c.east, max(c.west, centreLon)),
                                    south: c.south, west: c.west, north: c.north, east: c.east))
        }
    }

    /// The route's answer, one JSON object:
    ///
    ///     {"zoom":Z,"bbox":[w,s,e,n],"total":N,"inView":M,
    ///      "clusters":[[lat,lon,count,south,west,north,east],…],
    ///      "points":[[lat,lon,"responseId","clientSubmissionId",submitter,receivedAt,"reviewState"],…],
    ///      "submitters":["name or id",…],"bounds":[south,west,north,east] or null
    ///      [,"lines":{"responseId":{"<geotrace or geoshape id>":answer,…},…}]}
    ///
    /// `total` is every point of the list (the located responses under the filter, wherever they
    /// are), `inView` the counts' sum; a point as in `MapPointsEncoder` (its submitter an index into
    /// `submitters`, named by `names`). `lines`, when asked for, holds every point's lines and
    /// shapes, in the view or not (the page draws them once).
    public func json(_ list: MapPointList, names: [String: String], lines withLines: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256 + clusters.count * 80 + points.count * 140)
        func number(_ d: Double) { CanonicalJSON.encode(.number(d), into: &out) }
        func numbers(_ ds: [Double]) {
            out.append(UInt8(ascii: "["))
            for (k, d) in ds.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                number(d)
            }
            out.append(UInt8(ascii: "]"))
        }
        out += Array(#"{"zoom":"#.utf8)
        number(Double(view.zoom))
        out += Array(#","bbox":"#.utf8)
        numbers([view.west, view.south, view.east, view.north])
        out += Array(#","total":"#.utf8)
        number(Double(list.count))
        out += Array(#","inView":"#.utf8)
        number(Double(inView))
        out += Array(#","clusters":["#.utf8)
        for (k, c) in clusters.enumerated() {
            if k > 0 { out.append(UInt8(ascii: ",")) }
            numbers([c.lat, c.lon, Double(c.count), c.south, c.west, c.north, c.east])
        }
        out += Array(#"],"points":["#.utf8)
        for (k, p) in points.enumerated() {
            if k > 0 { out.append(UInt8(ascii: ",")) }
            let i = p.index
            CanonicalJSON.encode(.array([.number(list.lat[i]), .number(p.lon), .string(list.responseId(i)), .string(list.clientSubmissionId(i)),
                                         .number(Double(list.submitter[i])), .number(Double(list.receivedAt[i])),
                                         .string(list.reviewState(i).rawValue)]), into: &out)
        }
        out += Array(#"],"submitters":"#.utf8)
        CanonicalJSON.encode(.array(list.submitterIds.map { .string(names[$0] ?? $0) }), into: &out)
        out += Array(#","bounds":"#.utf8)
        if let b = list.bounds { numbers([b.south, b.west, b.north, b.east]) } else { out += Array("null".utf8) }
        if withLines {
            out += Array(#","lines":{"#.utf8)
            for (k, i) in list.lines.keys.sorted().enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                CanonicalJSON.encode(.string(list.responseId(i)), into: &out)
                out.append(UInt8(ascii: ":"))
                out += list.lines[i] ?? Array("{}".utf8)
            }
            out.append(UInt8(ascii: "}"))
        }
        out += Array("}\n".utf8)
        return out
    }
}
