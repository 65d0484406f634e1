import Foundation
import SurveyDomain
import SurveyForms
import SurveyStorage

/// Adds up the summary facts of a survey's responses (`SummaryFacts`, one narrow row each) into
/// the figures of the latest version's questions: one pass over the rows, in one snapshot,
/// memory bounded by the distinct values counted — never by the number of responses. A number
/// question with more distinct values than `exactValues` has its median and histogram found by
/// two more passes over the same rows (bins first, then the values of the median's bin alone).
struct SummaryTally {
    /// Distinct values of a number question kept with their counts in the first pass.
    static let exactValues = 4096
    /// Bins of the second pass over a number question with more values than that.
    static let fineBins = 65_536

    /// The latest version's questions, by index.
    let questions: [Question]
    /// For each version of the query (by its index there), each facts entry's question index
    /// (-1: a question the latest version does not have).
    let columns: [[Int]]
    /// For each version and facts entry, each option's place → its slot among the latest
    /// question's choices (-1: a name the latest lacks, counted by name from `names`).
    let slots: [[[Int]]]
    let names: [[[String]]]
    /// By latest question and choice slot (`choiceNames`), flat: question q's from `choiceBase[q]`.
    var choiceCounts: [Int]
    let choiceBase: [Int]
    let choiceNames: [[String]]
    var relevant: [Int]
    var answered: [Int]
    var texts: [TextCounts]
    var numbers: [NumberTally]

