import Synchronization

/// Ids currently being worked on: a resumable upload's PATCH, DELETE and expiry sweep each claim
/// the upload first and only then read its row, so none of them acts on a row another changed.
public final class BusySet: Sendable {
    public init() {}
    private let ids = Mutex<Set<String>>([])
    /// Runs at the start of every `claim` (tests use it to let another request run in the gap
    /// a claim could race with; nil in production).
    public let beforeClaim = Mutex<(@Sendable (String) -> Void)?>(nil)

    public func claim(_ id: String) -> Bool {
        if let hook = beforeClaim.withLock({ $0 }) { hook(id) }
        return ids.withLock { $0.insert(id).inserted }
    }

    public func release(_ id: String) { _ = ids.withLock { $0.remove(id) } }
}
