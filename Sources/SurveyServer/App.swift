import Foundation
import Synchronization
import SurveyConsole
import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage
import SurveyWebhooks
import SurveyXForm

/// The application: the store, the gate, the services and their routes, and the HTTP server.
public final class App: Sendable {
    public struct Configuration: Sendable {
        public var dataDir: String
        public var host: String = "127.0.0.1"
        public var port: UInt16 = 8080
        public var synchronous: String = "FULL"
        /// A PostgreSQL URI: the database lives there (several processes may share it) and the
        /// data dir keeps only this process's files. Nil: the SQLite file in the data dir.
        public var databaseURL: String?
        /// PostgreSQL: connections writing at once (`--database-writers`). Several processes on
        /// one database share its cores: fewer each keep the total near what one process needs.
        public var databaseWriters = 8
        public var maxBodyBytes: Int = 1 << 20
        public var maxFileBytes: Int = 100 << 20
        /// An XLSForm or XForm published as a version (a JSON definition keeps `maxBodyBytes`).
        public var maxFormBytes: Int = 10 << 20
        /// A version published with its files (the form and every file it names).
        public var maxFormUploadBytes: Int = 100 << 20
        /// pyxform's `xls2xform`, which converts XLSForms (`--pyxform`); by default the one
        /// `scripts/setup.sh` installs in `.build/venv-forms` beside the build.
        public var pyxform: String = XLSFormConverter.installedBesideExecutable
        /// Declared bytes of unfinished resumable uploads one collector may hold (1030 past it).
        public var maxUnfinishedUploadBytes: Int64 = 1 << 30
        public var maxKeyedInFlight: Int = 100
        /// Reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (`--trusted-proxy`).
        public var trustedProxies: Set<String> = []
        /// N polling threads with suspend/resume (default: one per core, at least 2); 0:
        /// libmicrohttpd's thread per connection (slower; see `HTTPServer`).
        public var httpThreads: UInt32 = HTTPServer.Configuration.defaultPollingThreads
        public var startupCheck: StartupCheck = .full
        /// Idempotency keys are kept at least this long (default 30 days), then purged.
        public var idempotencyRetentionDays: Int = 30
        /// How long an entity update waits for what it follows (its entity's create, the update
        /// before it in its phone's branch) before it applies all the same, marked `soft`.
        public var entityWaitDays: Int = 5
        public var logRequests: Bool = true
        /// The `process` label on every `/metrics` series (`--instance-name`); nil: this host's
        /// name and the port served, e.g. `node-2:8080` (stable across restarts, one per process).
        public var instanceName: String?
        /// Webhook targets in private, loopback and link-local ranges (on-premise receivers, tests).
        public var webhooksAllowPrivate: Bool = false
        /// The console map's tile URL template (`--map-tiles`); nil: no tiles, the points on a
        /// plain background. OpenStreetMap's standard tiles by default.
        public var mapTiles: String? = Console.MapTiles.openStreetMap.url
        /// What the map credits for its tiles (`--map-attribution`); OpenStreetMap's by default.
        public var mapAttribution: String?
        public var webhookRetrySchedule: RetrySchedule = .standard
        /// Server time (tests pass a `ManualClock` to move it).
        public var clock: any ServerClock = SystemClock()
        public init(dataDir: String) { self.dataDir = dataDir }

        public var layout: DataDirectory { DataDirectory(dataDir) }
    }

    public let configuration: Configuration
    public let database: Database
    /// Every operation, for every door (the HTTP routes today; the console and webhooks next).
    public let operations: Operations
    public let blobs: BlobStore
    private let dataDirLock: DataDirLock
    /// Shared by the tus routes and the expiry sweep (tests reach it to order a race).
    let uploadLocks = BusySet()
    /// What `/readyz` answers from (tests count its commits).
    let readiness: ReadinessProbe
    private let server: HTTPServer
    /// Delivers the webhook outbox, outside any request (tests wait for it to be idle).
    public let dispatcher: WebhookDispatcher

