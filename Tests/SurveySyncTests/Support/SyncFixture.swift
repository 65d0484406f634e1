import Foundation
@testable import SurveySync
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One test's world: a real surveyd with an organization (admin, reviewer, collector, a published
/// household survey that requires review), the fault proxy in front of it, and a folder for the
/// devices' stores. Everything the test asserts about the server is read through the API, directly
/// (not through the proxy).
final class SyncFixture {
    struct User { let userId: String; let token: String; let tokenId: String }

    let server: SurveydServer
    let proxy: FaultProxy
    let directory: URL
    private(set) var org = ""
    private(set) var operatorToken = ""
    private(set) var adminToken = ""
    private(set) var reviewer = User(userId: "", token: "", tokenId: "")
    private(set) var collector = User(userId: "", token: "", tokenId: "")
    private(set) var surveyId = ""
    private(set) var versionId = ""
    private(set) var contentHash = ""
    private let session = URLSession(configuration: .ephemeral)

    static var definition: [String: Any] { [
        "title": "Household water survey",
        "questions": [
            ["id": "household_size", "type": "integer", "label": "People in the household", "required": true, "minimum": 1, "maximum": 50],
            ["id": "water_source", "type": "select_one", "label": "Main water source", "required": true,
             "choices": ["piped", "well", "borehole", "river"]],
            ["id": "notes", "type": "text", "label": "Notes", "maxLength": 500],
            ["id": "photo", "type": "file", "label": "Photo of the source", "accept": ["image/png", "image/jpeg"]],
        ],
    ] }

    init() async throws {
        directory = try PackagePaths.temporaryDirectory("surveysync-test")
        server = try SurveydServer()
        proxy = try FaultProxy(upstream: server.port, directory: directory)
        try await waitUntilHealthy(server.base)
        try await waitUntilHealthy(proxy.base)
        operatorToken = try server.admin(["create-operator"])
        let expires = ISO8601DateFormatter().string(from: Date().addingTimeInterval(86_400))
        org = try server.admin(["create-org", "--name", "Sync test", "--expires-at", expires])
        adminToken = try server.admin(["create-user", "--org", org, "--name", "Admin", "--roles", "admin"])
        let survey = try await api("POST", "/v1/orgs/\(org)/surveys", token: adminToken, ["title": "Household water survey", "reviewRequired": true])
        surveyId = try survey.string("surveyId")
        let version = try await api("POST", "/v1/orgs/\(org)/surveys/\(surveyId)/versions", token: adminToken, ["definition": Self.definition])
        versionId = try version.string("surveyVersionId")
        contentHash = try version.string("contentHash")
        collector = try await createUser("Tess Field", roles: ["collector"])
        reviewer = try await createUser("Rita Review", roles: ["reviewer"])
    }

