import Foundation
import Synchronization
@testable import SurveyStorage
import SurveyDomain
import SurveyServer

/// A real surveyd on loopback (port 0) with its own temp data dir, plus direct read access to
/// its SQLite file so tests can assert what is, and is not, in the database.
final class TestServer: @unchecked Sendable {
    // @unchecked: fields are set in init and only read afterwards.
    let dataDir: String
    let app: App
    let client: RawHTTPClient
    let operatorToken: String

    private let ownsDataDir: Bool
    private let stopped = Mutex(false)

    /// `dataDir`: an existing data dir to serve (a restart); it is left in place afterwards.
    init(dataDir: String? = nil, configure: (inout App.Configuration) -> Void = { _ in }) throws {
        ownsDataDir = dataDir == nil
        self.dataDir = dataDir ?? NSTemporaryDirectory() + "surveyd-test-" + UUID().uuidString
        var config = App.Configuration(dataDir: self.dataDir)
        config.port = 0
        config.logRequests = false
        // On PostgreSQL a database is made for the server unless `configure` asks for SQLite
        // (sets `databaseURL` to nil).
        config.databaseURL = TestEngine.isPostgres ? TestEngine.pending : nil
        configure(&config)
        if config.databaseURL == TestEngine.pending { config.databaseURL = try TestEngine.database(for: self.dataDir) }
        app = try App(config)
        try app.start()
        client = RawHTTPClient(port: app.port)
        operatorToken = try AdminCommands(database: app.database).createOperator()
    }

    /// Stops the server (once), keeping its data dir until the end of the test.
    func stop() {
        guard !stopped.withLock({ was in defer { was = true }; return was }) else { return }
        app.stop()
    }

    deinit {
        stop()
        if ownsDataDir { try? FileManager.default.removeItem(atPath: dataDir) }
    }

    /// A fresh read-only look at the database file, as another process would see it.
    func rows(_ sql: String, _ args: [SQLValue] = []) throws -> [Row] {
        try TestEngine.rows(dataDir: dataDir, sql, args)
    }

    /// The number a query answers as its column `n` (`SELECT COUNT(*) AS n FROM …`).
    func count(_ sql: String, _ args: [SQLValue] = []) throws -> Int64 {
        try rows(sql, args).first?.int("n") ?? -1
    }
}

/// An organization with an admin, a collector and a reviewer, and a published survey.
struct Fixture {
    let server: TestServer
    let orgId: String
    let adminToken: String
    let collectorToken: String
    let collectorId: String
    let reviewerToken: String
    var client: RawHTTPClient { server.client }

    static let definition: JSONValue = [
        "title": "Household",
        "questions": [
            ["id": "size", "type": "integer", "label": "People", "required": true, "minimum": 1, "maximum": 50],
            ["id": "source", "type": "select_one", "label": "Water", "choices": ["well", "piped", "river"]],
            ["id": "notes", "type": "text", "label": "Notes", "maxLength": 20],
            ["id": "photo", "type": "file", "label": "Photo", "accept": ["image/jpeg", "image/png"], "maxBytes": 1_000_000],
        ],
    ]

    /// The same organization and people as `other`, served by `server` (a migrated copy).
    init(server: TestServer, from other: Fixture) {
        self.server = server
        orgId = other.orgId
        adminToken = other.adminToken
        collectorToken = other.collectorToken
        collectorId = other.collectorId
        reviewerToken = other.reviewerToken
    }

    init(server: TestServer? = nil) throws {
        let server = try server ?? TestServer()
        self.server = server
        let c = server.client
        let org = try c.post("/v1/orgs", token: server.operatorToken,
                             ["name": "Field team", "expiresAt": .string(Timestamp.format(Timestamp.nowMillis() + 86_400_000))])
        guard org.status == 201, let orgId = org.json?["orgId"]?.stringValue else { throw TestFailure("create org: \(org.status) \(org.text)") }
        self.orgId = orgId
        func user(_ name: String, _ roles: [JSONValue], token: String) throws -> (String, String) {
            let r = try c.post("/v1/orgs/\(orgId)/users", token: token, ["name": .string(name), "roles": .array(roles)])
            guard r.status == 201, let t = r.json?["token"]?.stringValue, let id = r.json?["userId"]?.stringValue else {
                throw TestFailure("create user: \(r.status) \(r.text)")
            }
            return (id, t)
        }
        adminToken = try user("Ada", ["admin"], token: server.operatorToken).1
        (collectorId, collectorToken) = try user("Cole", ["collector"], token: adminToken)
        reviewerToken = try user("Rae", ["reviewer"], token: adminToken).1
    }

    /// Sets the subscription's end through the operator API.
    func setExpiry(_ ms: Int64) throws {
        let r = try client.put("/v1/orgs/\(orgId)/subscription", token: server.operatorToken, ["expiresAt": .string(Timestamp.format(ms))])
        guard r.status == 200 else { throw TestFailure("set subscription: \(r.status) \(r.text)") }
    }
    func expire() throws { try setExpiry(Timestamp.nowMillis() - 60_000) }
    func renew() throws { try setExpiry(Timestamp.nowMillis() + 86_400_000) }

    /// Creates a survey and publishes `definition` as its first version.
    func publishSurvey(reviewRequired: Bool = false, definition: JSONValue = Fixture.definition) throws -> (surveyId: String, versionId: String, contentHash: String) {
        let s = try client.post("/v1/orgs/\(orgId)/surveys", token: adminToken, ["title": "Household", "reviewRequired": .bool(reviewRequired)])
        guard s.status == 201, let surveyId = s.json?["surveyId"]?.stringValue else { throw TestFailure("create survey: \(s.status) \(s.text)") }
        let v = try client.post("/v1/orgs/\(orgId)/surveys/\(surveyId)/versions", token: adminToken, ["definition": definition])
        guard v.status == 201, let id = v.json?["surveyVersionId"]?.stringValue, let h = v.json?["contentHash"]?.stringValue else {
            throw TestFailure("publish: \(v.status) \(v.text)")
        }
        return (surveyId, id, h)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