    /// Opens the data dir (creating it), migrates the database and prepares the routes.
    public init(_ configuration: Configuration) throws {
        self.configuration = configuration
        try FileManager.default.createDirectory(atPath: configuration.dataDir, withIntermediateDirectories: true)
        // Before anything is read or swept: a second server on this data dir is refused.
        dataDirLock = try DataDirLock(configuration.layout)
        if let problem = dataDirLock.problem { StandardError.line("surveyd: warning: \(problem)") }
        var storage = Database.Configuration(path: configuration.layout.database, synchronous: configuration.synchronous)
        storage.startupCheck = configuration.startupCheck
        storage.clock = configuration.clock
        storage.databaseURL = configuration.databaseURL
        storage.writers = configuration.databaseWriters
        database = try Database(storage)
        blobs = try BlobStore(configuration.layout, database: database)
        var limits = Operations.Limits()
        limits.maxFileBytes = configuration.maxFileBytes
        limits.maxFormBytes = configuration.maxFormBytes
        limits.maxFormUploadBytes = configuration.maxFormUploadBytes
        limits.maxJSONBodyBytes = configuration.maxBodyBytes
        limits.maxUnfinishedBytesPerCaller = configuration.maxUnfinishedUploadBytes
        limits.maxKeyedInFlight = configuration.maxKeyedInFlight
        limits.webhooksAllowPrivate = configuration.webhooksAllowPrivate
        operations = Operations(database: database, blobs: blobs, limits: limits,
                                forms: FormSources(converter: XLSFormConverter(executable: configuration.pyxform)))
        // Unfinished resumable uploads past their expiry, then leftovers of requests that never
        // committed (a crash, kill -9 mid-upload), go now.
        let expired = try ResumableUploadService.sweepExpired(database: database, blobs: blobs, busy: uploadLocks)
        if expired > 0 { StandardError.line("surveyd: removed \(expired) expired unfinished resumable upload(s)") }
        let swept = blobs.sweep(referencedBlobs: try database.read { try $0.referencedBlobHashes() },
                                livePartials: try database.read { try $0.liveResumableUploadIds() })
        if swept.temp + swept.blobs + swept.partials > 0 {
            StandardError.line("surveyd: removed \(swept.temp) temp, \(swept.blobs) unreferenced blob and \(swept.partials) stale partial files")
        }
        // Responses stored without summary facts (before surveyd kept them) get them now.
        let facts = try operations.summaryFactsBackfill.run()
        if facts > 0 { StandardError.line("surveyd: made the summary facts of \(facts) response(s)") }
        var deliveries = WebhookDispatcher.Configuration()
        deliveries.allowPrivate = configuration.webhooksAllowPrivate
        deliveries.schedule = configuration.webhookRetrySchedule
        dispatcher = WebhookDispatcher(database: database, configuration: deliveries)
        let database = self.database
        readiness = ReadinessProbe(clock: configuration.clock) { database.isWritable() }
        var router = Router()
        let services = Services(operations: operations, uploadLocks: uploadLocks, readiness: readiness, dispatcher: dispatcher)
        services.register(into: &router)
        let tiles = configuration.mapTiles.map { url in
            Console.MapTiles(url: url, attribution: configuration.mapAttribution
                             ?? (url == Console.MapTiles.openStreetMap.url ? Console.MapTiles.openStreetMap.attribution : ""))
        }
        let console = try Console(operations: operations, mapTiles: tiles)
        console.register(into: &router)
        ExportService(services: services).registerConsoleDownload(into: &router, console: console)
        EntityListService(services: services).registerConsoleDownload(into: &router, console: console)
        ExportService(services: services).registerConsolePoints(into: &router, console: console)
        var http = HTTPServer.Configuration(host: configuration.host, port: configuration.port)
        http.maxBodyBytes = configuration.maxBodyBytes
        http.pollingThreads = configuration.httpThreads
        http.trustedProxies = configuration.trustedProxies
        // A form's file parts go beside the uploads being received (same disk as the data).
        http.temporaryDirectory = configuration.layout.temp
        server = HTTPServer(configuration: http, router: router, log: RequestLog(enabled: configuration.logRequests),
                            errorMapper: storageApiError)
        // Start-up work (a migration's index build sorts in memory) leaves freed heap behind.
        HTTPServer.releaseFreedMemory()
        let metrics = operations.metrics
        server.observer = { route, status, seconds in metrics.request(route: route, status: status, seconds: seconds) }
    }

    public func start() throws {
        try server.start()
        operations.metrics.identify(processIdentity)
        dispatcher.start()
        scheduleHousekeeping()
    }