    deinit {
        proxy.stop()
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func waitUntilHealthy(_ base: String) async throws {
        for _ in 0..<300 {
            if let (_, r) = try? await session.data(from: URL(string: base + "/healthz")!), (r as? HTTPURLResponse)?.statusCode == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("\(base) did not come up")
    }

    // MARK: devices

    func owner(_ user: User) -> Owner { Owner(server: proxy.base, organization: org, user: user.userId) }

    func storeURL(_ name: String) -> URL { directory.appendingPathComponent("\(name).sqlite") }

    /// A device's outbox, with `user` signed in.
    func device(_ name: String, user: User? = nil, configuration: Outbox.Configuration = .init()) throws -> Outbox {
        let outbox = try Outbox(at: storeURL(name), configuration: configuration)
        let user = user ?? collector
        outbox.signIn(Session(owner: owner(user), token: user.token))
        return outbox
    }

    /// The collector's phone: its outbox, signed in, and its engine.
    func phone() throws -> (Outbox, SyncEngine) {
        let outbox = try device("phone")
        return (outbox, engine(outbox))
    }

    /// The engine as an app configures it, with no backoff wait (each `syncNow()` retries what is
    /// due) and the real URLSession transport through the proxy, one connection per request.
    /// `entityLists`: the lists the phone keeps a copy of; `transport`: another than the plain one (a recorder around it).
    func engine(_ outbox: Outbox, chunkSize: Int = 1 << 20, entityLists: [String] = [], transport: (any HTTPTransport)? = nil) -> SyncEngine {
        var configuration = SyncConfiguration()
        configuration.initialBackoff = 0
        configuration.maxBackoff = 0
        configuration.uploadChunkSize = chunkSize
        configuration.entityLists = entityLists
        return SyncEngine(outbox: outbox, transport: transport ?? URLSessionTransport(timeout: 30, closeConnections: true),
                          configuration: configuration)
    }

    /// Captures a household response for the signed-in collector.
    @discardableResult
    func capture(_ outbox: Outbox, size: Int, source: String = "well", notes: String? = nil,
                 attachments: [Outbox.Attachment] = []) throws -> OutboxCommand {
        var answers: [String: any Sendable] = ["household_size": size, "water_source": source]
        if let notes { answers["notes"] = notes }
        return try outbox.captureResponse(title: "Household of \(size)", surveyVersionId: versionId, contentHash: contentHash,
                                          answers: answers, attachments: attachments)
    }

    // MARK: the server, through its API

    struct Answer {
        let status: Int
        let json: [String: Any]
        func string(_ key: String) throws -> String {
            guard let v = json[key] as? String else { throw TestFailure("no \(key) in \(status) \(json)") }
            return v
        }
    }

    @discardableResult
    func api(_ method: String, _ path: String, token: String, _ body: [String: Any]? = nil, headers: [String: String] = [:]) async throws -> Answer {
        var request = URLRequest(url: URL(string: server.base + path)!)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
        }
        let (data, response) = try await session.data(for: request)
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return Answer(status: (response as? HTTPURLResponse)?.statusCode ?? 0, json: json)
    }

    /// The bytes the server holds for an upload.
    func uploadedContent(_ clientUploadId: String) async throws -> Data {
        var request = URLRequest(url: URL(string: server.base + "/v1/orgs/\(org)/uploads/\(clientUploadId)/content")!)
        request.setValue("Bearer \(collector.token)", forHTTPHeaderField: "Authorization")
        return try await session.data(for: request).0
    }

    func createUser(_ name: String, roles: [String]) async throws -> User {
        let a = try await api("POST", "/v1/orgs/\(org)/users", token: adminToken, ["name": name, "roles": roles])
        return User(userId: try a.string("userId"), token: try a.string("token"), tokenId: try a.string("tokenId"))
    }

    /// Every response the organization holds, as the admin lists them.
    func acceptedResponses() async throws -> [[String: Any]] {
        var items: [[String: Any]] = []
        var after: String?
        repeat {
            let a = try await api("GET", "/v1/orgs/\(org)/responses?limit=500" + (after.map { "&after=\($0)" } ?? ""), token: adminToken)
            guard a.status == 200 else { throw TestFailure("list: \(a.status) \(a.json)") }
            items += a.json["items"] as? [[String: Any]] ?? []
            after = a.json["nextCursor"] as? String
        } while after != nil
        return items
    }

    func acceptedCount() async throws -> Int { try await acceptedResponses().count }

    @discardableResult
    func review(_ responseId: String, _ action: String, expectedRevision: Int, comment: String? = nil) async throws -> Answer {
        var body: [String: Any] = ["action": action, "expectedRevision": expectedRevision]
        if let comment { body["comment"] = comment }
        let a = try await api("POST", "/v1/orgs/\(org)/responses/\(responseId)/review", token: reviewer.token, body,
                              headers: ["Idempotency-Key": UUID().uuidString])
        guard a.status == 200 else { throw TestFailure("review \(action): \(a.status) \(a.json)") }
        return a
    }

    func setSubscription(active: Bool) async throws {
        let until = active ? "2099-01-01T00:00:00Z" : "2020-01-01T00:00:00Z"
        let a = try await api("PUT", "/v1/orgs/\(org)/subscription", token: operatorToken, ["expiresAt": until])
        guard a.status == 200 else { throw TestFailure("subscription: \(a.status) \(a.json)") }
    }

    /// A PNG of `size` bytes (the server checks the signature), written to the test folder.
    func pngFile(size: Int) throws -> URL {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var generator = SystemRandomNumberGenerator()
        while bytes.count < size { bytes.append(UInt8.random(in: 0...255, using: &generator)) }
        let url = directory.appendingPathComponent("photo-\(UUID().uuidString.prefix(6)).png")
        try Data(bytes).write(to: url)
        return url
    }
}
