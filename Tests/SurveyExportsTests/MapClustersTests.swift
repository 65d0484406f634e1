import Foundation
import SurveyDomain
import SurveyStorage
import Testing
@testable import SurveyExports

/// The map's clusters of a view, made from the points kept in memory: the counts add up to the
/// points in the box at every zoom, a cluster's centre lies among its points, a view across the
/// antimeridian holds the points beyond it, and the kept lists stay within their bounds.
@Suite struct MapClustersTests {
    static func response(_ i: Int, lat: Double?, lon: Double?, lines: JSONValue? = nil) -> ExportedResponse {
        var answers: [String: JSONValue] = ["n": .number(Double(i))]
        if let lat, let lon { answers["where"] = ["lat": .number(lat), "lon": .number(lon)] }
        if let lines { answers["path"] = lines }
        return ExportedResponse(responseId: "rsp_\(i)", clientSubmissionId: "c\(i)", surveyVersionId: "sv_1", submitter: "usr_\(i % 3)",
                                receivedAt: 1_700_000_000_000 + Int64(i), capturedAt: nil, reviewState: i % 2 == 0 ? .submitted : .approved,
                                revision: 1, fieldTaskId: nil, answers: CanonicalJSON.string(.object(answers)))
    }

    /// A deterministic cloud: `n` points around (lat, lon) within `spread` degrees, a few exactly alike.
    static func list(_ n: Int, lat: Double = 10, lon: Double = 20, spread: Double = 8) -> MapPointList {
        var list = MapPointList(geoField: "where", lineFields: ["path"])
        var seed: UInt64 = 42
        func next() -> Double {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(seed >> 11) / Double(1 << 53)
        }
        for i in 0..<n {
            let same = i % 10 == 0
            list.add(response(i, lat: same ? lat : lat + (next() - 0.5) * spread, lon: same ? lon : lon + (next() - 0.5) * spread))
        }
        return list
    }

    static func inBox(_ list: MapPointList, _ v: MapView) -> Int {
        (0..<list.count).filter { i in
            let lon = list.lon[i] < v.west ? list.lon[i] + 360 : list.lon[i]
            return list.lat[i] >= v.south && list.lat[i] <= v.north && lon <= v.east
        }.count
    }

