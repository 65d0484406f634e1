import Testing
@testable import SurveyDomain
@testable import SurveyForms

/// A published version's contentHash is what every app in the field holds: if canonical JSON or
/// hashing ever changed, their queued responses would all be refused with 1003.
@Suite struct DigestStabilityTests {
    static let definition: JSONValue = [
        "title": "Household", "questions": [
            ["id": "size", "type": "integer", "label": "People", "required": true, "minimum": 1, "maximum": 50],
            ["id": "source", "type": "select_one", "label": "Water", "choices": ["well", "piped", "river"]],
            ["id": "note", "type": "text", "label": "Café ☕ \"quoted\"\n", "maxLength": 20],
            ["id": "where", "type": "geopoint", "label": "Where"],
        ],
    ]

    @Test func theCanonicalFormAndItsHashArePinned() {
        let canonical = CanonicalJSON.string(Self.definition)
        #expect(canonical == #"{"questions":[{"id":"size","label":"People","maximum":50,"minimum":1,"required":true,"type":"integer"},{"choices":["well","piped","river"],"id":"source","label":"Water","type":"select_one"},{"id":"note","label":"Café ☕ \"quoted\"\n","maxLength":20,"type":"text"},{"id":"where","label":"Where","type":"geopoint"}],"title":"Household"}"#)
        #expect(Digest.sha256Hex(Array(canonical.utf8)) == Digest.sha256Hex(CanonicalJSON.encode(Self.definition)))
    }

    @Test func reEncodingsHashTheSame() throws {
        let variants = [
            #"{"title":"Household","questions":[{"type":"integer","id":"size","label":"People","required":true,"minimum":1.0,"maximum":5e1},{"id":"source","type":"select_one","label":"Water","choices":["well","piped","river"]},{"id":"note","type":"text","label":"Caf\u00e9 \u2615 \"quoted\"\n","maxLength":20},{"id":"where","type":"geopoint","label":"Where"}]}"#,
            "{ \"questions\" : [ {\"id\":\"size\",\"label\":\"People\",\"maximum\":50,\"minimum\":1,\"required\":true,\"type\":\"integer\"}, {\"choices\":[\"well\",\"piped\",\"river\"],\"id\":\"source\",\"label\":\"Water\",\"type\":\"select_one\"}, {\"id\":\"note\",\"label\":\"Café ☕ \\\"quoted\\\"\\n\",\"maxLength\":20,\"type\":\"text\"}, {\"id\":\"where\",\"label\":\"Where\",\"type\":\"geopoint\"} ],\n \"title\" : \"Household\" }",
        ]
        let expected = Digest.sha256Hex(CanonicalJSON.encode(Self.definition))
        for v in variants {
            let parsed = try JSONParser.parse(Array(v.utf8))
            #expect(Digest.sha256Hex(CanonicalJSON.encode(parsed)) == expected)
        }
        // One character of difference is another hash.
        var other = Self.definition.objectValue!
        other["title"] = "Household."
        #expect(Digest.sha256Hex(CanonicalJSON.encode(.object(other))) != expected)
    }

    /// MD5 names an XForm as ODK servers do (RFC 1321's test vectors).
    @Test func md5IsRFC1321s() {
        #expect(Digest.md5Hex([]) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Digest.md5Hex(Array("abc".utf8)) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(Digest.md5Hex(Array("message digest".utf8)) == "f96b697d7cb7938d525a2f31aaf161d0")
    }
}

/// Base64 as RFC 4648 section 10 spells it, in both alphabets, and read back.
@Suite struct Base64Tests {
    @Test func theRFC4648VectorsEncodeAndDecode() {
        let vectors = ["": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            #expect(Base64.encode(Array(plain.utf8)) == encoded)
            #expect(Base64.encode(Array(plain.utf8), url: true) == encoded.replacingOccurrences(of: "=", with: ""))
            #expect(Base64.decode(encoded) == Array(plain.utf8))
        }
    }

    @Test func theURLAlphabetUsesMinusAndUnderscore() {
        #expect(Base64.encode([0xFB, 0xFF, 0xBF]) == "+/+/")
        #expect(Base64.encode([0xFB, 0xFF, 0xBF], url: true) == "-_-_")
        #expect(Base64.decode("-_-_") == [0xFB, 0xFF, 0xBF])
        #expect(Base64.decode("a b") == nil)
        let all = (0..<300).map { UInt8($0 % 256) }
        #expect(Base64.decode(Base64.encode(all)) == all)
        #expect(Base64.decode(Base64.encode(all, url: true)) == all)
    }
}
