import Foundation
import Testing
@testable import SurveySync

/// The phone's own copy of an entity list (Docs/sdk.md, "Entity lists on the device"), against a
/// real surveyd: downloaded once, revalidated with `If-None-Match` (304, nothing downloaded),
/// replaced when the server's list changed, kept when a pass cannot refresh it, and shown with
/// the phone's own unsent registrations and updates laid over it.
@Suite struct EntityListCopyTests {
    static let list = "water_points"
    static let csvPath = "/entity-lists/water_points/entities.csv"

    /// The water points survey published (it creates the list), and its form as the app holds it.
    struct WaterPoints {
        let versionId: String
        let contentHash: String
        let form: SurveyForm

        /// Publishes the water points form. A static function rather than an async throwing
        /// initialiser: an error thrown by such an initialiser crashed the test process (a copy of
        /// the half-made value), where a plain function only fails its test.
        static func publish(_ f: SyncFixture) async throws -> WaterPoints {
            let survey = try await f.api("POST", "/v1/orgs/\(f.org)/surveys", token: f.adminToken, ["title": "Water points"])
            let version = try await f.api("POST", "/v1/orgs/\(f.org)/surveys/\(try survey.string("surveyId"))/versions",
                                          token: f.adminToken, ["definition": EntitySyncTests.definition])
            guard version.status == 201 else { throw TestFailure("publish: \(version.status) \(version.json)") }
            return WaterPoints(versionId: try version.string("surveyVersionId"), contentHash: try version.string("contentHash"),
                               form: try SurveyForm(definition: JSONSerialization.data(withJSONObject: EntitySyncTests.definition)))
        }

        @discardableResult
        func capture(_ outbox: Outbox, point: String, flow: Int, entity: [String: any Sendable]) throws -> OutboxCommand {
            try outbox.captureResponse(title: point, surveyVersionId: versionId, contentHash: contentHash,
                                       answers: ["point": point, "flow": flow], entity: entity, form: form)
        }
    }

    /// An entity the admin creates on the server (as from the console).
    func createOnServer(_ f: SyncFixture, id: String, label: String, flow: String) async throws {
        let a = try await f.api("POST", "/v1/orgs/\(f.org)/entity-lists/\(Self.list)/entities", token: f.adminToken,
                                ["id": id, "label": label, "properties": ["name_given": label, "flow": flow]],
                                headers: ["Idempotency-Key": UUID().uuidString])
        guard a.status == 201 else { throw TestFailure("create entity: \(a.status) \(a.json)") }
    }

    func serverEntity(_ f: SyncFixture, _ id: String) async throws -> [String: Any] {
        try await f.api("GET", "/v1/orgs/\(f.org)/entity-lists/\(Self.list)/entities/\(id)", token: f.adminToken).json
    }

    static let north = "5a1f0e2d-7c3b-4a59-8d10-6e2f3a4b5c6d"
    static let south = "0b2c4d6e-8f10-4a12-b314-c5d6e7f8a9b0"
    static let east = "e1e2e3e4-0000-4a00-8b00-123456789abc"

