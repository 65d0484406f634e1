import CCrypto

/// SHA-256 / SHA-1 / MD5 from libcrypto, one-shot or streaming. MD5 only names files the way
/// ODK servers do (an XForm's `hash` in a form list), never to protect anything.
public struct Digest: ~Copyable {
    public enum Algorithm: Sendable { case sha256, sha1, md5 }
    private let ctx: OpaquePointer

    public init(_ algorithm: Algorithm = .sha256) {
        ctx = EVP_MD_CTX_new()
        let method = switch algorithm {
        case .sha256: Self.sha256Method
        case .sha1: Self.sha1Method
        case .md5: Self.md5Method
        }
        // `missingFromLibcrypto` is checked before any command runs, so this never fails there.
        precondition(method.pointer != nil, "libcrypto provides no \(method.name) (see Digest.missingFromLibcrypto)")
        EVP_DigestInit_ex2(ctx, method.pointer, nil)
    }

    /// The algorithms fetched from libcrypto's provider once: with `EVP_sha256()` OpenSSL 3 looks
    /// the implementation up again (locks, property query) on every init. (`Digest.sha256`, init
    /// included, was 5 % of an HTTP thread's profile under submissions: two small digests each.)
    private struct Method: @unchecked Sendable {
        // @unchecked: a fetched EVP_MD is immutable and may be shared by threads (OpenSSL 3 docs).
        let name: String
        /// Nil when libcrypto's configuration provides no such digest.
        let pointer: OpaquePointer?
        init(_ name: String) { self.name = name; pointer = EVP_MD_fetch(nil, name, nil) }
    }
    private static let sha256Method = Method("SHA256")
    private static let sha1Method = Method("SHA1")
    private static let md5Method = Method("MD5")

    /// What surveyd uses of libcrypto and this machine's libcrypto does not provide: empty
    /// normally. A configuration that loads only some providers (`OPENSSL_CONF`; a FIPS-only
    /// one has no MD5, which ODK form lists need) lacks some, and every command refuses to
    /// start rather than stop at the first request that needs one.
    public static func missingFromLibcrypto() -> [String] {
        var missing = [sha256Method, sha1Method, md5Method].filter { $0.pointer == nil }.map(\.name)
        if let mac = EVP_MAC_fetch(nil, "HMAC", nil) { EVP_MAC_free(mac) } else { missing.append("HMAC") }
        var byte: UInt8 = 0
        if RAND_bytes(&byte, 1) != 1 { missing.append("a random number generator") }
        return missing
    }
    deinit { EVP_MD_CTX_free(ctx) }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count > 0 { EVP_DigestUpdate(ctx, bytes.baseAddress, bytes.count) }
    }
    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    public consuming func finalize() -> [UInt8] { result() }

    /// The digest of everything so far; the context may not be updated afterwards.
    public func result() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 64)
        var len: UInt32 = 0
        EVP_DigestFinal_ex(ctx, &out, &len)
        return Array(out[0..<Int(len)])
    }

    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var d = Digest(.sha256); d.update(bytes); return d.finalize()
    }
    public static func sha256Hex(_ bytes: [UInt8]) -> String { Hex.encode(sha256(bytes)) }
    public static func sha256Hex(_ s: String) -> String { sha256Hex(Array(s.utf8)) }

    public static func md5(_ bytes: [UInt8]) -> [UInt8] {
        var d = Digest(.md5); d.update(bytes); return d.finalize()
    }
    public static func md5Hex(_ bytes: [UInt8]) -> String { Hex.encode(md5(bytes)) }

    /// Constant-time comparison (CRYPTO_memcmp), for token hashes.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0 } }
    }

    public static func randomBytes(_ n: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        precondition(RAND_bytes(&out, Int32(n)) == 1, "libcrypto RAND_bytes failed")
        return out
    }
}

/// HMAC-SHA256 from libcrypto (webhook signatures).
public enum HMAC {
    public static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length = 0
        let ok = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, k.baseAddress, k.count, m.baseAddress, m.count, &out, out.count, &length)
            }
        }
        precondition(ok != nil && length == 32, "HMAC-SHA256 failed in libcrypto")
        return out
    }
}

public enum Hex {
    public static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8](); out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}

public enum Base64 {
    private static let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlTable = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    /// Each byte's 6-bit value in either alphabet (`+/` and `-_`), -1 for a byte in neither.
    private static let values: [Int8] = {
        var v = [Int8](repeating: -1, count: 256)
        for (i, c) in table.enumerated() { v[Int(c)] = Int8(i) }
        v[Int(UInt8(ascii: "-"))] = 62
        v[Int(UInt8(ascii: "_"))] = 63
        return v
    }()

    /// Standard base64; `url: true` gives the unpadded URL-safe alphabet used for tokens.
    public static func encode(_ bytes: [UInt8], url: Bool = false) -> String {
        let alphabet = url ? urlTable : table
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = bytes[i], b1 = i + 1 < bytes.count ? bytes[i + 1] : 0, b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
            let n = Int(b0) << 16 | Int(b1) << 8 | Int(b2)
            // 2, 3 or 4 characters carry the 1, 2 or 3 bytes left.
            let keep = min(4, (bytes.count - i) + 1)
            for k in 0..<keep { out.append(alphabet[n >> (18 - 6 * k) & 63]) }
            if !url { for _ in keep..<4 { out.append(UInt8(ascii: "=")) } }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ s: String) -> [UInt8]? {
        var bits = 0, acc = 0
        var out = [UInt8]()
        for c in s.utf8 {
            if c == UInt8(ascii: "=") { break }
            let v = Int(values[Int(c)])
            if v < 0 { return nil }
            acc = (acc << 6 | v) & 0xFFFFFF; bits += 6
            if bits >= 8 { bits -= 8; out.append(UInt8((acc >> bits) & 0xFF)) }
        }
        return out
    }
}
