import Testing
import SurveyForms
@testable import SurveyOperations

/// The summary's tally of facts: figures equal to those computed from the values themselves,
/// on the one-pass path (few distinct numbers) and on the three-pass path (more distinct
/// numbers than are kept in memory); hidden questions are not counted as relevant.
@Suite struct SummaryTallyTests {
    static let definition = try? SurveyDefinition.parse(JSONParser.parse(Array(#"""
        {"title": "T", "questions": [
          {"id": "kind", "type": "select_one", "label": "Kind", "choices": ["a", "b", "c"]},
          {"id": "amount", "type": "decimal", "label": "Amount", "relevant": "${kind} != 'c'"},
          {"id": "count", "type": "integer", "label": "Count"},
          {"id": "tags", "type": "select_multiple", "label": "Tags", "choices": ["x", "y"]}
        ]}
        """#.utf8)))

    /// The figures a tally of `values` gives for `amount` (and, for the integers, `count`).
    static func tally(_ amounts: [Double?], kinds: (Int) -> String) throws -> (SummaryTally, [[UInt8]]) {
        let d = try #require(definition)
        var tally = SummaryTally(latest: d.questions, versions: [d])
        var rows: [[UInt8]] = []
        for (i, amount) in amounts.enumerated() {
            var answers: [String: JSONValue] = ["kind": .string(kinds(i)), "count": .number(Double(i % 7)), "tags": .array(i % 2 == 0 ? ["x"] : ["x", "y"])]
            if let amount, kinds(i) != "c" { answers["amount"] = .number(amount) }
            let check = d.validate(answers: .object(answers))
            #expect(check.errors.isEmpty, "\(check.errors)")
            let facts = SummaryFacts(definition: d, answers: .object(answers), check: check).bytes
            #expect(facts.withUnsafeBufferPointer { tally.add(version: 0, facts: $0) })
            rows.append(facts)
        }
        return (tally, rows)
    }

    static func expected(_ values: [Double]) -> (median: Double, mean: Double) {
        let v = values.sorted()
        let median = v.count % 2 == 1 ? v[v.count / 2] : (v[v.count / 2 - 1] + v[v.count / 2]) / 2
        return (median, v.reduce(0, +) / Double(v.count))
    }

    func check(_ amounts: [Double?]) throws {
        let (tally, rows) = try Self.tally(amounts, kinds: { $0 % 5 == 4 ? "c" : ($0 % 2 == 0 ? "a" : "b") })
        let shown = amounts.enumerated().filter { $0.offset % 5 != 4 }
        let values = shown.compactMap(\.element)
        var passes = 0
        let figures = try #require(tally.figures(1, integers: false) { each in
            passes += 1
            for (i, row) in rows.enumerated() {
                guard let entries = SummaryFactsReader.all(row), case .number(let d) = entries[1].answer else { continue }
                _ = i
                each(d)
            }
        })
        let (median, mean) = Self.expected(values)
        #expect(figures.count == values.count && figures.median == median && abs(figures.mean - mean) < 1e-6 * max(1, abs(mean)))
        #expect(figures.min == values.min() && figures.max == values.max())
        let width = (values.max()! - values.min()!) / 10
        var histogram = Array(repeating: 0, count: 10)
        for x in values { histogram[min(max(Int(((x - values.min()!) / width).rounded(.down)), 0), 9)] += 1 }
        #expect(figures.histogram == histogram)
        #expect(passes == (Set(values).count > SummaryTally.exactValues ? 2 : 0))
        // Relevant: shown ones (kind not c); answered: those with an amount.
        #expect(tally.relevant[1] == shown.count && tally.answered[1] == values.count)
        #expect(tally.choices(3) == ["x": amounts.count, "y": amounts.count / 2])
        #expect(tally.choices(0) == ["a": shown.filter { $0.offset % 2 == 0 }.count, "b": shown.filter { $0.offset % 2 == 1 }.count,
                                     "c": amounts.count - shown.count])
    }

    /// Questions inside a repeat: each instance counted, an instance whose logic hid the
    /// question not relevant, numbers of every instance in the figures; the questions outside
    /// keep their entries' places.
    @Test func aRepeatsQuestionsCountEachInstance() throws {
        let d = try #require(try SurveyDefinition.parse(JSONParser.parse(Array(#"""
            {"title": "T", "questions": [
              {"id": "kind", "type": "select_one", "label": "Kind", "choices": ["a", "b"]},
              {"id": "members", "type": "repeat", "label": "Member", "children": [
                {"id": "sex", "type": "select_one", "label": "Sex", "choices": ["f", "m"]},
                {"id": "age", "type": "integer", "label": "Age", "relevant": "${sex} = 'f'"}
              ]}
            ]}
            """#.utf8))))
        let places = SummaryFacts.questions(of: d)
        #expect(places.map(\.question.id) == ["kind", "sex", "age"] && places.map(\.repeats) == [[], ["members"], ["members"]])
        var tally = SummaryTally(latest: places.map(\.question), versions: [d])
        var females = 0, ages: [Double] = [], instances = 0
        for i in 0..<50 {
            var members: [JSONValue] = []
            for m in 0..<(i % 4) {
                let female = (i + m) % 3 == 0
                var member: [String: JSONValue] = ["sex": female ? "f" : "m"]
                if female { member["age"] = .number(Double(20 + i + m)); ages.append(Double(20 + i + m)); females += 1 }
                members.append(.object(member))
                instances += 1
            }
            let answers: JSONValue = ["kind": i % 2 == 0 ? "a" : "b", "members": .array(members)]
            let check = d.validate(answers: answers)
            #expect(check.errors.isEmpty, "\(check.errors)")
            let facts = SummaryFacts(definition: d, answers: answers, check: check).bytes
            #expect(facts.withUnsafeBufferPointer { tally.add(version: 0, facts: $0) })
        }
        #expect(tally.choices(0) == ["a": 25, "b": 25])
        #expect(tally.choices(1) == ["f": females, "m": instances - females] && tally.answered[1] == instances && tally.relevant[1] == instances)
        // Age: shown only for the women, each of whom answered it.
        #expect(tally.relevant[2] == females && tally.answered[2] == females)
        let figures = try #require(tally.figures(2, integers: true) { _ in Issue.record("read again") })
        #expect(figures.count == ages.count && figures.min == ages.min() && figures.max == ages.max())
        #expect(figures.median == Self.expected(ages).median)
    }

    @Test func fewDistinctNumbersAreSummedUpInOnePass() throws {
        try check((0..<3001).map { $0 % 9 == 0 ? nil : Double($0 % 100) * 0.5 })
    }

    @Test func manyDistinctNumbersFindTheirMedianInTwoMorePasses() throws {
        var seed: UInt64 = 42
        func next() -> Double {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Double(seed >> 11) / Double(1 << 53)
        }
        try check((0..<8_001).map { $0 % 11 == 0 ? nil : (next() * next()) * 1e5 - 300 })
        try check((0..<8_000).map { Double($0) / 3 })
    }
}
