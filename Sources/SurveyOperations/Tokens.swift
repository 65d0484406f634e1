import SurveyDomain

/// Bearer tokens: 256 random bits from libcrypto, shown once, stored only as SHA-256.
public enum Tokens {
    public static func generate() -> (token: String, hash: [UInt8]) {
        let token = "sdt_" + Base64.encode(Digest.randomBytes(32), url: true)
        return (token, hash(token))
    }

    public static func hash(_ token: String) -> [UInt8] { Digest.sha256(Array(token.utf8)) }
}
