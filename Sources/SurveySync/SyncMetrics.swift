import Foundation

/// What an app can show ("last synced 5 minutes ago") or send to its own monitoring.
public struct SyncMetrics: Sendable, Equatable {
    /// How long the oldest command still waiting to be sent has waited (nil when nothing waits).
    public let oldestQueuedAge: TimeInterval?
    /// The end of the last sync pass that reached the server (nil: never).
    public let lastSuccessfulSync: Date?
    /// How many of the signed-in person's commands are in each state (states with none are left out).
    public let countsByState: [CommandState: Int]
    /// Stores that could not be read and were kept aside.
    public let quarantinedStores: Int
}
