import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// The application: the store, the gate, the services and their routes, and the HTTP server.
public final class App: Sendable {
    public struct Configuration: Sendable {
        public var dataDir: String
        public var host: String = "127.0.0.1"
        public var port: UInt16 = 8080
        public var synchronous: String = "FULL"
        public var maxBodyBytes: Int = 1 << 20
        public var logRequests: Bool = true
        public init(dataDir: String) { self.dataDir = dataDir }

        public var databasePath: String { dataDir + "/surveyd.sqlite" }
        public var blobDir: String { dataDir + "/blobs" }
    }

    public let configuration: Configuration
    public let database: Database
    let gate: WriteGate
    let metrics = Metrics()
    private let server: HTTPServer

    /// Opens the data dir (creating it), migrates the database and prepares the routes.
    public init(_ configuration: Configuration) throws {
        self.configuration = configuration
        try FileManager.default.createDirectory(atPath: configuration.blobDir, withIntermediateDirectories: true)
        database = try Database(.init(path: configuration.databasePath, synchronous: configuration.synchronous))
        gate = WriteGate(database: database)
        var router = Router()
        let services = Services(database: database, gate: gate, metrics: metrics)
        services.register(into: &router)
        var http = HTTPServer.Configuration(host: configuration.host, port: configuration.port)
        http.maxBodyBytes = configuration.maxBodyBytes
        server = HTTPServer(configuration: http, router: router, log: RequestLog(enabled: configuration.logRequests),
                            errorMapper: storageApiError)
        let metrics = self.metrics
        server.observer = { route, status, seconds in metrics.request(route: route, status: status, seconds: seconds) }
    }

    public func start() throws { try server.start() }

    /// Serves one request in process (no socket), through the same routes and checks.
    public func respond(method: String, path: String, token: String? = nil, body: JSONValue? = nil) -> (status: Int, body: JSONValue?) {
        var headers: [String: String] = [:]
        if let token { headers["authorization"] = "Bearer \(token)" }
        let r = server.respond(method: method, path: path, headers: headers, body: body.map(CanonicalJSON.encode) ?? [])
        return (r.status, try? JSONParser.parse(r.body))
    }
    public var port: UInt16 { server.port }

    /// Answers in-flight requests, then closes connections and the database.
    public func stop() {
        server.stop()
        database.close()
    }
}
