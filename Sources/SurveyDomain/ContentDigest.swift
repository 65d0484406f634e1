import Foundation

/// RFC 9530 `Content-Digest: sha-256=:<base64>:` (other algorithms are ignored).
public enum ContentDigest {
    public static func sha256(fromHeader value: String) throws -> [UInt8]? {
        for member in value.split(separator: ",") {
            let parts = member.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "sha-256" else { continue }
            let v = parts[1].trimmingCharacters(in: .whitespaces)
            guard v.count >= 2, v.hasPrefix(":"), v.hasSuffix(":"), let bytes = Base64.decode(String(v.dropFirst().dropLast())),
                  bytes.count == 32 else {
                throw ApiError.malformed("Content-Digest must look like sha-256=:<base64 of 32 bytes>:")
            }
            return bytes
        }
        return nil
    }
}
