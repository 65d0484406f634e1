import SurveyDomain

/// The Standard Webhooks signature: `v1,` and the base64 HMAC-SHA256 of
/// "{webhook-id}.{webhook-timestamp}.{body}", keyed with the secret's bytes (the base64 after
/// `whsec_`). Several secrets (a rotation's overlap) give several signatures, space-separated.
public enum WebhookSignature {
    public static func header(secrets: [String], id: String, timestamp: Int64, body: [UInt8]) -> String {
        let message = Array("\(id).\(timestamp).".utf8) + body
        return secrets.map { "v1," + Base64.encode(HMAC.sha256(key: key(of: $0), message: message)) }.joined(separator: " ")
    }

    /// The bytes a secret stands for.
    public static func key(of secret: String) -> [UInt8] {
        let encoded = secret.hasPrefix("whsec_") ? String(secret.dropFirst(6)) : secret
        return Base64.decode(encoded) ?? Array(encoded.utf8)
    }
}
