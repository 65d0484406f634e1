import Foundation

/// tus `Upload-Metadata: key base64,key base64` (a key alone has the empty value).
/// Split on Unicode scalars, not Characters: a comma or space that a combining mark joins to
/// its neighbour still separates, as it does for every other tus server.
public enum UploadMetadata {
    public static func parse(_ header: String?) throws -> [String: String] {
        var out: [String: String] = [:]
        for pair in (header ?? "").unicodeScalars.split(separator: ",") {
            let trimmed = String(String.UnicodeScalarView(pair)).trimmingCharacters(in: .whitespaces)
            let parts = trimmed.unicodeScalars.split(separator: " ", maxSplits: 1).map { String(String.UnicodeScalarView($0)) }
            guard let key = parts.first else { continue }
            if parts.count == 2 {
                guard let bytes = Base64.decode(parts[1]), let s = String(bytes: bytes, encoding: .utf8) else {
                    throw ApiError.malformed("Upload-Metadata value of \(key) is not base64 UTF-8.")
                }
                out[key] = s
            } else { out[key] = "" }
        }
        return out
    }
}
