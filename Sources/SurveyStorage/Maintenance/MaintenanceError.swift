/// A refusal of the command line or of start-up (backup, check, the data dir lock, admin
/// commands): a sentence for an operator, not an HTTP problem. It never reaches a client.
public struct MaintenanceError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
