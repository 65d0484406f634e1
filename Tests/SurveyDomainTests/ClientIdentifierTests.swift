import Testing
@testable import SurveyDomain
@testable import SurveyForms

@Suite struct ClientIdentifierTests {
    @Test func valid() {
        for s in ["abcdefgh", "0f8fad5b-d9cb-469f-a165-70867728950e", "A_B-C:D.E", "12345678",
                  String(repeating: "z", count: 128), "........", "urn:uuid:0f8fad5b"] {
            #expect(ClientIdentifier.isValid(s), "\(s)")
        }
    }

    @Test func invalid() {
        for s in ["", "abcdefg", String(repeating: "z", count: 129), "abc defgh", "abcdefgh!", "abcd/efgh",
                  "\"abcdefgh\"", "abcdéfgh", "abcdefgh\n", "abc+defgh", "ＡＢＣＤＥＦＧＨ", "abcd%20efgh"] {
            #expect(!ClientIdentifier.isValid(s), "\(s)")
        }
    }

    @Test func normalizeHeaderValues() {
        let id = "0f8fad5b-d9cb-469f-a165-70867728950e"
        #expect(ClientIdentifier.normalize(headerValue: id) == id)
        #expect(ClientIdentifier.normalize(headerValue: "\"\(id)\"") == id)
        #expect(ClientIdentifier.normalize(headerValue: "  \"\(id)\"\t") == id)
        #expect(ClientIdentifier.normalize(headerValue: " \(id) ") == id)
        // Only one pair of quotes is removed, and only a matching pair.
        #expect(ClientIdentifier.normalize(headerValue: "\"\"\(id)\"\"") == nil)
        #expect(ClientIdentifier.normalize(headerValue: "\"\(id)") == nil)
        #expect(ClientIdentifier.normalize(headerValue: "\(id)\"") == nil)
        #expect(ClientIdentifier.normalize(headerValue: "\"short\"") == nil)
        #expect(ClientIdentifier.normalize(headerValue: "\"\"") == nil)
        #expect(ClientIdentifier.normalize(headerValue: "\"") == nil)
        #expect(ClientIdentifier.normalize(headerValue: "") == nil)
        #expect(ClientIdentifier.normalize(headerValue: "\"abc defgh\"") == nil)
        // The 8–128 limit applies to the key inside the quotes.
        #expect(ClientIdentifier.normalize(headerValue: "\"abcdefgh\"") == "abcdefgh")
        #expect(ClientIdentifier.normalize(headerValue: "\"abcdefg\"") == nil)
        #expect(ClientIdentifier.normalize(headerValue: "\"\(String(repeating: "k", count: 128))\"") == String(repeating: "k", count: 128))
    }

    @Test func aScanFindsTheFirstValidIdAfterTheKey() {
        func scan(_ s: String) -> String? { ClientIdentifier.scan(Array(s.utf8), key: "clientSubmissionId") }
        #expect(scan(#"{"clientSubmissionId":"abc-0001:x.y_z"}"#) == "abc-0001:x.y_z")
        #expect(scan("{ \"clientSubmissionId\" \n:\t \"abcdefgh\" }") == "abcdefgh")
        // The first occurrence, nested or not: a hint, not a parse.
        #expect(scan(#"{"a":{"clientSubmissionId":"nested-01"},"clientSubmissionId":"outer-001"}"#) == "nested-01")
        // A key that only ends like it, a value that is no identifier: nothing.
        #expect(scan(#"{"xclientSubmissionId":"abcdefgh"}"#) == nil)
        #expect(scan(#"{"clientSubmissionId":"abc\u0064efgh"}"#) == nil)
        #expect(scan(#"{"clientSubmissionId":"short"}"#) == nil)
        #expect(scan(#"{"clientSubmissionId":12345678}"#) == nil)
        #expect(scan(#"{"clientSubmissionId":"abcdefgh"#) == nil)
        #expect(scan(#"{"clientSubmissionId""#) == nil)
        #expect(scan("") == nil)
    }
}
