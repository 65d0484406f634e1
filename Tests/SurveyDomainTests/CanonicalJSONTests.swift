import Testing
@testable import SurveyDomain
@testable import SurveyForms

@Suite struct CanonicalJSONTests {
    /// RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
    @Test(arguments: [
        (0x0000_0000_0000_0000, "0"),
        (0x8000_0000_0000_0000, "0"),
        (0x0000_0000_0000_0001, "5e-324"),
        (0x8000_0000_0000_0001, "-5e-324"),
        (0x7FEF_FFFF_FFFF_FFFF, "1.7976931348623157e+308"),
        (0xFFEF_FFFF_FFFF_FFFF, "-1.7976931348623157e+308"),
        (0x4340_0000_0000_0000, "9007199254740992"),
        (0xC340_0000_0000_0000, "-9007199254740992"),
        (0x4430_0000_0000_0000, "295147905179352830000"),
        (0x44B5_2D02_C7E1_4AF5, "9.999999999999997e+22"),
        (0x44B5_2D02_C7E1_4AF6, "1e+23"),
        (0x44B5_2D02_C7E1_4AF7, "1.0000000000000001e+23"),
        (0x444B_1AE4_D6E2_EF4E, "999999999999999700000"),
        (0x444B_1AE4_D6E2_EF4F, "999999999999999900000"),
        (0x444B_1AE4_D6E2_EF50, "1e+21"),
        (0x3EB0_C6F7_A0B5_ED8C, "9.999999999999997e-7"),
        (0x3EB0_C6F7_A0B5_ED8D, "0.000001"),
        (0x41B3_DE43_5555_5553, "333333333.3333332"),
        (0x41B3_DE43_5555_5554, "333333333.33333325"),
        (0x41B3_DE43_5555_5555, "333333333.3333333"),
        (0x41B3_DE43_5555_5556, "333333333.3333334"),
        (0x41B3_DE43_5555_5557, "333333333.33333343"),
        (0xBECB_F647_612F_3696, "-0.0000033333333333333333"),
        (0x4314_3FF3_C1CB_0959, "1424953923781206.2"),
    ] as [(UInt64, String)])
    func rfc8785NumberTable(bits: UInt64, expected: String) {
        #expect(CanonicalJSON.number(Double(bitPattern: bits)) == expected)
    }

    @Test func numberFormsAroundTheThresholds() {
        let cases: [(Double, String)] = [
            (1, "1"), (-1, "-1"), (1.5, "1.5"), (-0.5, "-0.5"), (100, "100"), (123.456, "123.456"),
            (1e20, "100000000000000000000"), (1e21, "1e+21"), (1.5e21, "1.5e+21"), (-1e21, "-1e+21"),
            (1e-7, "1e-7"), (1.25e-7, "1.25e-7"), (0.000001, "0.000001"), (0.0000015, "0.0000015"),
            (0.1, "0.1"), (0.3, "0.3"), (0.1 + 0.2, "0.30000000000000004"), (1e16, "10000000000000000"),
            (12345678901234567168, "12345678901234567000"), (2e-3, "0.002"), (1e30, "1e+30"),
            (4.5, "4.5"), (1e-27, "1e-27"), (-0.0, "0"), (5e-7, "5e-7"), (123e-20, "1.23e-18"),
            (9007199254740994, "9007199254740994"), (2e53, "2e+53"), (1.5e300, "1.5e+300"), (4294967296, "4294967296"),
            // integers are written digit by digit (no String in between)
            (9007199254740991, "9007199254740991"), (-9007199254740991, "-9007199254740991"), (10, "10"), (-10, "-10"),
            (7, "7"), (1000000, "1000000"), (-987654321, "-987654321"),
        ]
        for (d, text) in cases {
            #expect(CanonicalJSON.number(d) == text, "\(d)")
        }
        #expect(CanonicalJSON.string(.number(.infinity)) == "null")
        #expect(CanonicalJSON.string(.number(.nan)) == "null")
    }

