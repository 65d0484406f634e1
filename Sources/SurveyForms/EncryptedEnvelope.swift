/// What ODK apps send for an encrypted form (`encryption.publicKey`, an XForm's `<submission
/// base64RsaPublicKey>`): not the answers but an envelope around them — the answers sealed in
/// `submission.xml.enc`, each file sealed as `<name>.enc`, the AES key that seals them encrypted
/// with the form's RSA public key, and a signature. The server holds no private key, so it
/// checks the envelope, never the form's rules: a version of an encrypted form takes its
/// submissions as these questions, stored as received.
public enum EncryptedEnvelope {
    /// The definition's member naming the key: `{"encryption": {"publicKey": "<base64 RSA key>"}}`.
    public static let key = "encryption"

    /// The envelope as a definition: what `SurveyDefinition.nodes` of an encrypted form is.
    static let definition: JSONValue = [
        "title": "Encrypted submission",
        "questions": [
            ["id": "base64EncryptedKey", "type": "text", "required": true,
             "label": "The key the answers are sealed with, encrypted with the form's public key"],
            ["id": "encryptedXmlFile", "type": "file", "required": true, "accept": ["application/octet-stream"],
             "label": "The answers, encrypted (submission.xml.enc)"],
            ["id": "media", "type": "repeat", "label": "A file sent with the answers, encrypted", "children": [
                ["id": "file", "type": "file", "accept": ["application/octet-stream"], "label": "The file, encrypted (<name>.enc)"],
            ]],
            ["id": "base64EncryptedElementSignature", "type": "text",
             "label": "The signature of the submission, encrypted with the form's public key"],
        ],
    ]

    /// The envelope's definition, read once by the same rules as every other.
    static let parsed: SurveyDefinition? = try? SurveyDefinition.parse(definition)
}
