import Testing
@testable import SurveyDomain

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
}