    /// RFC 8785 section 3.2.2 sample input and output.
    @Test func rfc8785SampleObject() throws {
        let input = #"""
        {
          "numbers": [333333333.33333329, 1E30, 4.50,
                      2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }
        """#
        let expected = #"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        let v = try JSONParser.parse(input)
        #expect(CanonicalJSON.string(v) == expected)
        #expect(CanonicalJSON.encode(v) == Array(expected.utf8))
    }

    /// RFC 8785 section 3.2.3: keys sort by UTF-16 code units (the emoji's surrogates sort
    /// before U+FB33 although its code point is larger).
    @Test func rfc8785KeySorting() throws {
        let input = #"""
        {
          "\u20ac": "Euro Sign",
          "\r": "Carriage Return",
          "\ufb33": "Hebrew Letter Dalet With Dagesh",
          "1": "One",
          "\ud83d\ude00": "Emoji: Grinning Face",
          "\u0080": "Control",
          "\u00f6": "Latin Small Letter O With Diaeresis"
        }
        """#
        let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\","
            + "\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\","
            + "\"😀\":\"Emoji: Grinning Face\",\"\u{FB33}\":\"Hebrew Letter Dalet With Dagesh\"}"
        #expect(CanonicalJSON.string(try JSONParser.parse(input)) == expected)
    }

    @Test func keyOrderEdgeCases() {
        // U+FFFD vs U+1F600: code point order puts U+FFFD first, UTF-16 (JCS) puts the emoji first.
        let v: JSONValue = ["\u{FFFD}": 1, "😀": 2, "ab": 3, "a": 4, "é": 5, "z": 6, "": 7]
        #expect(CanonicalJSON.string(v) == "{\"\":7,\"a\":4,\"ab\":3,\"z\":6,\"é\":5,\"😀\":2,\"\u{FFFD}\":1}")
    }

    /// Keys are sorted by an 8-byte prefix first: keys sharing it, keys shorter than it, NUL
    /// bytes and non-ASCII bytes inside it must still come out in UTF-16 order.
    @Test func keyOrderMatchesUTF16OrderForRandomKeys() throws {
        let pieces = ["a", "b", "A", "\u{0}", "_", "1", "é", "😀", "\u{FFFD}", "\u{FB33}", "abcdefgh", "abcdefg", "\u{7F}", "\u{80}"]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var members: [String: JSONValue] = [:]
            for n in 0..<Int.random(in: 1...40, using: &rng) {
                let key = (0..<Int.random(in: 0...6, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
                members[key] = .number(Double(n))
            }
            let expected = members.keys.sorted { $0.utf16.lexicographicallyPrecedes($1.utf16) }
            guard case .object(let back) = try JSONParser.parse(CanonicalJSON.encode(.object(members))) else {
                Issue.record("not an object"); return
            }
            #expect(back == members)
            // The keys in the order they were written, read back from the bytes themselves.
            var written: [String] = []
            var rest = Substring(CanonicalJSON.string(.object(members)))
            for key in expected {
                let quoted = CanonicalJSON.string(.string(key)) + ":"
                guard let r = rest.range(of: quoted) else { break }
                written.append(key)
                rest = rest[r.upperBound...]
            }
            #expect(written == expected)
        }
    }

    @Test func stringEscaping() {
        let s = "q\"b\\s/\u{8}\u{c}\n\r\t\u{0}\u{1f}\u{7f}é😀\u{2028}"
        #expect(CanonicalJSON.string(.string(s)) == #""q\"b\\s/\b\f\n\r\t\u0000\u001f"# + "\u{7f}é😀\u{2028}\"")
        #expect(CanonicalJSON.string(.string("")) == #""""#)
        #expect(CanonicalJSON.string(.string("\u{1}\u{1a}")) == #""\u0001\u001a""#)
    }

    @Test func nestedStructureHasNoWhitespace() {
        let v: JSONValue = ["b": [1, 2.5, nil, true, ["z": "y", "a": [:]]], "a": [], "B": "x"]
        #expect(CanonicalJSON.string(v) == #"{"B":"x","a":[],"b":[1,2.5,null,true,{"a":{},"z":"y"}]}"#)
    }

    @Test func reencodingsOfTheSameContentAgree() throws {
        let a = try JSONParser.parse(#"{"x": 1.0, "y": [1e2, "\u00e9"], "z": {"b": false, "a": -0}}"#)
        let b = try JSONParser.parse("{\"z\":{\"a\":0,\"b\":false},\"y\":[100,\"é\"],\"x\":1}")
        #expect(CanonicalJSON.encode(a) == CanonicalJSON.encode(b))
        #expect(CanonicalJSON.string(a) == #"{"x":1,"y":[100,"é"],"z":{"a":0,"b":false}}"#)
        // Canonical output parses back to the same value.
        #expect(try JSONParser.parse(CanonicalJSON.encode(a)) == a)
    }

    /// A submission's digest is built around its already-encoded answers: it must be exactly the
    /// canonical form of the whole body, wherever the added key sorts (first, middle, last).
    @Test(arguments: ["answers", "A", "m", "zz", "😀", "\u{FFFD}"])
    func addingAnEncodedMemberEqualsEncodingTheWhole(key: String) {
        let members: [String: JSONValue] = ["clientSubmissionId": "abc-123", "b": [1, 2.5, nil], "Z": ["y": true, "a": 0], "\u{FB33}": "x"]
        let part: JSONValue = ["q2": [3, "é"], "q1": 1e21, "q10": ["lat": -1.5, "lon": 30]]
        var whole = members
        whole[key] = part
        #expect(CanonicalJSON.encode(members, adding: key, encoded: CanonicalJSON.encode(part)) == CanonicalJSON.encode(.object(whole)))
        // A member of the same name in `members` is replaced, never written twice.
        #expect(CanonicalJSON.encode(whole, adding: key, encoded: CanonicalJSON.encode(part)) == CanonicalJSON.encode(.object(whole)))
    }
}
