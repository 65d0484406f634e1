/// Where a field task is: `open` until a response completes it (on acceptance, or on approval
/// when its survey is reviewed). Raw values are the wire and stored names.
public enum TaskState: String, Sendable, CaseIterable {
    case open
    case completed
}
