/// The numbers of tus headers, as the resumable-upload routes read them.
public enum TusHeader {
    /// `Upload-Length`: a non-negative integer; nil when absent or unreadable.
    public static func uploadLength(_ value: String?) -> Int? {
        guard let value, let n = Int(value), n >= 0 else { return nil }
        return n
    }

    /// `Upload-Offset`: an integer (the route compares it with the upload's offset).
    public static func uploadOffset(_ value: String?) -> Int64? {
        value.flatMap { Int64($0) }
    }
}
