import Testing
@testable import SurveyDomain
@testable import SurveyForms

private func parse(_ s: String) throws(JSONParseError) -> JSONValue { try JSONParser.parse(Array(s.utf8)) }

private func parseError(_ bytes: [UInt8]) -> JSONParseError? {
    do { _ = try JSONParser.parse(bytes); return nil } catch { return error }
}
private func parseError(_ s: String) -> JSONParseError? { parseError(Array(s.utf8)) }

@Suite struct JSONParserTests {
    @Test func scalars() throws {
        #expect(try parse("null") == .null)
        #expect(try parse("true") == .bool(true))
        #expect(try parse("false") == .bool(false))
        #expect(try parse("0") == .number(0))
        #expect(try parse("-12") == .number(-12))
        #expect(try parse("\"hi\"") == .string("hi"))
        #expect(try parse(" \t\r\n 1 \n") == .number(1))
    }

    @Test func containers() throws {
        let v = try parse(#"{"a": [1, 2.5, {"b": null}], "c": {}, "d": [], "e": "x"}"#)
        #expect(v == .object([
            "a": .array([.number(1), .number(2.5), .object(["b": .null])]),
            "c": .object([:]), "d": .array([]), "e": .string("x"),
        ]))
        #expect(try parse("[ ]") == .array([]))
        #expect(try parse("{ }") == .object([:]))
    }

    @Test func numbers() throws {
        let cases: [(String, Double)] = [
            ("0", 0), ("-0", -0.0), ("1", 1), ("123456789", 123456789), ("1.5", 1.5), ("-1.25e2", -125),
            ("1E3", 1000), ("1e+3", 1000), ("25e-1", 2.5), ("0.1", 0.1), ("0.3", 0.3),
            ("9007199254740993", 9007199254740992), // beyond 2^53: rounds to even
            ("123456789012345678901234567890", 1.2345678901234568e29),
            ("1.7976931348623157e308", 1.7976931348623157e308), ("5e-324", .leastNonzeroMagnitude),
            ("1e-400", 0), ("0.000001", 0.000001), ("1e22", 1e22), ("1e23", 1e23),
            ("3.141592653589793238462643383279", 3.141592653589793),
            ("0e99999999999", 0),
        ]
        for (text, expected) in cases {
            let v = try parse(text)
            #expect(v == .number(expected), "\(text)")
        }
        // The sign of zero is kept.
        #expect(try parse("-0").doubleValue?.sign == .minus)
    }

    @Test func numberGrammarViolations() {
        for text in ["01", "-", "+1", "1.", ".5", "1e", "1e+", "0x10", "1.e3", "--1", "Infinity", "NaN", "-Infinity", "1_000"] {
            #expect(parseError(text) != nil, "\(text)")
        }
    }

    @Test func overflowToInfinityIsRejected() {
        #expect(parseError("1e309")?.message == "number out of range")
        #expect(parseError("-1.8e308")?.message == "number out of range")
        #expect(parseError("[1, 1e400]")?.offset == 4)
    }

    @Test func strings() throws {
        #expect(try parse(#""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{8}\u{c}\n\r\t"))
        #expect(try parse(#""\u0041\u00e9\u20AC""#) == .string("Aé€"))
        #expect(try parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try parse(#""x\u0000y""#) == .string("x\u{0}y"))
        #expect(try parse("\"héllo €😀\"") == .string("héllo €😀"))
        // Escapes after raw multibyte text keep both.
        #expect(try parse("\"é\\n😀\"") == .string("é\n😀"))
    }

    @Test func surrogates() {
        #expect(parseError(#""\ud83d""#)?.message == "lone surrogate")
        #expect(parseError(#""\ud83dx""#)?.message == "lone surrogate")
        #expect(parseError(#""\ude00""#)?.message == "lone surrogate")
        #expect(parseError(#""\ud83d\u0041""#)?.message == "lone surrogate")
        #expect(parseError(#""\ud83d\ud83d""#)?.message == "lone surrogate")
    }

    @Test func badStrings() {
        #expect(parseError("\"abc")?.message == "unterminated string")
        #expect(parseError("\"a\\")?.message == "unterminated string")
        #expect(parseError("\"a\nb\"")?.message == "control character in string")
        #expect(parseError("\"a\tb\"")?.message == "control character in string")
        #expect(parseError(#""\x""#)?.message == "invalid escape")
        #expect(parseError(#""\u12""#)?.message == #"invalid \u escape"#)
        #expect(parseError(#""\u12G4""#)?.message == #"invalid \u escape"#)
        #expect(parseError("'a'") != nil)
    }

    @Test func invalidUTF8() {
        let cases: [[UInt8]] = [
            [0x22, 0xC3, 0x22],             // truncated 2-byte
            [0x22, 0xC0, 0xAF, 0x22],       // overlong '/'
            [0x22, 0xE0, 0x80, 0xAF, 0x22], // overlong 3-byte
            [0x22, 0xED, 0xA0, 0x80, 0x22], // encoded surrogate U+D800
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], // > U+10FFFF
            [0x22, 0xFF, 0x22],
            [0x22, 0x80, 0x22],             // stray continuation byte
            [0x22, 0xE2, 0x82, 0x22],       // cut 3-byte
        ]
        for bytes in cases {
            #expect(parseError(bytes)?.message == "invalid UTF-8", "\(bytes)")
            #expect(parseError(bytes)?.offset == 1, "\(bytes)")
        }
        // Non-ASCII outside strings is never valid.
        #expect(parseError([0xEF, 0xBB, 0xBF, 0x31]) != nil) // BOM
    }

    @Test func whitespaceIsOnlyTheFourJSONCharacters() {
        #expect(parseError("\u{0C}1") != nil)     // form feed
        #expect(parseError("1\u{0B}") != nil)     // vertical tab
        #expect(parseError("\u{A0}1") != nil)     // no-break space
    }

    @Test func trailingGarbageAndComments() {
        #expect(parseError("1 2")?.message == "unexpected data after the JSON value")
        #expect(parseError("{} x")?.offset == 3)
        #expect(parseError("[1,]") != nil)
        #expect(parseError("{\"a\":1,}") != nil)
        #expect(parseError("[1 // c\n]") != nil)
        #expect(parseError("/* c */ 1") != nil)
        #expect(parseError("")?.message == "unexpected end of input")
        #expect(parseError("   ")?.message == "unexpected end of input")
        #expect(parseError("[1")?.message == "unexpected end of input")
        #expect(parseError("{\"a\" 1}")?.message == "expected ':'")
        #expect(parseError("{1:2}")?.message == "expected a string key")
        #expect(parseError("[1 2]")?.message == "expected ',' or ']'")
        #expect(parseError("{\"a\":1 \"b\":2}")?.message == "expected ',' or '}'")
        #expect(parseError("tru")?.message == "invalid literal")
        #expect(parseError("nulL")?.message == "invalid literal")
        #expect(parseError("True") != nil)
    }

    @Test func duplicateKeys() {
        let e = parseError(#"{"a": 1, "b": 2, "a": 3}"#)
        #expect(e == JSONParseError(offset: 17, message: "duplicate key"))
        // Also when the duplicate is spelled with an escape.
        #expect(parseError(#"{"a": 1, "\u0061": 2}"#)?.message == "duplicate key")
        // Same key in different objects is fine.
        #expect(parseError(#"[{"a": 1}, {"a": 2}]"#) == nil)
    }

    @Test func depthLimit() {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(parseError(ok) == nil)
        let tooDeep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(parseError(tooDeep) == JSONParseError(offset: 64, message: "nesting deeper than 64"))
        let mixed = String(repeating: "{\"a\":[", count: 32) + "1" + String(repeating: "]}", count: 32)
        #expect(parseError(mixed) == nil)
        let mixedDeep = String(repeating: "{\"a\":[", count: 33) + "1" + String(repeating: "]}", count: 33)
        #expect(parseError(mixedDeep)?.message == "nesting deeper than 64")
        // Depth is nesting, not the count of containers.
        let wide = "[" + Array(repeating: "[[]]", count: 200).joined(separator: ",") + "]"
        #expect(parseError(wide) == nil)
    }

    @Test func overloadsAgree() throws {
        let text = #"{"k": [1, "two", true]}"#
        let bytes = Array(text.utf8)
        let expected = try JSONParser.parse(bytes)
        #expect(try JSONParser.parse(text) == expected)
        #expect(try JSONParser.parse(ArraySlice(bytes)) == expected)
        #expect(try JSONParser.parse(text.utf8) == expected)
        #expect(try bytes.withUnsafeBytes { raw throws(JSONParseError) in try JSONParser.parse(raw) } == expected)
        // A slice that does not start at 0 reports offsets relative to the slice.
        let padded = Array("xx[1,]".utf8)
        #expect(parseError(Array(padded[2...]))?.offset == 3)
        do { _ = try JSONParser.parse(padded[2...]); Issue.record("should fail") } catch { #expect(error.offset == 3) }
    }

    @Test func errorOffsets() {
        #expect(parseError("[1, x]")?.offset == 4)
        #expect(parseError("\"ab\\q\"")?.offset == 3)
        #expect(parseError("[\"\\ud800\"]")?.offset == 2)
    }
}
