import Foundation
#if canImport(CryptoKit)
import CryptoKit
#else
import CCrypto
#endif

/// SHA-256 of bytes: CryptoKit on Apple platforms, libcrypto elsewhere.
enum SHA256Digest {
    static func bytes(_ data: some DataProtocol) -> [UInt8] {
        #if canImport(CryptoKit)
        return Array(SHA256.hash(data: data))
        #else
        let input = Array(data)
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        input.withUnsafeBytes { raw in
            _ = EVP_Digest(raw.baseAddress, raw.count, &output, &length, EVP_sha256(), nil)
        }
        return output
        #endif
    }

    static func hex(_ data: some DataProtocol) -> String {
        bytes(data).map { String(format: "%02x", $0) }.joined()
    }

    static func base64(_ data: some DataProtocol) -> String {
        Data(bytes(data)).base64EncodedString()
    }
}

/// Streams a file through SHA-256 without holding it whole.
struct SHA256FileHasher {
    #if canImport(CryptoKit)
    private var hasher = SHA256()
    mutating func update(_ chunk: Data) { hasher.update(data: chunk) }
    mutating func finish() -> String { hasher.finalize().map { String(format: "%02x", $0) }.joined() }
    #else
    private let context: OpaquePointer? = EVP_MD_CTX_new()
    init() { EVP_DigestInit_ex(context, EVP_sha256(), nil) }
    mutating func update(_ chunk: Data) { chunk.withUnsafeBytes { _ = EVP_DigestUpdate(context, $0.baseAddress, $0.count) } }
    mutating func finish() -> String {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &output, &length)
        EVP_MD_CTX_free(context)
        return output.map { String(format: "%02x", $0) }.joined()
    }
    #endif
}
