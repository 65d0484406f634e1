import Foundation
import SurveyHTTP

/// Leaflet, and Leaflet.markercluster's styles, as Debian packages them (`libjs-leaflet`,
/// `libjs-leaflet.markercluster`, installed by scripts/setup.sh), read once from
/// `/usr/share/javascript/leaflet` (`SURVEYD_LEAFLET_DIR` elsewhere) and served by surveyd
/// itself under `/console/assets/leaflet/`: no script or style of the console comes from
/// another host. Only the files the map uses are served: markercluster's script is not one (the
/// server makes the clusters, `…/clusters.json`; the page draws them with markercluster's CSS
/// classes). A machine without the packages still serves the map page: it lists the points, and
/// says what to install.
struct MapAssets: Sendable {
    static let directory = ProcessInfo.processInfo.environment["SURVEYD_LEAFLET_DIR"] ?? "/usr/share/javascript/leaflet"
    static let files: [String: String] = [
        "leaflet.js": "text/javascript; charset=utf-8",
        "leaflet.css": "text/css; charset=utf-8", "MarkerCluster.css": "text/css; charset=utf-8",
        "MarkerCluster.Default.css": "text/css; charset=utf-8",
        "images/marker-icon.png": "image/png", "images/marker-icon-2x.png": "image/png", "images/marker-shadow.png": "image/png",
        "images/layers.png": "image/png", "images/layers-2x.png": "image/png",
    ]
    /// Each file's bytes, by its path under the directory.
    let bytes: [String: [UInt8]]
    /// The console's own map script (a resource of this module).
    let script: [UInt8]

    init() throws {
        var found: [String: [UInt8]] = [:]
        for name in Self.files.keys {
            if let data = FileManager.default.contents(atPath: Self.directory + "/" + name) { found[name] = Array(data) }
        }
        bytes = found
        guard let url = Bundle.module.url(forResource: "map", withExtension: "js", subdirectory: "Assets") else {
            throw TemplateError("map.js is missing from the bundle")
        }
        script = Array(try Data(contentsOf: url))
    }

    /// Whether every script and style the map needs is there.
    var complete: Bool { ["leaflet.js", "leaflet.css", "MarkerCluster.css", "MarkerCluster.Default.css"].allSatisfy { bytes[$0] != nil } }

    func response(_ name: String) -> HTTPResponse? {
        guard let type = Self.files[name], let body = bytes[name] else { return nil }
        return HTTPResponse(status: 200, headers: [("Content-Type", type), ("Cache-Control", "public, max-age=86400"),
                                                   ("X-Content-Type-Options", "nosniff")], body: body)
    }
}
