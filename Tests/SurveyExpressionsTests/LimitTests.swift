import Testing
@testable import SurveyExpressions

/// Bad input costs bounded work and never traps. Times are measured loosely (seconds, not
/// microseconds): what matters is that nothing is exponential or unbounded.
@Suite struct LimitTests {
    private func seconds(_ body: () throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try body()
        let elapsed = clock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private func refusal(_ source: String) -> ExpressionError? {
        do {
            _ = try Expression(source)
            return nil
        } catch {
            return error
        }
    }

    private let none = EvaluationContext(reference: { _ in .string("") })

    @Test func tenThousandNestedParenthesesAreRefusedQuickly() {
        let source = String(repeating: "(", count: 10_000) + "1" + String(repeating: ")", count: 10_000)
        var error: ExpressionError?
        let t = seconds { error = refusal(source) }
        // 20,001 bytes: over the length limit before any nesting is looked at.
        #expect(error?.kind == .limit)
        #expect(t < 1)

        // Within the length limit, the depth check refuses at the 65th level, before recursing.
        let open = String(repeating: "(", count: 10_000) + "1"
        var deep: ExpressionError?
        let t2 = seconds { deep = refusal(open) }
        #expect(deep == ExpressionError("the expression nests deeper than 64 levels at offset 64", offset: 64, kind: .limit))
        #expect(t2 < 1)
    }

    @Test func nestedCallsAreRefusedToo() {
        let source = String(repeating: "not(", count: 3_000) + "1" + String(repeating: ")", count: 3_000)
        #expect(refusal(source)?.kind == .limit)
    }

    @Test func sixtyFourLevelsParseAndSixtyFiveDoNot() throws {
        let ok = String(repeating: "(", count: 64) + "1" + String(repeating: ")", count: 64)
        #expect(try Expression(ok).evaluate(none) == .number(1))
        let over = String(repeating: "(", count: 65) + "1" + String(repeating: ")", count: 65)
        #expect(refusal(over)?.offset == 64)
        let calls = String(repeating: "abs(", count: 64) + "-1" + String(repeating: ")", count: 64)
        #expect(try Expression(calls).evaluate(none) == .number(1))
    }

    @Test func aMebibyteExpressionIsRefusedWithItsSize() {
        let source = String(repeating: "1 + ", count: 262_143) + "1"
        var error: ExpressionError?
        let t = seconds { error = refusal(source) }
        #expect(error == ExpressionError("the expression is 1048573 bytes long; the limit is 16384", offset: 0, kind: .limit))
        #expect(t < 1)
    }

    @Test func sixteenKibibytesAreAccepted() throws {
        let source = "'" + String(repeating: "a", count: ExpressionLimits.maxSourceBytes - 2) + "'"
        #expect(source.utf8.count == ExpressionLimits.maxSourceBytes)
        #expect(try Expression(source).evaluate(none).asString.utf8.count == ExpressionLimits.maxSourceBytes - 2)
        #expect(refusal(source + " ")?.kind == .limit)
    }

    @Test func longOperatorChainsStayFlat() throws {
        // 4,001 terms: a wide chain, evaluated without deep recursion.
        let sum = "1" + String(repeating: " + 1", count: 4_000)
        #expect(try Expression(sum).evaluate(none) == .number(4_001))
        let ors = "0" + String(repeating: " or 0", count: 3_000) + " or 1"
        #expect(try Expression(ors).evaluate(none) == .boolean(true))
        let comparisons = "1" + String(repeating: " = 1", count: 3_000)
        #expect(try Expression(comparisons).evaluate(none) == .boolean(true))
        // A long run of unary minus folds to one or two negations.
        let minuses = String(repeating: "-", count: 16_000) + "1"
        #expect(try Expression(minuses).evaluate(none) == .number(1))
    }

    @Test func catastrophicBacktrackingPatternAnswersFalseFast() throws {
        let input = String(repeating: "a", count: 40) + "b"
        let e = try Expression("regex(${x}, '(a+)+$')")
        var value: Value?
        let t = try seconds {
            value = try e.evaluate(EvaluationContext(reference: { _ in .string(input) }))
        }
        #expect(value == .boolean(false))
        #expect(t < 1)
        // The classic exponential ones, with inputs a backtracking engine would never finish.
        let long = String(repeating: "a", count: 5_000) + "!"
        for pattern in ["(a+)+$", "(a*)*b", "(a|aa)+$", "(a|a?)+b", "^(([a-z])+.)+[A-Z]([a-z])+$", "(.*a){12}"] {
            var budget = ExpressionLimits.maxEvaluationSteps
            let program = try RegexProgram(pattern)
            var result: Bool??
            let tp = seconds { result = program.matches(long, entire: true, budget: &budget) }
            #expect(result == .some(false), "\(pattern)")
            #expect(tp < 1, "\(pattern)")
        }
    }

    @Test func hugeCountedRepetitionIsRefused() {
        for pattern in ["a{1001}", "a{0,5000}", "a{2000}", "(a{1000}){1000}", "((a{100}){100}){100}", "(?:[a-z]{50}){50}",
                        "a{99999999999999999999}"] {
            let e = refusal("regex(., '\(pattern)')")
            #expect(e?.kind == .limit, "\(pattern): \(String(describing: e))")
        }
        // Just under: a program of 1,001 instructions.
        #expect(refusal("regex(., 'a{1000}')") == nil)
    }

    @Test func deeplyNestedGroupsInAPatternAreRefused() {
        let pattern = String(repeating: "(", count: 5_000) + "a" + String(repeating: ")", count: 5_000)
        #expect(throws: RegexError.self) { try RegexProgram(pattern) }
    }

    @Test func stringResultsAreCapped() throws {
        let big = String(repeating: "x", count: 600 * 1024)
        let ctx = EvaluationContext(reference: { _ in .string(big) })
        for source in ["concat(${a}, ${a})", "join(',', ${a}, ${a})", "concat(${a}, ${a}, ${a}, ${a})"] {
            let e = try Expression(source)
            #expect(throws: ExpressionError.self) { try e.evaluate(ctx) }
            do {
                _ = try e.evaluate(ctx)
            } catch {
                #expect(error.kind == .limit)
                #expect(error.message == "the string built would be longer than 1048576 bytes")
            }
        }
        // One copy fits.
        #expect(try Expression("concat(${a}, '!')").evaluate(ctx).asString.utf8.count == 600 * 1024 + 1)
        // translate can grow a string four times (ASCII to 4-byte scalars): still capped.
        let t = try Expression("translate(${a}, 'x', '\u{1F600}')")
        #expect(throws: ExpressionError.self) { try t.evaluate(ctx) }
    }

    @Test func evaluationStepsAreBounded() throws {
        // 5,000 × 5,000 node-set comparisons would be 25 million: refused before doing them.
        let list = Value.nodes((0..<5_000).map { .number(Double($0)) })
        let other = Value.nodes((0..<5_000).map { .number(Double(-1 - $0)) })
        let ctx = EvaluationContext(reference: { $0 == "a" ? list : other })
        let e = try Expression("${a} = ${b}")
        var error: ExpressionError?
        let t = seconds {
            do throws(ExpressionError) { _ = try e.evaluate(ctx) } catch let caught { error = caught }
        }
        #expect(error?.kind == .limit)
        #expect(t < 1)
        // A regex on a long answer with a large program runs out of steps instead of running on.
        let long = String(repeating: "a", count: 200_000)
        let r = try Expression("regex(${a}, '(.*a){100}b')")
        #expect(throws: ExpressionError.self) { try r.evaluate(EvaluationContext(reference: { _ in .string(long) })) }
    }

    @Test func hostileNumbersDoNotTrap() throws {
        for source in ["substr('abc', 1 div 0, -1 div 0)", "substr('abc', 0 div 0)", "selected-at('a b', 1 div 0)",
                       "selected-at('a b', -1 div 0)", "round(1, 1 div 0)", "round(1 div 0, 2)", "round(179769313486231570000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000, -30)",
                       "date(1 div 0)", "date(100000000000)", "string(date(100000000000))", "format-date(100000000000, '%Y')",
                       "int(99999999999999999999999)", "string(99999999999999999999999)", "round(99999999999999999999999.5)",
                       "string(date-time(-100000000))", "decimal-date-time(1 div 0)", "pow(10, 400)", "string(pow(10, 400))"] {
            _ = try Expression(source).evaluate(none)
        }
        // A literal beyond the largest double is refused rather than read as infinity.
        #expect(refusal("1" + String(repeating: "0", count: 400))?.message == "the number at offset 0 is too large")
    }
}
