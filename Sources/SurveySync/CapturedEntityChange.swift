import Foundation

/// What one captured response does to an entity, as the phone shows it before the server has
/// answered: read at capture from the `entity:` argument and the form's `saveTo` (the same
/// answers-to-properties the server applies), stored beside the command as JSON.
struct CapturedEntityChange: Codable, Sendable, Equatable {
    let list: String
    let id: String
    let create: Bool
    let update: Bool
    /// nil or empty: the label stays as it was (an update), or the id (a create, as the server does).
    let label: String?
    let properties: [String: String]
    let baseVersion: Int?
    let trunkVersion: Int?
    let branchId: String?
}
