/// What can go wrong on the device. `message` is the sentence to show a person.
public enum OutboxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The device (or the store's size limit) has no room: the capture was not saved.
    case storageFull
    /// The device's storage failed while the capture was written (an I/O error): the capture was not saved.
    case storageFailed
    /// The store's file cannot be read whole.
    case unreadable(String)
    /// The store was written by a newer version of the library; it is left as it is.
    case newerStore(version: Int)
    /// A capture's arguments cannot make a valid request (an id of the wrong form, a file that cannot be read).
    case invalidCapture(String)
    /// No one is signed in: there is no queue to capture into.
    case notSignedIn
    /// The store cannot be opened right now (a locked device's data protection, a permission):
    /// not damage, so nothing is moved aside; the next open tries again.
    case unavailable(String)

    public var message: String {
        switch self {
        case .storageFull:
            "There is not enough space on this device to save this. It was not saved: free some space and save again."
        case .storageFailed:
            "This device's storage failed while saving this. It was not saved: save it again."
        case .unreadable:
            "Your saved work on this device could not be read. It has been kept aside and can be exported for support."
        case .newerStore:
            "Your saved work was written by a newer version of this app. Update the app to send it."
        case .invalidCapture(let why):
            "This could not be saved: \(why)."
        case .notSignedIn:
            "Sign in to save your work."
        case .unavailable:
            "Your saved work cannot be opened right now. Nothing was lost; unlock the device or try again in a moment."
        }
    }

    public var description: String { message }
}
