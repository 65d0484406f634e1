import SurveyDomain

/// The part of the map a page shows: its zoom level and its box, as the clusters route reads them
/// (`zoom=Z&bbox=west,south,east,north`, degrees). Read strictly: a zoom is a whole number from 0
/// to `maxZoom`; the box four finite numbers with south ≤ north within [-90, 90], west within
/// [-180, 180] and west ≤ east ≤ west + 360 (an east beyond 180 is a view across the
/// antimeridian). Anything else is refused with the field at fault, never guessed at.
public struct MapView: Sendable, Equatable {
    /// The highest zoom a view may ask for (the page's map stops at 19).
    public static let maxZoom = 22

    public let zoom: Int
    public let west: Double
    public let south: Double
    public let east: Double
    public let north: Double

    public init(zoom: Int, west: Double, south: Double, east: Double, north: Double) throws {
        func refuse(_ path: String, _ message: String) -> ApiError {
            ApiError(.validationFailed, "The map's view cannot be read: \(path) \(message).", errors: [FieldError(path: path, message: message)])
        }
        guard (0...Self.maxZoom).contains(zoom) else { throw refuse("zoom", "must be a whole number from 0 to \(Self.maxZoom)") }
        guard [west, south, east, north].allSatisfy(\.isFinite) else { throw refuse("bbox", "must be four finite numbers") }
        guard (-90...90).contains(south), (-90...90).contains(north), south <= north else {
            throw refuse("bbox", "must have south ≤ north, both from -90 to 90")
        }
        guard (-180...180).contains(west), west <= east, east <= west + 360 else {
            throw refuse("bbox", "must have west from -180 to 180 and west ≤ east ≤ west + 360")
        }
        self.zoom = zoom
        self.west = west; self.south = south; self.east = east; self.north = north
    }

    /// The view of a query's `zoom` and `bbox` (both required).
    public init(zoom: String?, bbox: String?) throws {
        func missing(_ path: String, _ message: String) -> ApiError {
            ApiError(.validationFailed, "The map's view cannot be read: \(path) \(message).", errors: [FieldError(path: path, message: message)])
        }
        guard let zoom, !zoom.isEmpty, zoom.count <= 2, zoom.allSatisfy({ $0.isASCII && $0.isNumber }), let z = Int(zoom) else {
            throw missing("zoom", "must be a whole number from 0 to \(Self.maxZoom)")
        }
        let parts = (bbox ?? "").split(separator: ",", omittingEmptySubsequences: false)
        let numbers = parts.compactMap { p -> Double? in
            // Digits, a sign, a point and an exponent only: no "nan", "inf" or spaces.
            guard !p.isEmpty, p.count <= 32, p.allSatisfy({ "0123456789+-.eE".contains($0) }) else { return nil }
            return Double(p)
        }
        guard parts.count == 4, numbers.count == 4 else {
            throw missing("bbox", "must be west,south,east,north: four numbers in degrees")
        }
        try self.init(zoom: z, west: numbers[0], south: numbers[1], east: numbers[2], north: numbers[3])
    }

    /// The whole world at zoom 0.
    public static let world = MapView(unchecked: 0, -180, -90, 180, 90)

    private init(unchecked zoom: Int, _ west: Double, _ south: Double, _ east: Double, _ north: Double) {
        self.zoom = zoom
        self.west = west; self.south = south; self.east = east; self.north = north
    }
}