    init(latest: [Question], versions: [SurveyDefinition]) {
        questions = latest
        let index = Dictionary(latest.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        let columns = versions.map { SummaryFacts.questions(of: $0).map { index[$0.question.id] ?? -1 } }
        self.columns = columns
        var choiceNames: [[String]] = [], slotOf: [[String: Int]] = []
        for q in latest {
            var names: [String] = [], slot: [String: Int] = [:]
            for c in q.choices where slot[c] == nil { slot[c] = names.count; names.append(c) }
            choiceNames.append(names); slotOf.append(slot)
        }
        self.choiceNames = choiceNames
        var base: [Int] = [], total = 0
        for names in choiceNames { base.append(total); total += names.count }
        choiceBase = base
        choiceCounts = Array(repeating: 0, count: total)
        var placeSlots: [[[Int]]] = [], names: [[[String]]] = []
        for (v, definition) in versions.enumerated() {
            let entries = SummaryFacts.questions(of: definition)
            names.append(entries.map { $0.question.options.map(\.name) })
            placeSlots.append(entries.enumerated().map { i, e in
                let q = columns[v][i]
                return q < 0 ? [] : e.question.options.map { slotOf[q][$0.name] ?? -1 }
            })
        }
        slots = placeSlots
        self.names = names
        relevant = Array(repeating: 0, count: latest.count)
        answered = relevant
        texts = Array(repeating: TextCounts(), count: latest.count)
        numbers = Array(repeating: NumberTally(), count: latest.count)
    }

    /// Responses per collector and day: the collectors met, and counts by `day << 20 | index`.
    private var submitters = TextIndex()
    private var perDay: [Int: Int] = [:]

    /// Adds one response: its collector and day, and its facts; false when the facts are not
    /// what `SummaryFacts` writes.
    mutating func add(_ row: SummaryFactsRow) -> Bool {
        perDay[Int(row.day) << 20 | submitters.index(of: row.submitter), default: 0] += 1
        return add(version: row.version, facts: row.facts)
    }

    /// How many responses each collector sent each day, by day then collector.
    func perSubmitterDay() -> [(submitter: String, day: Int64, count: Int)] {
        perDay.map { (submitter: submitters.names[$0.key & 0xFFFFF], day: Int64($0.key >> 20), count: $0.value) }
            .sorted { ($0.day, $0.submitter) < ($1.day, $1.submitter) }
    }

    /// Adds one response's facts; false when they are not what `SummaryFacts` writes.
    mutating func add(version: Int, facts: UnsafeBufferPointer<UInt8>) -> Bool {
        guard columns.indices.contains(version), var reader = SummaryFactsReader(facts) else { return false }
        let map = columns[version]
        var i = 0
        while let (entry, hidden) = reader.next() {
            let q = i < map.count ? map[i] : -1, at = i
            i += 1
            guard case .repeated(let n) = entry else {
                guard add(entry, hidden: hidden, question: q, version: version, entry: at, &reader) else { return false }
                continue
            }
            // A question inside repeats: each instance's answer counts.
            for _ in 0..<n {
                guard let (one, hidden) = reader.next(), add(one, hidden: hidden, question: q, version: version, entry: at, &reader) else { return false }
            }
        }
        return true
    }

    /// One answer's entry (a repeat's instance's too) to question `q` (-1: read past it).
    private mutating func add(_ entry: SummaryFactsReader.Entry, hidden: Bool, question q: Int, version: Int, entry at: Int,
                              _ reader: inout SummaryFactsReader) -> Bool {
        switch entry {
        case .choices(let n):
            for _ in 0..<n {
                guard let choice = reader.nextChoice() else { return false }
                if q >= 0 { texts[q].add(choice) }
            }
        case .places(let n):
            for _ in 0..<n {
                guard let place = reader.nextPlace() else { return false }
                if q >= 0 { count(place, version: version, entry: at, question: q) }
            }
        case .choice(let place):
            if q >= 0 { count(place, version: version, entry: at, question: q) }
        case .repeated:
            return false  // never inside an instance
        default: break
        }
        guard q >= 0 else { return true }
        if !hidden { relevant[q] += 1 }
        switch entry {
        case .none, .repeated: break
        case .answered: if !questions[q].type.isNumber { answered[q] += 1 }
        case .text(let t): answered[q] += 1; texts[q].add(t)
        case .choices, .choice, .places: answered[q] += 1
        case .number(let d): answered[q] += 1; numbers[q].add(d)
        }
        return true
    }

    /// A choice written by its place in its version's options.
    private mutating func count(_ place: Int, version: Int, entry: Int, question q: Int) {
        let map = slots[version][entry]
        guard place >= 0 && place < map.count else { return }
        if map[place] >= 0 { choiceCounts[choiceBase[q] + map[place]] += 1 } else { texts[q].add(name: names[version][entry][place]) }
    }

    /// Each choice of question `q` with its count: by place and by name together.
    func choices(_ q: Int) -> [String: Int] {
        var out = texts[q].counts
        for (i, name) in choiceNames[q].enumerated() where choiceCounts[choiceBase[q] + i] > 0 {
            out[name, default: 0] += choiceCounts[choiceBase[q] + i]
        }
        return out
    }

    /// The numbers of question `q` read again (`read` calls its argument with each value) when
    /// the first pass kept too many distinct values to find the median and histogram.
    func figures(_ q: Int, integers: Bool, bins: Int = 10,
                 again: (_ each: (Double) -> Void) throws -> Void) rethrows -> NumberFigures? {
        let n = numbers[q]
        guard n.count > 0 else { return nil }
        let lo = n.min, hi = n.max
        let perValue = integers && hi - lo < Double(bins)
        let binCount = perValue ? Int(hi - lo) + 1 : bins
        let width = perValue ? 1 : (hi - lo) / Double(bins)
        func bin(_ x: Double) -> Int { Swift.min(Swift.max(Int(((x - lo) / width).rounded(.down)), 0), binCount - 1) }
        var histogram = Array(repeating: 0, count: binCount)
        let ranks = [(n.count - 1) / 2, n.count / 2]
        var middle: [Double] = []
        if let values = n.values {
            var seen = 0
            for (x, c) in values.sorted(by: { $0.key < $1.key }) {
                if hi > lo { histogram[bin(x)] += c }
                for r in ranks where r >= seen && r < seen + c { middle.append(x) }
                seen += c
            }
        } else {
            // Bins fine enough that the median's holds a few values, then those values alone.
            let fine = Self.fineBins
            func fineBin(_ x: Double) -> Int { Swift.min(Swift.max(Int(((x - lo) / (hi - lo) * Double(fine)).rounded(.down)), 0), fine - 1) }
            var fineCounts = Array(repeating: 0, count: fine)
            try again { x in
                histogram[bin(x)] += 1
                fineCounts[fineBin(x)] += 1
            }
            var wanted: [Int: Int] = [:]  // fine bin → values before it
            var seen = 0
            for (b, c) in fineCounts.enumerated() where c > 0 {
                for r in ranks where r >= seen && r < seen + c { wanted[b] = seen }
                seen += c
            }
            var inBins: [Double: Int] = [:]
            try again { x in if wanted[fineBin(x)] != nil { inBins[x, default: 0] += 1 } }
            for (b, before) in wanted.sorted(by: { $0.key < $1.key }) {
                var seen = before
                for (x, c) in inBins.filter({ fineBin($0.key) == b }).sorted(by: { $0.key < $1.key }) {
                    for r in ranks where r >= seen && r < seen + c { middle.append(x) }
                    seen += c
                }
            }
        }
        if hi <= lo { histogram = [n.count] }
        let median = middle.isEmpty ? lo : middle.reduce(0, +) / Double(middle.count)
        return NumberFigures(count: n.count, min: lo, max: hi, mean: n.sum / Double(n.count), median: median,
                             histogram: histogram, binWidth: hi > lo ? width : 0)
    }

    /// Texts numbered in the order met (a few collectors): the last one met tried first.
    struct TextIndex {
        private(set) var names: [String] = []
        private var bytes: [[UInt8]] = []
        private var byName: [String: Int] = [:]
        private var last = -1

        mutating func index(of text: UnsafeBufferPointer<UInt8>) -> Int {
            func same(_ i: Int) -> Bool {
                bytes[i].count == text.count && bytes[i].withUnsafeBufferPointer { k in
                    guard let a = k.baseAddress, let b = text.baseAddress else { return true }
                    return memcmp(a, b, text.count) == 0
                }
            }
            if last >= 0 && same(last) { return last }
            if let i = bytes.indices.first(where: same) { last = i; return i }
            let name = String(decoding: text, as: UTF8.self)
            if let i = byName[name] { last = i; return i }
            last = names.count
            names.append(name); byName[name] = last
            if bytes.count < 64 { bytes.append(Array(text)) }
            return last
        }
    }

    /// Each text counted with how often: the first few distinct ones compared as bytes (a
    /// choice list), any further ones by a dictionary.
    struct TextCounts {
        private var known: [[UInt8]] = []
        private var knownCounts: [Int] = []
        private var more: [String: Int] = [:]

        mutating func add(_ text: UnsafeBufferPointer<UInt8>) {
            for i in known.indices where known[i].count == text.count {
                let same = known[i].withUnsafeBufferPointer { k in
                    guard let a = k.baseAddress, let b = text.baseAddress else { return true }  // both empty
                    return memcmp(a, b, text.count) == 0
                }
                if same { knownCounts[i] += 1; return }
            }
            if known.count < 32 {
                known.append(Array(text)); knownCounts.append(1)
            } else {
                more[String(decoding: text, as: UTF8.self), default: 0] += 1
            }
        }

        mutating func add(name: String) { more[name, default: 0] += 1 }

        var counts: [String: Int] {
            var out = more
            for (k, c) in zip(known, knownCounts) { out[String(decoding: k, as: UTF8.self), default: 0] += c }
            return out
        }
    }

    /// A number question's count, sum, least and greatest, and its values with their counts
    /// while there are at most `exactValues` distinct ones (nil beyond).
    struct NumberTally {
        var count = 0
        var sum = 0.0
        var min = Double.infinity
        var max = -Double.infinity
        var values: [Double: Int]? = [:]

        mutating func add(_ x: Double) {
            count += 1
            sum += x
            if x < min { min = x }
            if x > max { max = x }
            if values != nil {
                values?[x, default: 0] += 1
                if let v = values, v.count > SummaryTally.exactValues { values = nil }
            }
        }
    }
}

extension QuestionType {
    var isNumber: Bool { self == .integer || self == .decimal }
}

/// A number question's figures in the summary.
public struct NumberFigures: Sendable, Equatable {
    public let count: Int
    public let min: Double
    public let max: Double
    public let mean: Double
    public let median: Double
    /// Equal ranges of `binWidth` from `min` (the last one closed), each with its count.
    public let histogram: [Int]
    public let binWidth: Double
}
