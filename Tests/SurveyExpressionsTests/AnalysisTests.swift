import Testing
@testable import SurveyExpressions

/// What a parsed expression tells the definition validator without evaluating it.
@Suite struct AnalysisTests {
    @Test func referencesAreUniqueInFirstAppearanceOrder() throws {
        let e = try Expression("${b} + ${a} * ${b} - ${c} + count(${a})")
        #expect(e.references == ["b", "a", "c"])
        #expect(e.fields == [])
        #expect(!e.usesCurrent)
        #expect(!e.dependsOnMoment)
    }

    @Test func fieldsAreTheBareNames() throws {
        let e = try Expression("county = ${county} and size > 2 and county != '' and not(div)")
        #expect(e.fields == ["county", "size", "div"])
        #expect(e.references == ["county"])
    }

    @Test(arguments: [(". > 1", true), ("${a}", false), ("string-length() > 2", true), ("normalize-space() = ''", true),
                      ("regex(., 'x')", true), ("'.'", false), ("position(..)", false)])
    func usesCurrent(_ source: String, _ expected: Bool) throws {
        #expect(try Expression(source).usesCurrent == expected)
    }

    @Test func usesPosition() throws {
        #expect(try Expression("position(..) = 1").usesPosition)
        #expect(try Expression("position() > 2").usesPosition)
        #expect(try !Expression("${position}").usesPosition)
    }

    @Test(arguments: [("today()", true), ("if(${a}, 1, now())", true), ("once(random())", true), ("uuid()", true),
                      ("uuid(8)", true), ("${a} > today() - 365", true), ("concat('x', once(${a}))", true),
                      ("indexed-repeat(${a}, ${r}, 1)", true), ("jr:choice-name(${a}, 'a')", true), ("distance(${a})", true), ("version()", true),
                      ("${a}", false), ("'today()'", false), ("today", false), ("${today}", false), ("date('2020-01-01')", false)])
    func dependsOnMoment(_ source: String, _ expected: Bool) throws {
        #expect(try Expression(source).dependsOnMoment == expected)
    }

    @Test func anExpressionThatDependsOnTheMomentIsNotEvaluated() throws {
        // Refused as a whole, even where the branch taken would not call today().
        let e = try Expression("if(false(), today(), 1)")
        #expect(throws: ExpressionError("today() at offset 12 depends on the moment and the device, so the expression is not evaluated here",
                                        offset: 12, kind: .dependsOnMoment)) {
            try e.evaluate(EvaluationContext(reference: { _ in .string("") }))
        }
    }

    @Test(arguments: ["1+2", "  ${a}  =  'x' ", "(((1)))", "regex(.,'[0-9]+')", "concat( 'a' ,\"b\" )", "-\t-1", "${a}!=${b}"])
    func sourceIsKeptAsWritten(_ source: String) throws {
        #expect(try Expression(source).source == source)
    }

    @Test(arguments: [
        ("(1+2)*3", "(1 + 2) * 3"),
        ("1+(2+3)", "1 + (2 + 3)"),
        ("(1+2)+3", "1 + 2 + 3"),
        ("((a))", "a"),
        ("a or (b or c)", "a or (b or c)"),
        ("(a or b) or c", "a or b or c"),
        ("a and b or c and d", "a and b or c and d"),
        ("a and (b or c)", "a and (b or c)"),
        ("- -1", "--1"),
        ("---1", "-1"),
        ("-(1 + 2)", "-(1 + 2)"),
        (".5", "0.5"),
        ("\"it's\"", "\"it's\""),
        ("${a}>=18", "${a} >= 18"),
        ("selected( ${x} , 'a' )", "selected(${x}, 'a')"),
        ("position(..)", "position(..)"),
        ("1 = (2 = 3)", "1 = (2 = 3)"),
        ("(1 < 2) = (3 < 4)", "1 < 2 = 3 < 4"),
        ("mod mod div", "mod mod div"),
        // Found by the fuzzer: minuses inside and outside parentheses fold together.
        ("-----------------------------------(------c )", "-c"),
        ("-(-(-x))", "-x"),
        ("-(--x)", "-x"),
        ("--(-x)", "-x"),
        ("-(-x)", "--x"),
        // Found by the fuzzer: the canonical form moves the calls, and the tree is still the same.
        ("sum(${income}) div count(${income}) > mmax*${ages}* - min(${ages})",
         "sum(${income}) div count(${income}) > mmax * ${ages} * -min(${ages})"),
    ])
    func canonicalForm(_ source: String, _ canonical: String) throws {
        let e = try Expression(source)
        #expect(e.canonical == canonical)
        #expect(try Expression(e.canonical).root == e.root)
    }

    @Test func evaluationIsFastEnoughToRepeat() throws {
        // The server evaluates each expression for every submission: parse once, evaluate often.
        let e = try Expression("${age} >= 18 and selected(${assets}, 'car') and regex(${phone}, '^07[0-9]{8}$')")
        let values: [String: Value] = ["age": .number(34), "assets": .string("car bike"), "phone": .string("0712345678")]
        let ctx = EvaluationContext(reference: { values[$0] ?? .string("") })
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<10_000 {
            #expect(try e.evaluate(ctx) == .boolean(true))
        }
        // Loose: a debug build on a shared core; a release build is far under a millisecond total.
        #expect(clock.now - start < .seconds(10))
    }
}
