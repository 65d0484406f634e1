import Foundation

/// tus `Upload-Metadata: key base64,key base64` (a key alone has the empty value).
public enum UploadMetadata {
    public static func parse(_ header: String?) throws -> [String: String] {
        var out: [String: String] = [:]
        for pair in (header ?? "").split(separator: ",") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
            guard let key = parts.first else { continue }
            if parts.count == 2 {
                guard let bytes = Base64.decode(String(parts[1])), let s = String(bytes: bytes, encoding: .utf8) else {
                    throw ApiError.malformed("Upload-Metadata value of \(key) is not base64 UTF-8.")
                }
                out[String(key)] = s
            } else { out[String(key)] = "" }
        }
        return out
    }
}
