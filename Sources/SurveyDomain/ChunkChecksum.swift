/// `Upload-Checksum: sha1 <base64>` or `sha256 <base64>`.
public struct ChunkChecksum: Sendable {
    public let algorithm: Digest.Algorithm
    public let expected: [UInt8]

    public init(header: String) throws {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, let bytes = Base64.decode(String(parts[1])) else { throw ApiError.malformed("Upload-Checksum must be '<algorithm> <base64>'.") }
        switch parts[0].lowercased() {
        case "sha1": algorithm = .sha1
        case "sha256": algorithm = .sha256
        default: throw ApiError.malformed("Upload-Checksum algorithm must be sha1 or sha256.")
        }
        expected = bytes
    }

    public func matches(_ actual: [UInt8]) -> Bool { Digest.constantTimeEqual(actual, expected) }
}
