import Foundation
import Testing
import SurveyDomain
@testable import SurveyOperations
@testable import SurveyStorage

/// A real data dir (SQLite file, blob store) and the operations over it — no HTTP module, no
/// socket: an organization with an admin, a collector and a reviewer, a reviewed survey with a
/// file question, and a second organization whose collector must never see the first's.
final class World: @unchecked Sendable {
    // @unchecked: set up in init, read afterwards.
    let dir = NSTemporaryDirectory() + "surveyd-ops-" + UUID().uuidString
    let clock = ManualClock()
    let database: Database
    let ops: Operations
    let operatorCaller = Caller.operatorToken(tokenId: "tok_test_operator")
    var org = "", other = ""
    var admin: Users.Issued!, collector: Users.Issued!, reviewer: Users.Issued!, stranger: Users.Issued!
    var survey = "", version: SurveyVersionRecord!

    static let definition: JSONValue = [
        "title": "Household",
        "questions": [
            ["id": "size", "type": "integer", "label": "People", "required": true, "minimum": 1, "maximum": 50],
            ["id": "source", "type": "select_one", "label": "Water", "choices": ["well", "piped", "river"]],
            ["id": "photo", "type": "file", "label": "Photo", "accept": ["image/png"], "maxBytes": 1000],
        ],
    ]

    init() throws {
        let layout = DataDirectory(dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var config = Database.Configuration(path: layout.database)
        config.clock = clock
        database = try Database(config)
        ops = Operations(database: database, blobs: try BlobStore(layout))
        let expires = clock.nowMillis() + 86_400_000
        org = try ops.organizations.create(by: operatorCaller) { (name: "A", expiresAt: expires) }.written.orgId
        other = try ops.organizations.create(by: operatorCaller) { (name: "B", expiresAt: expires) }.written.orgId
        admin = try ops.users.create(orgId: org, by: operatorCaller) { (name: "Ada", roles: ["admin"]) }.written
        let adminCaller = Caller.user(admin.user, tokenId: admin.tokenId)
        collector = try ops.users.create(orgId: org, by: adminCaller) { (name: "Cole", roles: ["collector"]) }.written
        reviewer = try ops.users.create(orgId: org, by: adminCaller) { (name: "Rae", roles: ["reviewer"]) }.written
        stranger = try ops.users.create(orgId: other, by: operatorCaller) { (name: "Sam", roles: ["collector", "reviewer"]) }.written
        survey = try ops.surveys.create(orgId: org, by: admin.user) { .init(title: "Household", reviewRequired: true) }.written.surveyId
        version = try ops.surveys.publish(orgId: org, surveyId: survey, by: admin.user) { FormSources.Published(definition: Self.definition) }.written
    }

    deinit {
        database.close()
        try? FileManager.default.removeItem(atPath: dir)
    }

    func expire() { clock.advance(byMillis: 2 * 86_400_000) }

    /// What a refusal must not have left: responses, uploads, audit entries, kept keys, and any
    /// file in the blob, temp and partial directories.
    func traces() throws -> [Int64] {
        let rows = try database.read { db in
            try ["responses", "uploads", "audit", "idempotency_keys"].map { try db.conn.query("SELECT COUNT(*) AS n FROM \($0)").first?.int("n") ?? -1 }
        }
        let files = DataDirectory(dir).fileDirectories.map { path in
            Int64(FileManager.default.enumerator(atPath: path)?.allObjects.count ?? 0)
        }
        return rows + files
    }
}

extension KeyedOutcome {
    /// The value of a write that must have happened now.
    var written: Value {
        get throws {
            guard case .written(let v) = self else { throw TestFailure("expected a write, got a replay") }
            return v
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// The contract code a call was refused with (nil when it was not refused).
func refusal(_ body: () throws -> Any) -> Int? {
    do { _ = try body(); return nil } catch let e as ApiError { return e.code.rawValue } catch { return -1 }
}

/// The `ApiError` a call was refused with.
func refusalError(_ body: () throws -> Any) -> ApiError? {
    do { _ = try body(); return nil } catch let e as ApiError { return e } catch { return nil }
}
