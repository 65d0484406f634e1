import CCrypto

/// AES-256-GCM from libcrypto, for small messages only the key's holder may read or make (an
/// export cursor). A box is nonce (12 random bytes) ‖ ciphertext ‖ tag (16 bytes); `context` is
/// authenticated with it but not stored, so a box opens only in the context it was sealed for.
public enum SealedBox {
    public static let overhead = 12 + 16

    public static func seal(_ plaintext: [UInt8], key: [UInt8], context: [UInt8]) -> [UInt8] {
        precondition(key.count == 32, "AES-256 takes a 32-byte key")
        let nonce = Digest.randomBytes(12)
        let ctx = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(ctx) }
        var body = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: 16)
        var n: Int32 = 0, last: Int32 = 0
        let ok = EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce) == 1
            && (context.isEmpty || EVP_EncryptUpdate(ctx, nil, &n, context, Int32(context.count)) == 1)
            && EVP_EncryptUpdate(ctx, &body, &n, plaintext, Int32(plaintext.count)) == 1
            && body.withUnsafeMutableBufferPointer { EVP_EncryptFinal_ex(ctx, $0.baseAddress.map { $0 + Int(n) }, &last) } == 1
            && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, &tag) == 1
        precondition(ok, "AES-256-GCM failed in libcrypto")
        return nonce + body[0..<Int(n + last)] + tag
    }

    /// The plaintext, or nil when the box was not sealed with this key in this context (or was
    /// changed since).
    public static func open(_ box: [UInt8], key: [UInt8], context: [UInt8]) -> [UInt8]? {
        guard key.count == 32, box.count >= overhead else { return nil }
        let nonce = Array(box[0..<12]), sealed = Array(box[12..<(box.count - 16)])
        var tag = Array(box[(box.count - 16)...])
        let ctx = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(ctx) }
        var plain = [UInt8](repeating: 0, count: sealed.count + 16)
        var n: Int32 = 0, last: Int32 = 0
        let ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce) == 1
            && (context.isEmpty || EVP_DecryptUpdate(ctx, nil, &n, context, Int32(context.count)) == 1)
            && EVP_DecryptUpdate(ctx, &plain, &n, sealed, Int32(sealed.count)) == 1
            && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1
            // The tag is checked here: a changed box, key or context fails.
            && plain.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(ctx, $0.baseAddress.map { $0 + Int(n) }, &last) } > 0
        return ok ? Array(plain[0..<Int(n + last)]) : nil
    }
}
