import Testing
@testable import SurveyExpressions

/// What `Expression.init` refuses, with its sentence and offset (in Unicode scalars).
@Suite struct StaticErrorTests {
    struct Refusal: Sendable, CustomTestStringConvertible {
        let source: String
        let message: String
        let offset: Int
        var testDescription: String { source }

        init(_ source: String, _ message: String, _ offset: Int) {
            self.source = source
            self.message = message
            self.offset = offset
        }
    }

    static let refusals: [Refusal] = [
        // Unknown functions and argument counts (JavaRosa's arities).
        Refusal("foo(1)", "unknown function 'foo'", 0),
        Refusal("1 + bar()", "unknown function 'bar'", 4),
        Refusal("jr:choice-label(${x}, 'x')", "unknown function 'jr:choice-label'", 0),
        Refusal("if(1, 2)", "if() expects 3 arguments, got 2", 0),
        Refusal("concat('a') and not(1, 2)", "not() expects 1 argument, got 2", 16),
        Refusal("round()", "round() expects 1 or 2 arguments, got 0", 0),
        Refusal("substr('a')", "substr() expects 2 or 3 arguments, got 1", 0),
        Refusal("true(1)", "true() expects no arguments, got 1", 0),
        Refusal("join()", "join() expects at least 1 argument, got 0", 0),
        Refusal("coalesce(${a}, ${b}, 'x')", "coalesce() expects 2 arguments, got 3", 0),
        Refusal("position(.)", "position() takes no argument or '..'", 0),
        // Parentheses.
        Refusal("(1 + 2", "'(' at offset 0 is never closed", 0),
        Refusal("1 + (2 * (3 - 1)", "'(' at offset 4 is never closed", 4),
        Refusal("concat('a', 'b'", "'(' at offset 6 is never closed", 6),
        Refusal("1)", "unexpected ')' at offset 1; it closes no '('", 1),
        Refusal(")", "expected an operand at offset 0, found ')'", 0),
        Refusal("(1 2)", "expected ')' or an operator at offset 3, found '2'", 3),
        // Bad tokens.
        Refusal("1 + # 2", "unexpected character '#' at offset 4", 4),
        Refusal("${a} & ${b}", "unexpected character '&' at offset 5", 5),
        Refusal("1 ! 2", "unexpected '!' at offset 2; 'not equal' is '!=' and negation is not(...)", 2),
        Refusal("1 +", "expected an operand at offset 3, found the end of the expression", 3),
        Refusal("1 2", "expected an operator at offset 2, found '2'", 2),
        Refusal("string(1e5)", "expected ')' or an operator at offset 8, found 'e5'", 8),
        Refusal("'abc", "the string starting with ' at offset 0 is never closed", 0),
        Refusal("x = \"abc", "the string starting with \" at offset 4 is never closed", 4),
        Refusal("${a", "'${' at offset 0 is never closed", 0),
        Refusal("1 + ${}", "'${}' at offset 4 names no question", 4),
        // A reference left open ends where a quote, a parenthesis, a space, a '$' or a comma
        // begins what follows it, and is refused as never closed there.
        Refusal("${a' = 'x'", "'${' at offset 0 is never closed", 0),
        Refusal(#"${a" = "x""#, "'${' at offset 0 is never closed", 0),
        Refusal("concat(${a)", "'${' at offset 7 is never closed", 7),
        Refusal("(${a(", "'${' at offset 1 is never closed", 1),
        Refusal("${a = 1", "'${' at offset 0 is never closed", 0),
        Refusal("${a${b}", "'${' at offset 0 is never closed", 0),
        Refusal("join(${a, ${b})", "'${' at offset 5 is never closed", 5),
        // Any other character is named.
        Refusal("${a+b}", "'+' at offset 3 cannot be part of a name in ${...}", 3),
        Refusal("${1a}", "'1' at offset 2 cannot be part of a name in ${...}", 2),
        Refusal("${-a}", "'-' at offset 2 cannot be part of a name in ${...}", 2),
        Refusal("${a\u{85}}", "'\\u{85}' at offset 3 cannot be part of a name in ${...}", 3),
        Refusal("${a\u{7}}", "'\\u{7}' at offset 3 cannot be part of a name in ${...}", 3),
        Refusal("${a\u{20AC}}", "'\u{20AC}' at offset 3 cannot be part of a name in ${...}", 3),
        Refusal("$a", "unexpected '$' at offset 0; a reference is written ${name}", 0),
        Refusal("/data/a", "unexpected '/' at offset 0; paths are not supported, refer to a question as ${name}", 0),
        Refusal("a[1]", "unexpected '[' at offset 1; predicates are not supported", 1),
        Refusal("a | b", "unexpected '|' at offset 2; node-set union is not supported", 2),
        Refusal("@id", "unexpected '@' at offset 0; attributes are not supported", 0),
        Refusal("child::a", "unexpected '::' at offset 5; axes are not supported", 5),
        Refusal(".. = 1", "'..' at offset 0 is only supported as position(..)", 0),
        Refusal("1 = \u{2019}yes\u{2019}", "curly quote '\u{2019}' at offset 4; quote text with ' or \"", 4),
        Refusal("* 2", "unexpected '*' at offset 0; a multiplication needs a left operand", 0),
        Refusal("", "the expression is empty", 0),
        Refusal("   ", "the expression is empty", 3),
        // Offsets count Unicode scalars: é precomposed is one, decomposed two.
        Refusal("'\u{E9}' = foo()", "unknown function 'foo'", 6),
        Refusal("'e\u{301}' = foo()", "unknown function 'foo'", 7),
        // A literal regex pattern is compiled at parse time; the offset points into the literal.
        Refusal("regex(., '(a')", "regex pattern: '(' is never closed at offset 10", 10),
        Refusal("regex(., 'a{5,2}')", "regex pattern: the repetition has its maximum below its minimum at offset 11", 11),
        Refusal("regex(., 'a**')", "regex pattern: '*' repeats a repetition; group it first at offset 12", 12),
        Refusal(#"regex(., '(a)\1')"#, "regex pattern: backreference is not supported at offset 13", 13),
        Refusal("regex(., '(?=a)')", "regex pattern: '(?': lookaround, atomic groups and inline flags are not supported at offset 10", 10),
        Refusal("regex(., '[abc')", "regex pattern: '[' is never closed at offset 10", 10),
    ]

    /// Names in `${...}` are XML names: letters and digits of every script, combining marks too.
    @Test(arguments: ["${n\u{E9}}", "${ne\u{301}}", "${\u{928}\u{92E}\u{903}}", "${\u{F40}\u{F3E}}", "${a\u{663}}", "${\u{4E2D}-1.x_}"])
    func nonASCIINamesAreReferences(_ source: String) throws {
        let name = String(source.dropFirst(2).dropLast())
        let e = try Expression(source)
        #expect(e.references == [name])
        #expect(try e.evaluate(EvaluationContext(reference: { $0 == name ? .number(4) : .string("") })) == .number(4))
    }

    @Test(arguments: refusals)
    func refused(_ r: Refusal) {
        #expect(throws: ExpressionError(r.message, offset: r.offset)) { try Expression(r.source) }
    }

    /// Regex patterns java.util.regex refuses, or that a linear-time matcher does not do.
    @Test(arguments: ["(", ")", "[abc", "a**", "*a", "+", "a{2,1}", #"\1"#, "(?=a)", "(?!a)", "(?<=a)", "(?i)abc",
                      "(?>a)", "a*+", #"[a-\d]"#, "[z-a]", "[[a]]", "[a&&b]", #"\q"#, #"\p{IsLatin}"#, "\\", "{",
                      "a{", "x{2}{3}", #"\x{110000}"#, #"\uD800"#, #"[\b]"#, "{2}", #"\k<a>"#])
    func regexPatternRefused(_ pattern: String) {
        #expect(throws: RegexError.self) { try RegexProgram(pattern) }
    }

    @Test func regexPatternFromAValueIsAnEvaluationError() throws {
        let e = try Expression("regex(${a}, ${p})")
        let ctx = EvaluationContext(reference: { $0 == "p" ? .string("(x") : .string("x") })
        do {
            _ = try e.evaluate(ctx)
            Issue.record("no error")
        } catch {
            #expect(error.kind == .evaluation)
            #expect(error.offset == 0)
            #expect(error.message == "regex pattern from a value: '(' is never closed at 0 in the pattern")
        }
    }
}