    @Test func aListIsDownloadedOnceRevalidatedWith304AndReplacedWhenTheServerChangesIt() async throws {
        let f = try await SyncFixture()
        _ = try await WaterPoints.publish(f)
        try await createOnServer(f, id: Self.north, label: "North well", flow: "12")
        let outbox = try f.device("phone")
        let transport = RecordingTransport()
        let engine = f.engine(outbox, entityLists: [Self.list], transport: transport)

        let first = await engine.syncNow()
        #expect(first.entityListsRefreshed == [Self.list])
        #expect(first.entityListsFailed.isEmpty)
        let downloaded = try outbox.entities(in: Self.list)
        #expect(downloaded == [LocalEntity(id: Self.north, label: "North well", properties: ["name_given": "North well", "flow": "12"],
                                           version: 1, isLocal: false, hasLocalChanges: false, trunkVersion: 1, branchId: nil, startsBranch: true)])
        let stored = try #require(try outbox.store.entityList(f.owner(f.collector), Self.list))
        #expect(stored.etag?.hasPrefix("\"md5:") == true)
        #expect(stored.list.properties.sorted() == ["flow", "name_given"])

        // Nothing changed: asked with the stored tag, answered 304 without a body, the copy kept.
        let second = await engine.syncNow()
        #expect(second.entityListsUnchanged == [Self.list])
        #expect(second.entityListsRefreshed.isEmpty)
        let exchanges = transport.exchanges(endingWith: Self.csvPath)
        #expect(exchanges.map(\.status) == [200, 304])
        #expect(exchanges.last?.bodySize == 0)
        #expect(exchanges.first?.requestHeaders["If-None-Match"] == nil)
        #expect(exchanges.last?.requestHeaders["If-None-Match"] == stored.etag)
        #expect(f.proxy.delivered("GET /v1/orgs/\(f.org)\(Self.csvPath)") == 2)
        #expect(try outbox.entities(in: Self.list) == downloaded)

        // The admin adds a water point: the next pass downloads the list again and shows it.
        try await createOnServer(f, id: Self.south, label: "South pump", flow: "30")
        let third = await engine.syncNow()
        #expect(third.entityListsRefreshed == [Self.list])
        #expect(transport.exchanges(endingWith: Self.csvPath).map(\.status) == [200, 304, 200])
        #expect(try outbox.entities(in: Self.list).map(\.id) == [Self.south, Self.north], "the server's order, by id")
        #expect(try outbox.entity(Self.south, in: Self.list)?.properties == ["name_given": "South pump", "flow": "30"])
        #expect(try outbox.store.entityList(f.owner(f.collector), Self.list)?.etag != stored.etag)

        // The copy is the signed-in person's: someone else on the device sees none of it.
        let other = try await f.createUser("Omar Field", roles: ["collector"])
        outbox.signIn(Session(owner: f.owner(other), token: other.token))
        #expect(try outbox.entities(in: Self.list).isEmpty)
        outbox.signIn(Session(owner: f.owner(f.collector), token: f.collector.token))
        #expect(try outbox.entities(in: Self.list).count == 2)
    }

    @Test func anOfflineRegistrationAndUpdatesShowAtOnceAndOnceWithTheServersVersionAfterSync() async throws {
        let f = try await SyncFixture()
        let water = try await WaterPoints.publish(f)
        try await createOnServer(f, id: Self.north, label: "North well", flow: "12")
        let outbox = try f.device("phone")
        let engine = f.engine(outbox, entityLists: [Self.list])
        #expect(await engine.syncNow().entityListsRefreshed == [Self.list])

        // Offline: a new water point registered, then visited again; the server's one visited.
        try f.proxy.goOffline()
        try water.capture(outbox, point: "East spring", flow: 5, entity: ["id": Self.east, "create": true, "label": "East spring"])
        let registered = try #require(try outbox.entity(Self.east, in: Self.list))
        #expect(registered.isLocal && registered.hasLocalChanges && registered.version == 1)
        #expect(registered.properties == ["name_given": "East spring", "flow": "5"])
        let followUp = registered.nextUpdate()
        #expect(followUp["baseVersion"] as? Int == 1 && followUp["trunkVersion"] == nil && followUp["branchId"] is String)
        try water.capture(outbox, point: "East spring", flow: 9, entity: followUp)
        let north = try #require(try outbox.entity(Self.north, in: Self.list))
        #expect(!north.hasLocalChanges)
        try water.capture(outbox, point: "North well", flow: 3, entity: north.nextUpdate())

        let before = try outbox.entities(in: Self.list)
        #expect(before.map(\.id) == [Self.north, Self.east], "the server's copy, then the phone's registration")
        #expect(before.map(\.version) == [2, 2])
        #expect(before.map(\.isLocal) == [false, true])
        #expect(before.map { $0.properties["flow"] } == ["3", "9"], "the latest captured values")
        #expect(before.map(\.label) == ["North well", "East spring"])

        // A pass without a network: the work waits, the copy is kept and the list reported.
        let offline = await engine.syncNow()
        #expect(offline.entityListsFailed.keys.sorted() == [Self.list])
        #expect(try outbox.entities(in: Self.list) == before)

        try f.proxy.goOnline()
        _ = await engine.syncNow()
        _ = await engine.syncNow()
        let commands = try outbox.commands()
        #expect(commands.map(\.stateLabel) == ["Completed", "Completed", "Completed"], "\(commands.map { ($0.stateLabel, $0.lastAnswer ?? "") })")
        let after = try outbox.entities(in: Self.list)
        #expect(after.map(\.id) == [Self.east, Self.north].sorted(), "each once, from the server's copy")
        #expect(after.allSatisfy { !$0.isLocal && !$0.hasLocalChanges })
        for entity in after {
            let server = try await serverEntity(f, entity.id)
            #expect(entity.version == server["version"] as? Int)
            #expect(entity.version == 2)
            #expect(entity.properties == server["properties"] as? [String: String])
            #expect(server["conflict"] is NSNull, "\(entity.id): \(server)")
        }
        #expect(try outbox.store.pendingEntityChanges(f.owner(f.collector), list: Self.list).isEmpty, "every change settled in the copy")
    }

    @Test func anExpiredSubscriptionKeepsTheCopyAndThePhonesWork() async throws {
        let f = try await SyncFixture()
        let water = try await WaterPoints.publish(f)
        try await createOnServer(f, id: Self.north, label: "North well", flow: "12")
        let outbox = try f.device("phone")
        let engine = f.engine(outbox, entityLists: [Self.list])
        _ = await engine.syncNow()

        try await f.setSubscription(active: false)
        try water.capture(outbox, point: "East spring", flow: 5, entity: ["id": Self.east, "create": true, "label": "East spring"])
        let refused = await engine.syncNow()
        #expect(refused.renewalRequired)
        #expect(refused.entityListsUnchanged == [Self.list], "reading the list is not gated: the pass that meets the lapse still revalidates it")
        let waiting = await engine.syncNow()
        #expect(waiting.renewalRequired && waiting.entityListsFailed.isEmpty && waiting.entityListsUnchanged.isEmpty,
                "while waiting for renewal only the subscription is read")
        #expect(try outbox.commands().map(\.stateLabel) == ["Waiting for renewal"])
        let kept = try outbox.entities(in: Self.list)
        #expect(kept.map(\.id) == [Self.north, Self.east])
        #expect(kept.map(\.isLocal) == [false, true])
        #expect(try outbox.store.entityList(f.owner(f.collector), Self.list)?.list.entities.map(\.id) == [Self.north])

        try await f.setSubscription(active: true)
        let renewed = await engine.syncNow()
        #expect(renewed.entityListsRefreshed == [Self.list])
        #expect(try outbox.commands().map(\.stateLabel) == ["Completed"])
        #expect(try outbox.entities(in: Self.list).map { "\($0.id) v\($0.version) \($0.isLocal)" } == ["\(Self.north) v1 false", "\(Self.east) v1 false"], "by id, as the server sends them")
    }

    /// A registration the server refuses stays on the phone, and so in the list, until the person
    /// discards it; then it is gone from both.
    @Test func aRefusedRegistrationShowsUntilItIsDiscarded() async throws {
        let f = try await SyncFixture()
        let water = try await WaterPoints.publish(f)
        let outbox = try f.device("phone")
        let engine = f.engine(outbox, entityLists: [Self.list])
        let refused = try outbox.captureResponse(surveyVersionId: water.versionId, contentHash: water.contentHash,
                                                 answers: ["point": "East spring", "flow": "a lot"],
                                                 entity: ["id": Self.east, "create": true, "label": "East spring"], form: water.form)
        let report = await engine.syncNow()
        #expect(report.entityListsRefreshed == [Self.list])
        #expect(try outbox.command(refused.id)?.stateLabel == "Needs attention")
        #expect(try outbox.entities(in: Self.list).map { "\($0.id) \($0.isLocal)" } == ["\(Self.east) true"])
        try outbox.discard(refused.id)
        #expect(try outbox.entities(in: Self.list).isEmpty)
        let server = try await f.api("GET", "/v1/orgs/\(f.org)/entity-lists/\(Self.list)/entities/\(Self.east)", token: f.adminToken)
        #expect(server.status == 404)
    }
}