    private let housekeeping = DispatchQueue(label: "surveyd.housekeeping")
    /// Ticks once a second while the server runs; `stop` cancels it, which lets go of the
    /// database and the server its work holds (an app stopped in a test process frees its files).
    private let housekeepingTimer = Mutex<HousekeepingTimer?>(nil)

    /// Idempotency keys are kept for the retention period, then purged: now and every hour (with
    /// the in-flight claims a killed process left on PostgreSQL, and sign-in attempts past their window).
    private func scheduleHousekeeping() {
        let database = self.database
        let queue = housekeeping
        let retention = Int64(configuration.idempotencyRetentionDays) * 86_400_000
        @Sendable func purge() {
            _ = try? database.purgeIdempotencyKeys(olderThan: database.clock.nowMillis() - retention)
            try? database.keyedInFlight.purgeStale(now: database.clock.nowMillis())
            try? database.signInAttempts.purge(before: database.clock.nowMillis() - SignInThrottle().windowMillis)
        }
        // Expired unfinished resumable uploads free their bytes within ten minutes, and entity
        // updates that waited past their limit apply.
        let blobs = self.blobs, locks = uploadLocks
        let overdue = operations.overdueEntityChanges, wait = Int64(configuration.entityWaitDays) * 86_400_000
        @Sendable func sweepUploads() {
            _ = try? ResumableUploadService.sweepExpired(database: database, blobs: blobs, busy: locks)
        }
        // After a burst, give freed heap back to the system once the server has gone quiet
        // (glibc keeps it in per-thread arenas otherwise: ~60 MB idle after 64-connection load).
        let server = self.server
        let last = Mutex((count: -1, trimmed: true))
        @Sendable func trimWhenIdle() {
            let now = server.answered.load(ordering: .relaxed)
            let idle = last.withLock { state -> Bool in
                defer { state.count = now }
                if now != state.count { state.trimmed = false; return false }
                if state.trimmed { return false }
                state.trimmed = true
                return true
            }
            if idle { HTTPServer.releaseFreedMemory() }
        }
        let seconds = Atomic<Int>(0)
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: 1)
        timer.setEventHandler {
            let second = seconds.add(1, ordering: .relaxed).oldValue
            if second % 3600 == 0 { purge() }
            // Uploads were swept at start-up already; waiting entity updates are looked at now too.
            if second > 0 && second % 600 == 0 { sweepUploads() }
            if second % 600 == 0 { overdue.apply(waitedLongerThan: wait) }
            trimWhenIdle()
        }
        housekeepingTimer.withLock { $0 = HousekeepingTimer(timer) }
        timer.resume()
    }

    public typealias Answer = (status: Int, headers: [(String, String)], body: JSONValue?)

    /// Serves one request in process (no socket), through the same routes and checks.
    public func respond(method: String, path: String, token: String? = nil, headers: [String: String] = [:],
                        body: JSONValue? = nil) -> Answer {
        var headers = headers
        if let token { headers["authorization"] = "Bearer \(token)" }
        let r = server.respond(method: method, path: path, headers: headers, body: body.map(CanonicalJSON.encode) ?? [])
        return (r.status, r.headers, try? JSONParser.parse(r.body))
    }

    /// Every route with the access its door declared.
    var declaredRoutes: [(method: String, pattern: String, access: String)] { server.declaredRoutes }
    public var port: UInt16 { server.port }

    /// Who this process is on `/metrics` (once it listens, so a `--port 0` is the port it got).
    private var processIdentity: Metrics.Identity {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count - 1) == 0 ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "localhost"
        return Metrics.Identity(name: configuration.instanceName ?? "\(host):\(port)", hostname: host, pid: getpid(),
                                engine: configuration.databaseURL == nil ? "sqlite" : "postgresql", startedAt: Date().timeIntervalSince1970)
    }

    /// Answers in-flight requests, then closes connections and the database.
    public func stop() {
        housekeepingTimer.withLock { held in
            held?.timer.cancel()
            held = nil
        }
        server.stop()
        dispatcher.stop()
        database.close()
        dataDirLock.release()
    }
}

/// The housekeeping timer, to hold behind a lock: a dispatch source may be used from any thread,
/// which its type does not declare.
private final class HousekeepingTimer: @unchecked Sendable {
    let timer: any DispatchSourceTimer
    init(_ timer: any DispatchSourceTimer) { self.timer = timer }
}
