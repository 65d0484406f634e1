import Foundation
import SurveyDomain
import SurveyServer
import SurveyStorage
import SurveyWebhooks

enum CLI {
    static let usage = """
    surveyd — the server field-survey apps sync to.

    usage:
      surveyd serve [--host 127.0.0.1] [--port 8080] [--demo] [--synchronous FULL|NORMAL] [--max-body-bytes N] [--max-file-bytes N]
                   [--max-unfinished-upload-bytes N]
                   [--max-keyed-in-flight 100] [--idempotency-retention-days 30] [--entity-wait-days 5] [--http-threads N]
                   [--startup-check full|quick] [--no-log] [--instance-name NAME] [--database-writers 8]
                   [--webhooks-allow-private] [--webhook-retry-schedule 5s,5m,30m,2h,5h,10h,...]
                   [--trusted-proxy 127.0.0.1,...] [--map-tiles URL|none] [--map-attribution TEXT]
                                          (the console map's tiles: a {z}/{x}/{y} URL template, by default
                                          OpenStreetMap's standard tiles; none: points on a plain background)
                   [--max-form-bytes 10485760] [--max-form-upload-bytes 104857600] [--pyxform PATH]  (XLSForms are converted by pyxform's xls2xform at
                                          PATH; by default .build/venv-forms/bin/xls2xform beside the build, which
                                          scripts/setup.sh installs)
      surveyd check [--quiet]             verify every invariant; exit 1 on any violation
      surveyd backup --to DIR [--quiet]   online, consistent copy (database and blobs) into a new DIR
                                          (with --database-url: a copy of the PostgreSQL database as a SQLite data dir)
      surveyd migrate --from-data-dir DIR --to-database-url URL [--quiet]
                                          everything of a SQLite data dir into an empty PostgreSQL database, checked

    check, backup and migrate report their progress on stderr — what is done of what (rows, files
    and bytes), the rate and the time left: on a terminal one line redrawn every second, otherwise
    a plain line every few seconds and one as each phase ends. --quiet turns it off.
      surveyd admin create-operator
      surveyd admin create-org --name NAME --expires-at ISO8601
      surveyd admin renew --org ORG_ID --until ISO8601
      surveyd admin create-user --org ORG_ID --name NAME --roles admin,collector,reviewer

    Every command takes --data-dir DIR (default ./data; the database is DIR/surveyd.sqlite, blobs
    live in DIR/blobs) and --database-url postgresql://... (the database and files are then in
    PostgreSQL, which several surveyd processes may share; DIR keeps request bodies on their way in).
    Every flag can also be given as SURVEYD_<FLAG> in the environment, e.g. SURVEYD_DATA_DIR,
    SURVEYD_PORT, SURVEYD_DATABASE_URL.
    """

    static func main(_ args: [String]) {
        do {
            let options = try Options(args)
            // `--help` after any command shows the usage and runs nothing.
            if options.flag("help") { print(usage); return }
            let missing = Digest.missingFromLibcrypto()
            guard missing.isEmpty else {
                throw CLIError("libcrypto (OpenSSL) here provides no \(missing.joined(separator: ", ")), which surveyd needs "
                               + "(is OPENSSL_CONF loading only some providers?). Nothing was started or changed.")
            }
            switch options.positional.first {
            case "serve": try serve(options)
            case "admin": try admin(options)
            case "check": try check(options)
            case "backup": try backup(options)
            case "migrate": try migrate(options)
            case nil, "help": print(usage)
            case let other?: throw CLIError("unknown command \(other)\n\n\(usage)")
            }
        } catch {
            StandardError.line("surveyd: \(describe(error))")
            exit(1)
        }
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? ApiError { return e.detail }
        return String(describing: error)
    }

