// fuzz-sources: Sources/SurveyExpressions/*.swift
//
// The expression engine of form logic (SurveyExpressions, compiled in as it is: it has no
// dependencies). Properties: parsing any input terminates without a trap; a parsed expression
// keeps its source, and its canonical form parses back to the same tree with the same names;
// evaluating it against a fixed context never traps and refuses only for a limit, a pattern
// taken from a value, or the moment; a regex pattern (the input, or the part before a NUL byte)
// compiles or is refused, and matching it against any text terminates within its budget, a
// whole match implying a search match.

private let answers: [Value] = [
    .string(""), .string("car bike radio"), .number(34), .number(-0.5), .number(.nan),
    .date(days: 18262), .date(days: 18262.75), .boolean(true), .string("2020-01-01"), .string("\u{E9}t\u{E9} 12,5"),
    .nodes([.number(34), .string(""), .number(7)]), .nodes([]), .nodes([.nodes([.string("a")]), .string("b b")]),
    .string(String(repeating: "a", count: 300) + "b"),
]

private func value(_ name: String) -> Value {
    answers[name.unicodeScalars.reduce(0) { ($0 &* 31 &+ Int($1.value)) & 0xFFFF } % answers.count]
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let s = String(decoding: bytes, as: UTF8.self)

    let context = EvaluationContext(reference: value, current: .string("0712345678"), field: value, position: 3)
    if let e = try? Expression(s) {
        guard e.source == s else { fatalError("source \(s.debugDescription) came back as \(e.source.debugDescription)") }
        let canonical = e.canonical
        if canonical.utf8.count <= ExpressionLimits.maxSourceBytes {
            let again: Expression
            do {
                again = try Expression(canonical)
            } catch {
                fatalError("\(s.debugDescription): canonical \(canonical.debugDescription) does not parse: \(error.message)")
            }
            guard again.root == e.root, again.references == e.references, again.fields == e.fields,
                  again.usesCurrent == e.usesCurrent, again.usesPosition == e.usesPosition,
                  again.dependsOnMoment == e.dependsOnMoment
            else { fatalError("\(s.debugDescription): canonical \(canonical.debugDescription) parses differently") }
        }
        do {
            _ = try e.evaluate(context)
            guard !e.dependsOnMoment else { fatalError("\(s.debugDescription) depends on the moment but was evaluated") }
        } catch {
            switch error.kind {
            case .dependsOnMoment:
                guard e.dependsOnMoment else { fatalError("\(s.debugDescription): \(error.message)") }
            case .limit, .evaluation:
                break
            case .syntax:
                fatalError("\(s.debugDescription): a syntax error at evaluation: \(error.message)")
            }
        }
    }

    let pattern: Substring
    let subjects: [String]
    if let nul = s.firstIndex(of: "\0") {
        pattern = s[..<nul]
        subjects = [String(s[s.index(after: nul)...])]
    } else {
        pattern = s[...]
        subjects = ["", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "0712345678", "Jos\u{E9} Mar\u{ED}a\n"]
    }
    if let program = try? RegexProgram(String(pattern)) {
        guard program.instructions.count <= ExpressionLimits.maxRegexInstructions else {
            fatalError("\(pattern.debugDescription) compiled to \(program.instructions.count) instructions")
        }
        for subject in subjects {
            var budget = 1_000_000
            let whole = program.matches(subject, entire: true, budget: &budget)
            var budget2 = 1_000_000
            let search = program.matches(subject, entire: false, budget: &budget2)
            if whole == true, search == false {
                fatalError("\(pattern.debugDescription) matches \(subject.debugDescription) whole but not in a search")
            }
        }
    }
    return 0
}