    @Test func theCountsAddUpToThePointsInTheBoxAtEveryZoom() throws {
        let list = Self.list(5_000)
        #expect(list.count == 5_000)
        for zoom in 0...MapView.maxZoom {
            for box in [(-180.0, -90.0, 180.0, 90.0), (15, 5, 22, 12), (19.99, 9.99, 20.01, 10.01), (-10, -10, 0, 0)] {
                let v = try MapView(zoom: zoom, west: box.0, south: box.1, east: box.2, north: box.3)
                let c = MapClusters(list, v)
                #expect(c.inView == Self.inBox(list, v), "zoom \(zoom) box \(box)")
                for k in c.clusters {
                    #expect(k.count >= 2)
                    #expect(k.lat >= k.south && k.lat <= k.north && k.lon >= k.west && k.lon <= k.east)
                    #expect(k.south >= v.south && k.north <= v.north && k.west >= v.west && k.east <= v.east)
                }
                if zoom >= MapClusters.singlyFrom { #expect(c.clusters.isEmpty && c.points.count == c.inView) }
            }
        }
        // The whole world at zoom 0 is a handful of cells; at zoom 12 many more, each smaller.
        let world = MapClusters(list, .world)
        #expect(world.clusters.count <= 2 && world.inView == 5_000)
        let close = MapClusters(list, try MapView(zoom: 12, west: -180, south: -90, east: 180, north: 90))
        #expect(close.clusters.count + close.points.count > 100)
        // The points exactly alike (every tenth) stay in one cluster below zoom 18.
        let same = MapClusters(list, try MapView(zoom: 17, west: 19.999, south: 9.999, east: 20.001, north: 10.001))
        #expect(same.clusters.contains { $0.count >= 500 && $0.south == $0.north && $0.lat == 10 && $0.lon == 20 })
    }

    @Test func aViewAcrossTheAntimeridianHoldsThePointsBeyondIt() throws {
        var list = MapPointList(geoField: "where", lineFields: [])
        list.add(Self.response(0, lat: 1, lon: 179.5))
        list.add(Self.response(1, lat: 1, lon: -179.5))
        list.add(Self.response(2, lat: 1, lon: 190))  // stored beyond 180: kept as -170
        list.add(Self.response(3, lat: 1, lon: 0))
        #expect(list.lon[2] == -170)
        let v = try MapView(zoom: 18, west: 170, south: -5, east: 200, north: 5)
        let c = MapClusters(list, v)
        #expect(Set(c.points.map { list.responseId($0.index) }) == ["rsp_0", "rsp_1", "rsp_2"])
        #expect(Set(c.points.map(\.lon)) == [179.5, 180.5, 190])
        let low = MapClusters(list, try MapView(zoom: 3, west: 170, south: -5, east: 200, north: 5))
        #expect(low.inView == 3 && low.clusters.allSatisfy { $0.west >= 170 && $0.east <= 200 })
    }

    @Test func theViewIsReadStrictly() throws {
        let ok = try MapView(zoom: "7", bbox: "-10.5,20,30,40.25")
        #expect(ok == (try MapView(zoom: 7, west: -10.5, south: 20, east: 30, north: 40.25)))
        for (zoom, bbox) in [(nil, "0,0,1,1"), ("7", nil), ("", "0,0,1,1"), ("07a", "0,0,1,1"), ("23", "0,0,1,1"), ("-1", "0,0,1,1"),
                             ("7", "0,0,1"), ("7", "0,0,1,1,"), ("7", "0,,1,1"), ("7", "nan,0,1,1"), ("7", "0,0,inf,1"), ("7", "1e400,0,1,1"),
                             ("7", "2,0,1,1"), ("7", "0,2,1,1"), ("7", "-181,0,1,1"), ("7", "0,-91,1,1"), ("7", "0,0,1,91"), ("7", "-10,0,351,1"),
                             ("7", " 0,0,1,1"), ("7", "0x10,0,1,1")] {
            #expect(throws: ApiError.self, "\(zoom ?? "nil") \(bbox ?? "nil")") { try MapView(zoom: zoom, bbox: bbox) }
        }
    }

    @Test func theAnswerNamesItsPointsAndLines() throws {
        var list = MapPointList(geoField: "where", lineFields: ["path"])
        list.add(Self.response(0, lat: 52, lon: 4, lines: [["lat": 1, "lon": 2], ["lat": 3, "lon": 4]]))
        list.add(Self.response(1, lat: nil, lon: nil, lines: [["lat": 5, "lon": 6]]))  // no location: not a point
        list.add(Self.response(2, lat: -3.5, lon: 39.25))
        let c = MapClusters(list, try MapView(zoom: 18, west: -180, south: -90, east: 180, north: 90))
        let doc = try JSONParser.parse(c.json(list, names: ["usr_0": "Ana \"A\""], lines: true))
        #expect(doc["total"] == 2 && doc["inView"] == 2 && doc["clusters"] == [])
        #expect(doc["points"] == [[52, 4, "rsp_0", "c0", 0, 1_700_000_000_000, "submitted"], [-3.5, 39.25, "rsp_2", "c2", 1, 1_700_000_000_002, "submitted"]])
        #expect(doc["submitters"] == ["Ana \"A\"", "usr_2"])
        #expect(doc["bounds"] == [-3.5, 4, 52, 39.25])
        #expect(doc["lines"] == ["rsp_0": ["path": [["lat": 1, "lon": 2], ["lat": 3, "lon": 4]]]])
        let without = try JSONParser.parse(MapClusters(list, .world).json(list, names: [:], lines: false))
        let one = without["clusters"]?.arrayValue ?? []
        #expect(without["lines"] == nil && without["points"] == [] && one.count == 1)
        let cluster = one.first?.arrayValue ?? []
        #expect(cluster.count == 7 && cluster.dropFirst(2) == [2, -3.5, 4, 52, 39.25], "\(cluster)")
        #expect(try JSONParser.parse(MapClusters(MapPointList(geoField: "where", lineFields: []), .world).json(
            MapPointList(geoField: "where", lineFields: []), names: [:], lines: true))["bounds"] == .null)
    }

    @Test func theKeptListsStayWithinTheirBoundsAndTheirMark() {
        let lists = MapPointLists(capacity: 3, maxPoints: 2_500)
        func key(_ s: String) -> MapPointLists.Key {
            MapPointLists.Key(orgId: "org", surveyId: s, geoField: "where", lineFields: [], filters: ["b": "2", "a": "1"], onlySubmitter: nil)
        }
        let mark = MapPointLists.Mark(rows: 1_000, sequence: 7)
        lists.keep(Self.list(1_000), key("a"), at: mark)
        lists.keep(Self.list(1_000), key("b"), at: mark)
        #expect(lists.list(key("a"), at: mark)?.count == 1_000)  // a used last: b goes first
        #expect(lists.list(key("a"), at: MapPointLists.Mark(rows: 1_000, sequence: 8)) == nil, "another mark: read again")
        #expect(lists.list(key("a"), at: MapPointLists.Mark(rows: 1_001, sequence: 7)) == nil)
        lists.keep(Self.list(1_000), key("c"), at: mark)  // 3,000 points: over 2,500
        #expect(lists.count == 2 && lists.list(key("b"), at: mark) == nil && lists.list(key("a"), at: mark) != nil)
        lists.keep(Self.list(3_000), key("d"), at: mark)  // larger than the bound: not kept
        #expect(lists.list(key("d"), at: mark) == nil && lists.count == 2)
        let other = MapPointLists.Key(orgId: "org", surveyId: "a", geoField: "where", lineFields: [], filters: ["a": "1", "b": "2"], onlySubmitter: "usr_1")
        #expect(lists.list(other, at: mark) == nil, "a collector's list is not everyone's")
        #expect(lists.list(MapPointLists.Key(orgId: "org", surveyId: "a", geoField: "where", lineFields: [], filters: ["a": "1", "b": "2"],
                                             onlySubmitter: nil), at: mark) != nil, "the filters in any order")
    }
}
