import Foundation
import FoundationXML
import Testing
import SurveyDomain

/// An encrypted form (the settings' `public_key`) publishes, and its submissions are taken as ODK
/// Collect sends them: the envelope (`base64EncryptedKey`, `encryptedXmlFile`, a `media/file` per
/// file, `base64EncryptedElementSignature`) with `submission.xml.enc` and each file's `.enc` as
/// parts — stored as received, exactly once, through the gate.
@Suite struct EncryptedFormTests {
    static let form = RealFormsCorpusTests.corpus.appendingPathComponent("surveys/encrypted.xlsx")
    static let sealedKey = String(repeating: "q83vEjRWeJA=", count: 29)
    static let signature = String(repeating: "c2lnbmVkIQ==", count: 29)

    /// The envelope Collect writes in place of the answers (`EncryptionUtils`), with its parts.
    static func envelope(_ instanceID: String, version: String?, media: [String]) -> [UInt8] {
        let versionAttribute = version.map { " version=\"\($0)\"" } ?? ""
        var xml = "<?xml version='1.0' encoding='UTF-8' ?>"
            + "<data id=\"encrypted_case\"\(versionAttribute) encrypted=\"yes\" xmlns=\"http://www.opendatakit.org/xforms/encrypted\">"
            + "<base64EncryptedKey>\(sealedKey)</base64EncryptedKey>"
            + "<meta xmlns=\"http://openrosa.org/xforms\"><instanceID>\(instanceID)</instanceID></meta>"
        for name in media { xml += "<media><file>\(name)</file></media>" }
        xml += "<encryptedXmlFile>submission.xml.enc</encryptedXmlFile>"
            + "<base64EncryptedElementSignature>\(signature)</base64EncryptedElementSignature></data>"
        return Array(xml.utf8)
    }

    static func sealed(_ count: Int, seed: UInt8) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed } }

    @Test func anEncryptedFormPublishesAndItsEnvelopesAreStoredOnceThroughTheGate() throws {
        let f = try Fixture()
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Case reports"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        let published = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken,
                                             body: [UInt8](try Data(contentsOf: Self.form)), headers: ["Content-Type": FormPublishingTests.xlsx])
        #expect(published.status == 201, "\(published.text)")
        let definition = try #require(published.json?["definition"])
        #expect(definition["encryption"]?["publicKey"]?.stringValue?.hasPrefix("MIIBIjANBgkqh") == true)
        // The definition keeps the form's questions; the version says its submissions are sealed.
        #expect(definition["questions"]?.arrayValue?.map { $0["id"]?.stringValue } == ["patient", "positive"])
        let warnings = published.json?["warnings"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(warnings.contains { $0.contains("The form is encrypted") && $0.contains("checks none of the form's rules") }, "\(warnings)")

        let c = CollectClient(f)
        let listed = try #require(try c.formList().forms.first)
        let xform = try c.download(listed).body
        #expect(String(decoding: xform, as: UTF8.self).contains("base64RsaPublicKey=\"MIIBIjANBgkqh"))
        try ODKValidate.accept(xform, label: "encrypted.xlsx as the OpenRosa door serves it")
        let version = try XMLDocument(data: Data(xform)).nodes(forXPath: "//*[local-name()='instance'][1]/*/@version").first?.stringValue

        let answers = Self.sealed(2_000, seed: 7), photo = Self.sealed(40_000, seed: 9)
        let files = [CollectClient.File(name: "submission.xml.enc", contentType: "application/octet-stream", bytes: answers),
                     CollectClient.File(name: "1712.jpg.enc", contentType: "application/octet-stream", bytes: photo)]
        let envelope = Self.envelope("uuid:sealed-0001", version: version, media: ["1712.jpg.enc"])

        // Expired: refused, and nothing of it stored.
        try f.expire()
        let refused = try c.submit(envelope, files: files)
        #expect(refused.status == 402 && refused.header("surveyd-error-code") == "1001", "\(refused.text)")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses") == 0)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM uploads") == 0)
        try f.renew()

        let r = try c.submit(envelope, files: files)
        #expect(r.status == 201, "\(r.text)")
        let stored = try f.client.get("/v1/orgs/\(f.orgId)/responses?clientSubmissionId=uuid:sealed-0001", token: f.collectorToken)
        let sealed = try #require(stored.json?["answers"])
        #expect(sealed["base64EncryptedKey"]?.stringValue == Self.sealedKey)
        #expect(sealed["base64EncryptedElementSignature"]?.stringValue == Self.signature)
        let xmlUpload = try #require(sealed["encryptedXmlFile"]?["clientUploadId"]?.stringValue)
        let photoUpload = try #require(sealed["media"]?.arrayValue?.first?["file"]?["clientUploadId"]?.stringValue)
        for (id, bytes) in [(xmlUpload, answers), (photoUpload, photo)] {
            let content = try f.client.get("/v1/orgs/\(f.orgId)/uploads/\(id)/content", token: f.reviewerToken)
            #expect(content.status == 200 && content.body == bytes)
        }
        // Resent whole: the same response, nothing stored twice.
        #expect(try c.submit(envelope, files: files).status == 202)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses") == 1)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM uploads") == 2)

        // A plain instance sent to an encrypted form (an app that did not encrypt): refused,
        // naming the sealed answers it lacks; nothing stored.
        let plain = try CollectClient.instance(of: xform, instanceID: "uuid:plain-0001", values: [("patient", "Ama"), ("positive", "no")])
        let unsealed = try c.submit(plain)
        #expect(unsealed.status == 422, "\(unsealed.text)")
        #expect(OpenRosaTests.message(unsealed).contains("encryptedXmlFile"), "\(unsealed.text)")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses") == 1)
    }

    @Test func aJSONDefinitionWithAPublicKeyIsWrittenAsAnEncryptedXForm() throws {
        let f = try Fixture()
        let key = String(repeating: "MIIBIjANBgkqhkiG", count: 8)
        let definition: JSONValue = [
            "title": "Sealed", "formId": "sealed_json", "encryption": ["publicKey": .string(key)],
            "questions": [["id": "name", "type": "text", "label": "Name"]],
        ]
        let v = try f.publishSurvey(definition: definition)
        let xform = try f.client.get("/v1/orgs/\(f.orgId)/survey-versions/\(v.versionId)/xform", token: f.adminToken)
        #expect(xform.status == 200)
        #expect(String(decoding: xform.body, as: UTF8.self).contains("<submission base64RsaPublicKey=\"\(key)\" method=\"post\"/>"), "\(xform.text)")
        try ODKValidate.accept(xform.body, label: "a JSON definition with a public key")

        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Bad key"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        var bad = definition.objectValue ?? [:]
        bad["encryption"] = ["publicKey": "not a key"]
        let refused = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, ["definition": .object(bad)])
        #expect(refused.status == 422)
        #expect(refused.json?["errors"]?.arrayValue?.first?["path"] == "definition.encryption.publicKey", "\(refused.text)")
    }
}
