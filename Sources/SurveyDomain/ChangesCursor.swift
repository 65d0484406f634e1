/// The `after` cursor of the changes feed: the sequence number of the last change seen.
public enum ChangesCursor {
    /// nil when `text` is not a cursor this feed hands out (a non-negative integer).
    public static func parse(_ text: String) -> Int64? {
        guard let n = Int64(text), n >= 0 else { return nil }
        return n
    }
}