    static func configuration(_ options: Options) throws -> App.Configuration {
        var c = App.Configuration(dataDir: options.value("data-dir") ?? "./data")
        if let h = options.value("host") { c.host = h }
        if let p = options.value("port") {
            guard let n = UInt16(p) else { throw CLIError("--port must be 0–65535") }
            c.port = n
        }
        if let s = options.value("synchronous") { c.synchronous = s }
        if let u = options.value("database-url") {
            guard u.hasPrefix("postgres://") || u.hasPrefix("postgresql://") else {
                throw CLIError("--database-url must be a PostgreSQL URI (postgresql://user@host:port/db or postgresql:///db?host=/socket/dir)")
            }
            c.databaseURL = u
        }
        if let w = options.value("database-writers") {
            guard c.databaseURL != nil else { throw CLIError("--database-writers applies to --database-url only (SQLite has one writer)") }
            guard let n = Int(w), (1...64).contains(n) else { throw CLIError("--database-writers must be 1-64 (PostgreSQL connections writing at once)") }
            c.databaseWriters = n
        }
        if let m = options.value("max-file-bytes") {
            guard let n = Int(m), n > 0 else { throw CLIError("--max-file-bytes must be a positive integer") }
            c.maxFileBytes = n
        }
        if let m = options.value("max-unfinished-upload-bytes") {
            guard let n = Int64(m), n > 0 else { throw CLIError("--max-unfinished-upload-bytes must be a positive integer") }
            c.maxUnfinishedUploadBytes = n
        }
        if let m = options.value("max-form-upload-bytes") {
            guard let n = Int(m), n > 0 else { throw CLIError("--max-form-upload-bytes must be a positive integer") }
            c.maxFormUploadBytes = n
        }
        if let m = options.value("max-form-bytes") {
            guard let n = Int(m), n > 0 else { throw CLIError("--max-form-bytes must be a positive integer") }
            c.maxFormBytes = n
        }
        if let p = options.value("pyxform") {
            guard !p.isEmpty else { throw CLIError("--pyxform must name pyxform's xls2xform command") }
            c.pyxform = p
        }
        if let m = options.value("max-body-bytes") {
            guard let n = Int(m), n > 0 else { throw CLIError("--max-body-bytes must be a positive integer") }
            c.maxBodyBytes = n
        }
        if let d = options.value("entity-wait-days") {
            guard let n = Int(d), n >= 1, n <= 3650 else { throw CLIError("--entity-wait-days must be from 1 to 3650") }
            c.entityWaitDays = n
        }
        if let d = options.value("idempotency-retention-days") {
            guard let n = Int(d), n >= 1 else { throw CLIError("--idempotency-retention-days must be at least 1") }
            c.idempotencyRetentionDays = n
        }
        if let v = options.value("startup-check") {
            guard let check = StartupCheck(rawValue: v) else { throw CLIError("--startup-check must be full or quick") }
            c.startupCheck = check
        }
        if let t = options.value("http-threads") {
            guard let n = UInt32(t), n <= 64 else { throw CLIError("--http-threads must be 0 (a thread per connection) or 1-64 polling threads") }
            c.httpThreads = n
        }
        if let k = options.value("max-keyed-in-flight") {
            guard let n = Int(k), n >= 1 else { throw CLIError("--max-keyed-in-flight must be at least 1") }
            c.maxKeyedInFlight = n
        }
        c.logRequests = !options.flag("no-log")
        if let n = options.value("instance-name") {
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:@/")
            guard (1...128).contains(n.count), n.allSatisfy(allowed.contains) else {
                throw CLIError("--instance-name must be 1-128 letters, digits or -_.:@/ (it labels this process's series on /metrics)")
            }
            c.instanceName = n
        }
        c.webhooksAllowPrivate = options.flag("webhooks-allow-private")
        if let t = options.value("map-tiles") {
            if t == "none" {
                c.mapTiles = nil
            } else {
                guard (t.hasPrefix("https://") || t.hasPrefix("http://")), t.contains("{z}"), t.contains("{x}"), t.contains("{y}"),
                      !t.contains(where: { $0 == "\"" || $0 == "'" || $0 == " " || $0 == ";" }) else {
                    throw CLIError("--map-tiles must be an http(s) URL template with {z}, {x} and {y} (e.g. https://tile.openstreetmap.org/{z}/{x}/{y}.png), or none")
                }
                c.mapTiles = t
            }
        }
        if let a = options.value("map-attribution") { c.mapAttribution = a }
        if let t = options.value("trusted-proxy") {
            let addresses = t.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            var probe = in_addr()
            guard !addresses.isEmpty, addresses.allSatisfy({ inet_pton(AF_INET, $0, &probe) == 1 }) else {
                throw CLIError("--trusted-proxy must be IPv4 addresses, comma-separated (the reverse proxy's address as surveyd sees it, e.g. 127.0.0.1)")
            }
            c.trustedProxies = Set(addresses)
        }
        if let r = options.value("webhook-retry-schedule") {
            guard let schedule = RetrySchedule.parse(r) else {
                throw CLIError("--webhook-retry-schedule must be delays with units, comma-separated, e.g. 5s,5m,30m,2h")
            }
            c.webhookRetrySchedule = schedule
        }
        return c
    }

    static func serve(_ options: Options) throws {
        // A log reader that goes away (a closed pipe on stdout) must cost the log, not the server:
        // the write then fails with EPIPE and the lines are dropped. (Sockets never raise SIGPIPE:
        // libmicrohttpd sends with MSG_NOSIGNAL.)
        signal(SIGPIPE, SIG_IGN)
        // SIGINT and SIGTERM blocked before any thread exists, so every thread inherits the
        // block and only the dispatch sources below take them. A thread of ours that left them
        // unblocked (the writer, libmicrohttpd's, the webhook workers, all made by App) could
        // be handed the signal instead, and the stop it asks for was lost: the process ran on.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
        let config = try configuration(options)
        let app = try App(config)
        // Graceful shutdown: in-flight requests are answered, then the process exits 0. Set up
        // before the server answers anything: a SIGTERM that came between the first answer and
        // the handler used to be ignored (and lost), and the process never stopped.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "surveyd.signals")
        var sources: [DispatchSourceSignal] = []
        // A source is registered with the kernel asynchronously, after `resume`: the server
        // answers nothing before both are, or a SIGTERM right after its first answer was lost.
        let registered = DispatchSemaphore(value: 0)
        for sig in [SIGINT, SIGTERM] {
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setRegistrationHandler { registered.signal() }
            source.setEventHandler {
                StandardError.line("surveyd: stopping (answering in-flight requests)")
                app.stop()
                // Everything is answered, committed and written out; leave without running the
                // libraries' exit-time teardown (OpenSSL's cleanup, destructors) beside threads
                // that still exist (idle pools, the housekeeping queue).
                fflush(nil)  // every stdio stream (the demo's printed lines)
                _exit(0)
            }
            source.resume()
            sources.append(source)
        }
        for _ in sources { registered.wait() }
        try app.start()
        let base = "http://\(config.host):\(app.port)"
        StandardError.line("surveyd: serving \(base) (" + (config.databaseURL == nil ? "data dir \(config.dataDir)" : "PostgreSQL, files in \(config.dataDir)") + ")")
        if options.flag("demo") { try Demo.seed(app: app, base: base) }
        withExtendedLifetime(sources) { dispatchMain() }
    }

