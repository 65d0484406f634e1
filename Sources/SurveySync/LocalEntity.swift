import Foundation

/// An entity of a list as the phone knows it: the server's copy from the last sync, with the
/// phone's own captured work that the copy does not show yet laid over it, in capture order
/// (`Outbox.entities(in:)`).
public struct LocalEntity: Sendable, Equatable, Identifiable {
    public let id: String
    public let label: String
    /// A property without a value is absent.
    public let properties: [String: String]
    /// The version as the phone knows it: the server's, plus one per update captured on the
    /// phone since (1 for an entity registered on the phone). The `baseVersion` of the next update.
    public let version: Int
    /// Registered on this phone and not in the server's copy yet.
    public let isLocal: Bool
    /// Changed by work captured on this phone that the server's copy does not show yet.
    public let hasLocalChanges: Bool
    /// The server's version the phone's updates build on (nil when the entity was registered on
    /// the phone) and the branch they share, so that the server applies them in the phone's order
    /// even when they arrive out of order (the ODK Entities specification's offline branches).
    let trunkVersion: Int?
    let branchId: String?
    /// No update of the phone's is pending, or only its registration: the next update starts a branch.
    let startsBranch: Bool

    /// The `entity:` argument of `Outbox.captureResponse` for the next update of this entity:
    /// its id, `baseVersion` (the version the phone knows), and the branch its pending updates
    /// share (a new one when none is pending).
    public func nextUpdate() -> [String: any Sendable] {
        var entity: [String: any Sendable] = ["id": id, "update": true, "baseVersion": version]
        let branch = branchId ?? (startsBranch ? UUID().uuidString.lowercased() : nil)
        if let branch {
            entity["branchId"] = branch
            if let trunkVersion { entity["trunkVersion"] = trunkVersion }
        }
        return entity
    }
}
