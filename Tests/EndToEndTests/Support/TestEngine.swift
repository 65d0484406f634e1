import Foundation
import SurveyServer
@testable import SurveyStorage

/// Which engine the end-to-end tests run on. `scripts/test.sh` runs the suite twice: on SQLite,
/// then with `SURVEYD_TEST_POSTGRES` set to the URL of a throwaway cluster's `postgres` database
/// (`scripts/pg_cluster.sh`), where every test server gets a database of its own.
enum TestEngine {
    static let postgresURL: String? = ProcessInfo.processInfo.environment["SURVEYD_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }
    static var isPostgres: Bool { postgresURL != nil }
    /// Stands for "a database of its own" in a configuration until the server is made.
    static let pending = "postgresql://pending"

    /// A new, empty database on the test cluster; its URL. The data dir remembers it, so a
    /// server restarted on that data dir finds its database again.
    static func database(for dataDir: String) throws -> String? {
        guard let admin = postgresURL else { return nil }
        let remembered = dataDir + "/test-database-url"
        if let url = try? String(contentsOfFile: remembered, encoding: .utf8) { return url }
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try PostgresConnection(url: admin).execute("CREATE DATABASE \(name)")
        guard let range = admin.range(of: "///postgres") else { throw TestFailure("SURVEYD_TEST_POSTGRES must name the postgres database: \(admin)") }
        let url = admin.replacingCharacters(in: range, with: "///\(name)")
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        try url.write(toFile: remembered, atomically: true, encoding: .utf8)
        return url
    }

    /// Makes `dataDir` serve the database at `url` too (several processes on one database).
    static func share(_ url: String, with dataDir: String) throws {
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        try url.write(toFile: dataDir + "/test-database-url", atomically: true, encoding: .utf8)
    }

    /// A server's configuration on `dataDir`, on the engine under test.
    static func configuration(dataDir: String) throws -> App.Configuration {
        var config = App.Configuration(dataDir: dataDir)
        config.databaseURL = try database(for: dataDir)
        return config
    }

    /// Rows of `sql` as another process would see them, on whichever engine holds `dataDir`'s data.
    static func rows(dataDir: String, _ sql: String, _ args: [SQLValue]) throws -> [Row] {
        try Reader(dataDir: dataDir).query(sql, args)
    }

    /// `surveyd check` of a server's data, on the engine under test.
    static func check(dataDir: String) throws -> IntegrityCheck.Report {
        try IntegrityCheck.run(dataDir: dataDir, databaseURL: isPostgres ? try database(for: dataDir) : nil)
    }

    /// `--database-url URL` for a surveyd command on `dataDir`, on the engine under test.
    static func urlArguments(dataDir: String) throws -> [String] {
        try database(for: dataDir).map { ["--database-url", $0] } ?? []
    }

    /// A connection of the test's own to a server's database, for reads.
    struct Reader {
        let conn: any SQLConnection
        init(dataDir: String) throws {
            if isPostgres, let url = try? String(contentsOfFile: dataDir + "/test-database-url", encoding: .utf8) {
                conn = try PostgresConnection(url: url)
            } else {
                conn = try Connection(path: dataDir + "/surveyd.sqlite", readOnly: true)
            }
        }
        func query(_ sql: String, _ args: [SQLValue] = []) throws -> [Row] { try conn.query(sql, args) }
    }

    /// Holds every write of a server from outside, as another process could, until `release`:
    /// SQLite's write lock, or on PostgreSQL a lock on the audit log that every write appends to
    /// (reads go on).
    final class WriteLock: @unchecked Sendable {
        // @unchecked: held by one thread, released by another after it (never at once).
        private let conn: any SQLConnection
        convenience init(_ server: TestServer) throws { try self.init(dataDir: server.dataDir) }

        init(dataDir: String) throws {
            if isPostgres, let url = try? String(contentsOfFile: dataDir + "/test-database-url", encoding: .utf8) {
                let pg = try PostgresConnection(url: url)
                try pg.execute("BEGIN; LOCK TABLE audit IN EXCLUSIVE MODE")
                conn = pg
            } else {
                let sqlite = try Connection(path: dataDir + "/surveyd.sqlite", readOnly: false)
                try sqlite.execute("BEGIN IMMEDIATE")
                conn = sqlite
            }
        }
        func release() { try? conn.execute("ROLLBACK") }
    }
}
