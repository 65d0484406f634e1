import Testing
@testable import SurveyExpressions

/// The regex matcher against java.util.regex's semantics for the subset forms use.
@Suite struct RegexTests {
    struct Match: Sendable, CustomTestStringConvertible {
        let pattern: String
        let input: String
        let expected: Bool
        var testDescription: String { "/\(pattern)/ on \(input.debugDescription)" }

        init(_ pattern: String, _ input: String, _ expected: Bool) {
            self.pattern = pattern
            self.input = input
            self.expected = expected
        }
    }

    /// Whole-value matches, as `Pattern.matches` (JavaRosa XPathFuncExpr.regex).
    static let entire: [Match] = [
        Match("abc", "abc", true),
        Match("abc", "abcd", false),
        Match("abc", "xabc", false),
        Match("a.c", "abc", true),
        Match("a.c", "a\nc", false),
        Match("a.c", "a\u{2028}c", false),
        Match("a*", "", true),
        Match("a+", "", false),
        Match("a?b", "b", true),
        Match("colou?r", "color", true),
        Match("colou?r", "colour", true),
        Match("a{3}", "aaa", true),
        Match("a{3}", "aa", false),
        Match("a{2,}", "aaaaa", true),
        Match("a{2,}", "a", false),
        Match("a{2,3}", "aaa", true),
        Match("a{2,3}", "aaaa", false),
        Match("a{0}", "", true),
        Match("a{0}b", "b", true),
        Match("[abc]+", "abcabc", true),
        Match("[^abc]", "d", true),
        Match("[^abc]", "a", false),
        Match("[a-z0-9_]+", "abc_123", true),
        Match("[a-]", "-", true),
        Match("[-a]", "-", true),
        Match("[]a]", "]", true),
        Match(#"[\d-]+"#, "12-34", true),
        Match(#"[\D]"#, "5", false),
        Match(#"[^\d]"#, "x", true),
        Match(#"\d{4}-\d{2}"#, "2020-01", true),
        Match(#"\D"#, "5", false),
        Match(#"\w+"#, "hello_1", true),
        Match(#"\W"#, " ", true),
        Match(#"\s"#, "\t", true),
        Match(#"\S+"#, "abc", true),
        Match(#"\h"#, "\u{A0}", true),
        Match(#"\v"#, "\n", true),
        Match("(ab)+", "ababab", true),
        Match("(ab)+", "ababa", false),
        Match("(?:ab)+", "abab", true),
        Match(#"(?<year>\d{4})"#, "2020", true),
        Match("a|b|c", "b", true),
        Match("a||b", "", true),
        Match("()", "", true),
        Match("(a|ab)(c|bcd)(d*)", "abcd", true),
        Match("^abc$", "abc", true),
        // `$` may stand before a final line terminator, but the whole input must still be matched.
        Match("abc$", "abc\n", false),
        Match("abc$\n", "abc\n", true),
        Match("a$b", "ab", false),
        Match("^", "", true),
        Match("$", "", true),
        Match("", "", true),
        Match("", "a", false),
        Match(#"\."#, ".", true),
        Match(#"\\"#, "\\", true),
        Match(#"\t"#, "\t", true),
        Match(#"\x41"#, "A", true),
        Match(#"\u00e9"#, "\u{E9}", true),
        Match(#"\uD83D\uDE00"#, "\u{1F600}", true),
        Match(#"\x{1F600}"#, "\u{1F600}", true),
        Match(#"\0101"#, "A", true),
        Match(#"\cA"#, "\u{01}", true),
        Match(#"\Qa.b\E"#, "a.b", true),
        Match(#"\Qa.b\E"#, "axb", false),
        Match(#"\Qab\E+"#, "abbb", true),
        Match(#"\Qa.b"#, "a.b", true),
        Match("}", "}", true),
        Match("]", "]", true),
        Match(#"\{\}"#, "{}", true),
        // Unicode classes, as on Android (ICU): letters, digits and spaces of every script.
        Match(#"\p{L}+"#, "\u{DC}n\u{EF}c\u{F6}d\u{E9}", true),
        Match(#"\pL+"#, "abc", true),
        Match(#"\p{Lu}"#, "a", false),
        Match(#"\p{IsLu}"#, "A", true),
        Match(#"\p{gc=Nd}+"#, "123", true),
        Match(#"\P{L}"#, "1", true),
        Match(#"\p{Alpha}+"#, "abc", true),
        Match(#"\p{Punct}"#, "!", true),
        Match(#"[\p{L} ]+"#, "Jos\u{E9} Mar\u{ED}a", true),
        Match(#"\d"#, "\u{663}", true),
        Match(#"\w+"#, "\u{4E2D}\u{6587}", true),
        // Unicode's \w beyond letters: combining marks, digits of other scripts, connector
        // punctuation and the joiners; not symbols or other punctuation.
        Match(#"\w+"#, "e\u{301}", true),
        Match(#"\w+"#, "\u{915}\u{94D}\u{937}", true),
        Match(#"\w+"#, "\u{663}\u{664}", true),
        Match(#"\w+"#, "a\u{203F}b", true),
        Match(#"\w+"#, "\u{915}\u{94D}\u{200D}", true),
        Match(#"\w+"#, "\u{20DD}", true),
        Match(#"\w"#, "\u{20AC}", false),
        Match(#"\w"#, "\u{AB}", false),
        Match(#"\W"#, "\u{2014}", true),
        Match(".*\\b\u{E9}t\u{E9}\\b.*", "l'\u{E9}t\u{E9} dernier", true),
        Match(#"\s"#, "\u{3000}", true),
        Match(#"\bcat\b"#, "cat", true),
        Match(#".*\bcat\b.*"#, "a cat sat", true),
        Match(#".*\bcat\b.*"#, "concatenate", false),
        Match(#"\Bat"#, "at", false),
        Match("a*?", "aaa", true),
        Match("a+?b", "aaab", true),
        Match("(?:a|b)*c", "ababc", true),
        Match("[0-9]{10}", "0712345678", true),
        Match("^[A-Z]{2}[0-9]{6}$", "AB123456", true),
        Match(#"^\+?[0-9 ]{7,15}$"#, "+254 712 345678", true),
        Match("^[^@ ]+@[^@ ]+\\.[a-z]{2,}$", "ann@example.org", true),
        Match("^[^@ ]+@[^@ ]+\\.[a-z]{2,}$", "ann@example", false),
        Match("(a+)+$", String(repeating: "a", count: 40) + "b", false),
        Match("(a*)*b", String(repeating: "a", count: 40), false),
        Match("(x+x+)+y", String(repeating: "x", count: 40), false),
    ]

    @Test(arguments: entire)
    func matchesWholeValue(_ m: Match) throws {
        var budget = ExpressionLimits.maxEvaluationSteps
        #expect(try RegexProgram(m.pattern).matches(m.input, entire: true, budget: &budget) == m.expected)
    }

    /// A search, as JavaScript's RegExp.test (Enketo); not what regex() does, but the same program.
    static let search: [Match] = [
        Match("b", "abc", true),
        Match("^b", "abc", false),
        Match("c$", "abc", true),
        Match("b$", "ab\n", true),
        Match("x", "abc", false),
        Match("", "abc", true),
        Match("[0-9]+", "abc123", true),
        Match(#"\bcat\b"#, "a cat sat", true),
        Match(#"\bcat\b"#, "concatenate", false),
        Match("(a+)+$", String(repeating: "a", count: 40) + "b", false),
    ]

    @Test(arguments: search)
    func searches(_ m: Match) throws {
        var budget = ExpressionLimits.maxEvaluationSteps
        #expect(try RegexProgram(m.pattern).matches(m.input, entire: false, budget: &budget) == m.expected)
    }

    @Test func counterRepetitionIsExpandedWithinTheLimit() throws {
        #expect(try RegexProgram("a{1000}").instructions.count == 1_001)
        #expect(try RegexProgram("[a-z]{100}").sets.count == 1)
        #expect(throws: RegexError.self) { try RegexProgram("a{2048}") }
    }

    @Test func runningOutOfBudgetIsNil() throws {
        var budget = 100
        #expect(try RegexProgram("a*").matches(String(repeating: "a", count: 1_000), entire: true, budget: &budget) == nil)
    }
}
