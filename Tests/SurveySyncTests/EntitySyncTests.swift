import Foundation
import Testing
@testable import SurveySync

/// A phone's registration and follow-up of an entity captured offline with the sync library and
/// synced to a real surveyd once the network is back (the first pass finds it down): the entity is created
/// and updated exactly once, in the phone's order.
@Suite struct EntitySyncTests {
    static var definition: [String: Any] { [
        "title": "Water points",
        "questions": [["id": "point", "type": "text", "label": "Name"], ["id": "flow", "type": "integer", "label": "Litres a minute"]],
        "entity": ["list": "water_points", "create": true, "update": true, "label": "${point}", "saveTo": ["point": "name_given", "flow": "flow"]],
    ] }

    @Test func anOfflineCreateAndUpdateSyncOnceTheNetworkIsBack() async throws {
        let f = try await SyncFixture()
        let survey = try await f.api("POST", "/v1/orgs/\(f.org)/surveys", token: f.adminToken, ["title": "Water points"])
        let version = try await f.api("POST", "/v1/orgs/\(f.org)/surveys/\(try survey.string("surveyId"))/versions", token: f.adminToken,
                                      ["definition": Self.definition])
        #expect(version.status == 201, "\(version.json)")
        let versionId = try version.string("surveyVersionId"), hash = try version.string("contentHash")
        let id = "5a1f0e2d-7c3b-4a59-8d10-6e2f3a4b5c6d"

        let outbox = try f.device("phone")
        try f.proxy.goOffline()
        try outbox.captureResponse(surveyVersionId: versionId, contentHash: hash, answers: ["point": "North well", "flow": 12],
                                   entity: ["id": id, "create": true, "label": "North well"])
        try outbox.captureResponse(surveyVersionId: versionId, contentHash: hash, answers: ["point": "North well", "flow": 7],
                                   entity: ["id": id, "update": true, "baseVersion": 1])
        _ = await f.engine(outbox).syncNow()
        try f.proxy.goOnline()
        _ = await f.engine(outbox).syncNow()
        _ = await f.engine(outbox).syncNow()
        let commands = try outbox.commands()
        #expect(commands.map(\.stateLabel) == ["Completed", "Completed"], "\(commands.map { ($0.stateLabel, $0.lastAnswer ?? "") })")

        let entity = try await f.api("GET", "/v1/orgs/\(f.org)/entity-lists/water_points/entities/\(id)", token: f.adminToken)
        #expect(entity.status == 200, "\(entity.json)")
        #expect(entity.json["version"] as? Int == 2)
        #expect(entity.json["properties"] as? [String: String] == ["name_given": "North well", "flow": "7"])
        #expect(entity.json["conflict"] is NSNull)
    }

    /// A household roster captured offline: the household at the form's root (`entity:`) and each
    /// member in a repeat (`entities:`, by its container and instance) reach the server with the
    /// response once the network is back, each created once.
    @Test func aRostersMembersSyncWithTheirResponse() async throws {
        let f = try await SyncFixture()
        let survey = try await f.api("POST", "/v1/orgs/\(f.org)/surveys", token: f.adminToken, ["title": "Roster"])
        let definition: [String: Any] = [
            "title": "Roster",
            "questions": [["id": "head", "type": "text", "label": "Head"],
                          ["id": "member", "type": "repeat", "label": "Member", "children": [["id": "member_name", "type": "text", "label": "Name"]]]],
            "entities": [["list": "households", "create": true, "label": "${head}", "saveTo": ["head": "head"]],
                         ["list": "members", "create": true, "label": "${member_name}", "saveTo": ["member_name": "full_name"], "container": "member"]],
        ]
        let version = try await f.api("POST", "/v1/orgs/\(f.org)/surveys/\(try survey.string("surveyId"))/versions", token: f.adminToken,
                                      ["definition": definition])
        #expect(version.status == 201, "\(version.json)")
        let household = "6b2e0f1d-7c3b-4a59-8d10-6e2f3a4b5c00"
        let members = ["6b2e0f1d-7c3b-4a59-8d10-6e2f3a4b5c01", "6b2e0f1d-7c3b-4a59-8d10-6e2f3a4b5c02"]

        let outbox = try f.device("phone")
        try f.proxy.goOffline()
        try outbox.captureResponse(surveyVersionId: try version.string("surveyVersionId"), contentHash: try version.string("contentHash"),
                                   answers: ["head": "Ada", "member": [["member_name": "Ada"], ["member_name": "Bo"]]],
                                   entity: ["id": household, "create": true, "label": "Ada"],
                                   entities: [["container": "member", "index": 0, "id": members[0], "create": true, "label": "Ada"],
                                              ["container": "member", "index": 1, "id": members[1], "create": true, "label": "Bo"]])
        _ = await f.engine(outbox).syncNow()
        try f.proxy.goOnline()
        _ = await f.engine(outbox).syncNow()
        _ = await f.engine(outbox).syncNow()
        #expect(try outbox.commands().map(\.stateLabel) == ["Completed"])

        let listed = try await f.api("GET", "/v1/orgs/\(f.org)/entity-lists/members/entities", token: f.adminToken)
        let items = listed.json["items"] as? [[String: Any]] ?? []
        #expect(items.compactMap { $0["id"] as? String }.sorted() == members, "\(listed.json)")
        #expect(Set(items.compactMap { ($0["properties"] as? [String: String])?["full_name"] }) == ["Ada", "Bo"])
        let head = try await f.api("GET", "/v1/orgs/\(f.org)/entity-lists/households/entities/\(household)", token: f.adminToken)
        #expect(head.status == 200 && head.json["version"] as? Int == 1, "\(head.json)")
    }
}
