/// What one `syncNow()` pass did.
public struct SyncReport: Sendable, Equatable {
    /// Commands attempted in this pass.
    public var attempted = 0
    /// Commands the server holds now that it did not before this pass.
    public var nowHeld = 0
    /// The pass reached the server at least once.
    public var reachedServer = false
    /// Nothing was sent because nobody is signed in, or the person must sign in again.
    public var signInRequired = false
    public var notSignedIn = false
    /// The device's store failed while recording (e.g. the disk filled); what was recorded stands.
    public var storeError: String?
    /// Another pass was running; this call did nothing.
    public var alreadyRunning = false
    /// Writes for this organization wait for its subscription's renewal.
    public var renewalRequired = false
    /// The server address answered with a redirect, to this host (with its port if it named one;
    /// empty if it named no address). It was not followed, so nothing and no token went there;
    /// the address is probably wrong (`SyncWords.redirect(to:)` says so).
    public var redirectedTo: String?
    /// The server address gave a file's upload an address on another origin, this host (with its
    /// port if it named one; empty if it named no host). Nothing and no token went there; the
    /// address is probably wrong (`SyncWords.uploadElsewhere(to:)` says so).
    public var uploadPointedTo: String?
    /// Entity lists (`SyncConfiguration.entityLists`) whose copy on the phone was replaced by
    /// the server's newer one in this pass.
    public var entityListsRefreshed: [String] = []
    /// Entity lists the server said had not changed since the phone's copy (304).
    public var entityListsUnchanged: [String] = []
    /// Entity lists that could not be brought up to date, each with why (no answer, an HTTP
    /// status, a body that is not the list's CSV). The phone's previous copy of each is kept.
    public var entityListsFailed: [String: String] = [:]
}
