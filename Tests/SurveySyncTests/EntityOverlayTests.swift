import Foundation
import Testing
@testable import SurveySync

/// How the phone's captured entity changes are laid over the server's copy (`EntityOverlay`),
/// and the `entity:` argument `nextUpdate()` makes from the result.
@Suite struct EntityOverlayTests {
    static let ada = ServerEntity(id: "a1b2c3d4", label: "Ada's", version: 3, properties: ["village": "Kisii", "members": "4"])

    func change(_ id: String, create: Bool = false, label: String? = nil, _ properties: [String: String] = [:],
                base: Int? = nil, trunk: Int? = nil, branch: String? = nil) -> CapturedEntityChange {
        CapturedEntityChange(list: "households", id: id, create: create, update: !create, label: label, properties: properties,
                             baseVersion: base, trunkVersion: trunk, branchId: branch)
    }

    @Test func changesApplyInCaptureOrderAsTheServerWouldApplyThem() {
        let entities = EntityOverlay.entities(server: [Self.ada], pending: [
            change("a1b2c3d4", create: true, label: "Someone else", ["village": "Nowhere"]),  // exists: changes nothing
            change("a1b2c3d4", label: "", ["members": "5"], base: 3),                          // empty label: kept
            change("a1b2c3d4", ["members": "6", "village": ""], base: 4),                       // an empty value: absent
            change("ffff0000", ["members": "1"], base: 1),                                      // unknown here: not shown
            change("b1b2c3d4", create: true, label: "", ["members": "2"]),                      // no label: the id, as the server does
        ])
        #expect(entities.map(\.id) == ["a1b2c3d4", "b1b2c3d4"])
        #expect(entities.first?.label == "Ada's")
        #expect(entities.first?.properties == ["members": "6"])
        #expect(entities.first?.version == 5)
        #expect(entities.first?.isLocal == false && entities.first?.hasLocalChanges == true)
        #expect(entities.last?.label == "b1b2c3d4")
        #expect(entities.last?.version == 1 && entities.last?.isLocal == true)
    }

    @Test func theNextUpdateCarriesTheBaseAndTheBranchOfThePhonesPendingUpdates() throws {
        // Nothing pending: the server's version is the base and the trunk of a new branch.
        let untouched = try #require(EntityOverlay.entities(server: [Self.ada], pending: []).first)
        let first = untouched.nextUpdate()
        #expect(first["baseVersion"] as? Int == 3 && first["trunkVersion"] as? Int == 3)
        let branch = try #require(first["branchId"] as? String)

        // One update captured with it: the next one builds on it, in the same branch.
        let captured = change("a1b2c3d4", ["members": "5"], base: 3, trunk: 3, branch: branch)
        let updated = try #require(EntityOverlay.entities(server: [Self.ada], pending: [captured]).first)
        let second = updated.nextUpdate()
        #expect(second["baseVersion"] as? Int == 4 && second["trunkVersion"] as? Int == 3 && second["branchId"] as? String == branch)

        // Registered on the phone: a branch without a trunk, kept by the updates after it.
        let registered = try #require(EntityOverlay.entities(server: [], pending: [change("b1b2c3d4", create: true, label: "Bo")]).first)
        let visit = registered.nextUpdate()
        #expect(visit["baseVersion"] as? Int == 1 && visit["trunkVersion"] == nil)
        let visitBranch = try #require(visit["branchId"] as? String)
        let visited = try #require(EntityOverlay.entities(server: [], pending: [
            change("b1b2c3d4", create: true, label: "Bo"), change("b1b2c3d4", ["members": "3"], base: 1, branch: visitBranch),
        ]).first)
        #expect(visited.nextUpdate()["branchId"] as? String == visitBranch)
        #expect(visited.nextUpdate()["baseVersion"] as? Int == 2)

        // An earlier update sent without a branch (an app's own `entity:`): the next one goes without one too.
        let plain = try #require(EntityOverlay.entities(server: [Self.ada], pending: [change("a1b2c3d4", ["members": "5"], base: 3)]).first)
        #expect(plain.nextUpdate()["branchId"] == nil && plain.nextUpdate()["baseVersion"] as? Int == 4)
    }
}
