import Foundation
@testable import SurveyStorage

/// Which engine the end-to-end tests run on. `scripts/test.sh` runs the suite twice: on SQLite,
/// then with `SURVEYD_TEST_POSTGRES` set to the URL of a throwaway cluster's `postgres` database
/// (`scripts/pg_cluster.sh`), where every test server gets a database of its own.
enum TestEngine {
    static let postgresURL: String? = ProcessInfo.processInfo.environment["SURVEYD_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }
    static var isPostgres: Bool { postgresURL != nil }

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

    /// Rows of `sql` as another process would see them, on whichever engine holds `dataDir`'s data.
    static func rows(dataDir: String, _ sql: String, _ args: [SQLValue]) throws -> [Row] {
        if isPostgres, let url = try? String(contentsOfFile: dataDir + "/test-database-url", encoding: .utf8) {
            return try PostgresConnection(url: url).query(sql, args)
        }
        return try Connection(path: dataDir + "/surveyd.sqlite", readOnly: true).query(sql, args)
    }
}
