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

    /// Whether a request or sweep holds `id` now (tests wait on it to know a request is under way, or over).
    public func isHeld(_ id: String) -> Bool { ids.withLock { $0.contains(id) } }

    /// The id claimed, or nil while another holds it. The server's requests and sweeps claim
    /// only through here, so a claim is released in one place: when its holder drops it.
    public func hold(_ id: String) -> Claim? { claim(id) ? Claim(id, in: self) : nil }

    /// One claimed id, released once, when the last reference to it goes.
    public final class Claim: Sendable {
        public let id: String
        private let set: BusySet
        fileprivate init(_ id: String, in set: BusySet) { self.id = id; self.set = set }
        deinit { set.release(id) }
    }
}