    static func admin(_ options: Options) throws {
        let config = try configuration(options)
        try FileManager.default.createDirectory(atPath: config.dataDir, withIntermediateDirectories: true)
        // Admin commands run beside a live server: the quick check is enough (serve does the full one).
        var storage = Database.Configuration(path: config.layout.database, synchronous: config.synchronous)
        storage.startupCheck = .quick
        storage.databaseURL = config.databaseURL
        storage.writers = 1  // one command, one write at a time: no pool of connections to hold
        storage.readers = 1
        let database = try Database(storage)
        defer { database.close() }
        let admin = AdminCommands(database: database)
        switch options.positional.dropFirst().first {
        case "create-operator":
            print("operator token (shown once):")
            print(try admin.createOperator())
        case "create-org":
            let name = try options.required("name")
            let expires = try timestamp(options.required("expires-at"), flag: "expires-at")
            print(try admin.createOrg(name: name, expiresAt: expires))
        case "renew":
            let org = try options.required("org")
            let until = try timestamp(options.required("until"), flag: "until")
            guard try admin.renew(orgId: org, until: until) else { throw CLIError("no organization \(org)") }
            print("\(org) active until \(Timestamp.format(until))")
        case "create-user":
            let roles = try options.required("roles").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            let (userId, token) = try admin.createUser(orgId: try options.required("org"), name: try options.required("name"), roles: roles)
            print("userId \(userId)")
            print(token)
        default:
            throw CLIError("admin needs one of create-operator, create-org, renew, create-user\n\n\(usage)")
        }
    }

    /// How far `migrate`, `backup` and `check` are, on stderr: a line redrawn in place on a
    /// terminal, plain lines every few seconds otherwise, nothing with `--quiet`.
    static func progress(_ options: Options, _ command: String) -> ProgressReport {
        ProgressReport.onStandardError(command: "surveyd \(command)", quiet: options.flag("quiet"))
    }

    static func check(_ options: Options) throws {
        let dataDir = options.value("data-dir") ?? "./data"
        let progress = progress(options, "check")
        defer { progress.close() }
        let report = try IntegrityCheck.run(dataDir: dataDir, databaseURL: try configuration(options).databaseURL, progress: progress)
        print(report.text, terminator: "")
        if !report.ok { exit(1) }
    }

    static func backup(_ options: Options) throws {
        let dataDir = options.value("data-dir") ?? "./data"
        let dest = try options.required("to")
        let url = try configuration(options).databaseURL
        let progress = progress(options, "backup")
        defer { progress.close() }
        let summary = try url.map { try BackupFromPostgres.run(databaseURL: $0, to: dest, progress: progress) }
            ?? Backup.run(dataDir: dataDir, to: dest, progress: progress)
        print("backup of \(url == nil ? dataDir : "the PostgreSQL database") written to \(dest): database, \(summary.blobs) blob file(s) (\(summary.bytes) bytes), \(summary.partials) partial upload(s)")
        print("serve it with: surveyd serve --data-dir \(dest)")
    }

    /// Everything of a SQLite data dir into an empty PostgreSQL database, then `check` on it.
    static func migrate(_ options: Options) throws {
        let from = try options.required("from-data-dir")
        let url = try options.required("to-database-url")
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else { throw CLIError("--to-database-url must be a PostgreSQL URI") }
        let progress = progress(options, "migrate")
        defer { progress.close() }
        let summary = try MigrateToPostgres.run(dataDir: from, to: url, progress: progress)
        for (table, count) in summary.rows where count > 0 { print("  \(table): \(count) row(s)") }
        print("  files: \(summary.files), unfinished resumable uploads: \(summary.partials)")
        print(summary.check.text, terminator: "")
        guard summary.check.ok else { throw CLIError("the migrated database did not pass check (above); the data dir is unchanged") }
        print("migrated \(from) to PostgreSQL; serve it with: surveyd serve --database-url URL --data-dir NEW_DIR")
    }

    static func timestamp(_ s: String, flag: String) throws -> Int64 {
        guard let t = Timestamp.parse(s) else { throw CLIError("--\(flag) must be an ISO 8601 date-time such as 2027-01-01T00:00:00Z") }
        return t
    }
}
