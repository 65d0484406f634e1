import Foundation
import SurveyDomain
import SurveyStorage

/// A response's CSV line written straight from its stored answers (canonical JSON), without
/// building a `JSONValue` for them: the hot path of a CSV or zip export, where parsing every
/// row into dictionaries cost more than everything else together. It writes exactly what
/// `CSVEncoder.line(columns.cells(row))` writes (a test holds the two together); a row whose
/// answers it cannot read takes that general path instead.
struct CSVRowWriter {
    private enum Kind { case text, number, geopoint, selectMultiple, file }
    private struct Slot {
        let kind: Kind
        /// The question's first answer column.
        let column: Int
        /// select_multiple with split columns: its choices, each with a column of its own after the joined one.
        let choices: [[UInt8]]
    }

    private let columns: ExportColumns
    private let slots: [Slot]
    private let ids: [[UInt8]]
    private let byId: [String: Int]
    private let answerColumns: Int
    /// The slot met at each key position in the last row: the next row's keys are nearly always
    /// the same, so a byte comparison usually replaces a hash lookup.
    private var predicted: [Int] = []
    /// Each answer column's bytes, as (start, end) in `scratch`; (0, 0) is an empty cell.
    private var spans: [(Int, Int)]
    private var scratch: [UInt8] = []
    private var key: [UInt8] = []
    private var chosen: [(Int, Int)] = []

    init(_ columns: ExportColumns) {
        self.columns = columns
        var slots: [Slot] = []
        var column = 0
        for q in columns.questions {
            switch q.type {
            case .geopoint:
                slots.append(Slot(kind: .geopoint, column: column, choices: []))
                column += 3
            case .selectMultiple:
                let choices = columns.splitSelectMultiples ? columns.choices(of: q.id).map { Array($0.utf8) } : []
                slots.append(Slot(kind: .selectMultiple, column: column, choices: choices))
                column += 1 + choices.count
            case .integer, .decimal:
                slots.append(Slot(kind: .number, column: column, choices: []))
                column += 1
            case .file:
                slots.append(Slot(kind: .file, column: column, choices: []))
                column += 1
            case .text, .selectOne, .date, .time, .datetime, .geotrace, .geoshape, .barcode, .calculate:
                slots.append(Slot(kind: .text, column: column, choices: []))
                column += 1
            }
        }
        self.slots = slots
        ids = columns.questions.map { Array($0.id.utf8) }
        byId = Dictionary(columns.questions.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        answerColumns = column
        spans = Array(repeating: (0, 0), count: column)
    }

    /// The row's line. `file` turns a file answer's upload id into its cell (a zip's path); nil
    /// keeps the id.
    mutating func line(_ r: ExportedResponse, versionNumber: Int64?, submitterName: String?,
                       file: ((_ questionId: String, _ clientUploadId: String) -> String)?, into out: inout [UInt8]) {
        var answers = r.answers
        // A form with repeats takes the general path: its row ends with each repeat's count.
        let read = columns.repeatCounts.isEmpty && answers.withUTF8 { fill(from: $0, file: file) }
        guard read else {
            let row = ExportRow(r, versionNumber: versionNumber, submitterName: submitterName)
            CSVEncoder.line(columns.cells(row, file: file ?? { $1 }), into: &out)
            return
        }
        metadata(r, versionNumber, submitterName, into: &out)
        scratch.withUnsafeBufferPointer { s in
            for (a, b) in spans {
                out.append(UInt8(ascii: ","))
                if b > a { out.append(contentsOf: UnsafeBufferPointer(rebasing: s[a..<b])) }
            }
        }
        out += [13, 10]
    }

    /// The metadata columns, as `CSVEncoder.line` writes their cells.
    private func metadata(_ r: ExportedResponse, _ versionNumber: Int64?, _ submitterName: String?, into out: inout [UInt8]) {
        let comma = UInt8(ascii: ",")
        CSVEncoder.field(r.responseId, into: &out, guardingFormulas: true); out.append(comma)
        CSVEncoder.field(r.clientSubmissionId, into: &out, guardingFormulas: true); out.append(comma)
        CSVEncoder.field(r.surveyVersionId, into: &out, guardingFormulas: true); out.append(comma)
        if let versionNumber { CSVEncoder.number(Double(versionNumber), into: &out) }
        out.append(comma)
        CSVEncoder.field(r.submitter, into: &out, guardingFormulas: true); out.append(comma)
        if let submitterName { CSVEncoder.field(submitterName, into: &out, guardingFormulas: true) }
        out.append(comma)
        out += Timestamp.format(r.receivedAt).utf8; out.append(comma)
        if let c = r.capturedAt { out += Timestamp.format(c).utf8 }
        out.append(comma)
        CSVEncoder.field(r.reviewState.rawValue, into: &out, guardingFormulas: true); out.append(comma)
        CSVEncoder.number(Double(r.revision), into: &out); out.append(comma)
        if let t = r.fieldTaskId { CSVEncoder.field(t, into: &out, guardingFormulas: true) }
    }

    /// Reads the answers object into `spans`; false when it is not what canonical answers look like.
    private mutating func fill(from json: UnsafeBufferPointer<UInt8>, file: ((String, String) -> String)?) -> Bool {
        scratch.removeAll(keepingCapacity: true)
        scratch += [0, UInt8(ascii: "1"), UInt8(ascii: "0")]  // (0, 0) is the empty cell; then the split columns' 1 and 0
        for i in spans.indices { spans[i] = (0, 0) }
        var p = JSONBytes(json)
        guard p.take(UInt8(ascii: "{")) else { return false }
        if p.take(UInt8(ascii: "}")) { return p.atEnd }
        var position = 0
        repeat {
            let slot: Int?
            if let k = p.plainString() {
                slot = self.slot(at: position, k)
            } else {
                key.removeAll(keepingCapacity: true)
                guard p.string(into: &key) else { return false }
                slot = key.withUnsafeBufferPointer { self.slot(at: position, $0[...]) }
            }
            guard p.take(UInt8(ascii: ":")) else { return false }
            guard let slot else {
                guard p.skipValue() else { return false }
                position += 1
                continue
            }
            guard value(&p, slots[slot], questionId: slot, file: file) else { return false }
            position += 1
        } while p.take(UInt8(ascii: ","))
        return p.take(UInt8(ascii: "}")) && p.atEnd
    }

    /// The slot of the key just read, guessed from the last row first.
    private mutating func slot(at position: Int, _ key: Slice<UnsafeBufferPointer<UInt8>>) -> Int? {
        if position < predicted.count, predicted[position] >= 0 {
            let guess = predicted[position]
            let same = ids[guess].withUnsafeBufferPointer { id in
                id.count == key.count && (id.isEmpty || memcmp(id.baseAddress!, key.base.baseAddress! + key.startIndex, id.count) == 0)
            }
            if same { return guess }
        }
        let found = byId[String(decoding: key, as: UTF8.self)]
        if position >= predicted.count { predicted += Array(repeating: -1, count: position - predicted.count + 1) }
        predicted[position] = found ?? -1
        return found
    }

    private mutating func value(_ p: inout JSONBytes, _ slot: Slot, questionId: Int, file: ((String, String) -> String)?) -> Bool {
        if p.takeNull() { return true }
        switch slot.kind {
        case .number:
            guard let n = p.number() else { return p.skipValue() }  // not a number: an empty cell, as in `cells`
            spans[slot.column] = numberCell(n)
        case .text:
            if p.peek == UInt8(ascii: "\"") {
                let a = scratch.count
                var quoting = false
                guard p.string(into: &scratch, quoting: &quoting) else { return false }
                spans[slot.column] = guardText(a, quoting: quoting)
            } else {
                // Not a string: its canonical JSON text, which the stored answers already are.
                let from = p.offset
                guard p.skipValue() else { return false }
                let a = scratch.count
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: p.bytes[from..<p.offset]))
                spans[slot.column] = guardText(a)
            }
        case .geopoint:
            guard p.take(UInt8(ascii: "{")) else { return p.skipValue() }
            if p.take(UInt8(ascii: "}")) { return true }
            repeat {
                key.removeAll(keepingCapacity: true)
                guard p.string(into: &key), p.take(UInt8(ascii: ":")) else { return false }
                let offset: Int? = key == Self.lat ? 0 : key == Self.lon ? 1 : key == Self.accuracy ? 2 : nil
                if let offset, let n = p.number() {
                    spans[slot.column + offset] = numberCell(n)
                } else if !p.takeNull() {
                    guard p.skipValue() else { return false }
                }
            } while p.take(UInt8(ascii: ","))
            return p.take(UInt8(ascii: "}"))
        case .selectMultiple:
            guard p.take(UInt8(ascii: "[")) else { return p.skipValue() }
            let a = scratch.count
            var quoting = false
            chosen.removeAll(keepingCapacity: true)
            if !p.take(UInt8(ascii: "]")) {
                repeat {
                    if p.peek == UInt8(ascii: "\"") {
                        if !chosen.isEmpty { scratch.append(UInt8(ascii: " ")) }
                        let s = scratch.count
                        guard p.string(into: &scratch, quoting: &quoting) else { return false }
                        chosen.append((s, scratch.count))
                    } else {
                        guard p.skipValue() else { return false }  // `compactMap(\.stringValue)` drops it too
                    }
                } while p.take(UInt8(ascii: ","))
                guard p.take(UInt8(ascii: "]")) else { return false }
            }
            for (i, c) in slot.choices.enumerated() {
                let hit = chosen.contains { scratch[$0.0..<$0.1].elementsEqual(c) }
                spans[slot.column + 1 + i] = hit ? Self.one : Self.zero
            }
            spans[slot.column] = guardText(a, quoting: quoting)
        case .file:
            guard p.take(UInt8(ascii: "{")) else { return p.skipValue() }
            if p.take(UInt8(ascii: "}")) { return true }
            repeat {
                key.removeAll(keepingCapacity: true)
                guard p.string(into: &key), p.take(UInt8(ascii: ":")) else { return false }
                if key == Self.clientUploadId, p.peek == UInt8(ascii: "\"") {
                    let a = scratch.count
                    guard p.string(into: &scratch) else { return false }
                    if let file {
                        let id = String(decoding: scratch[a...], as: UTF8.self)
                        scratch.removeSubrange(a...)
                        scratch += file(columns.questions[questionId].id, id).utf8
                    }
                    spans[slot.column] = guardText(a)
                } else {
                    guard p.skipValue() else { return false }
                }
            } while p.take(UInt8(ascii: ","))
            return p.take(UInt8(ascii: "}"))
        }
        return true
    }

    /// A number cell as `CSVEncoder` writes it: the stored literal when it is already in that
    /// form (nearly always), else the value printed again.
    private mutating func numberCell(_ n: Slice<UnsafeBufferPointer<UInt8>>) -> (Int, Int) {
        if Self.printsAsWritten(n) { return copy(n) }
        guard let d = Double(String(decoding: n, as: UTF8.self)) else { return (0, 0) }
        let a = scratch.count
        CSVEncoder.number(d, into: &scratch)
        return (a, scratch.count)
    }

    /// Whether Swift prints the literal's value as the literal: an integer of at most 15 digits
    /// (not `-0`), or a decimal fraction not ending in 0 with at most 15 significant digits and
    /// no more than two zeros after the point before its first digit (smaller values Swift may
    /// print with an exponent).
    static func printsAsWritten(_ n: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        var i = n.startIndex
        if n[i] == UInt8(ascii: "-") { i += 1 }
        let intStart = i
        while i < n.endIndex, n[i] >= UInt8(ascii: "0"), n[i] <= UInt8(ascii: "9") { i += 1 }
        let intDigits = i - intStart
        guard intDigits > 0, intDigits == 1 || n[intStart] != UInt8(ascii: "0") else { return false }
        if i == n.endIndex {  // an integer
            return intDigits <= 15 && !(n[intStart] == UInt8(ascii: "0") && intStart > n.startIndex)
        }
        guard n[i] == UInt8(ascii: ".") else { return false }  // an exponent
        i += 1
        let fracStart = i
        while i < n.endIndex, n[i] >= UInt8(ascii: "0"), n[i] <= UInt8(ascii: "9") { i += 1 }
        guard i == n.endIndex, i > fracStart, n[i - 1] != UInt8(ascii: "0") else { return false }
        if n[intStart] == UInt8(ascii: "0") {
            var zeros = 0
            while n[fracStart + zeros] == UInt8(ascii: "0") { zeros += 1 }
            return zeros <= 2 && (i - fracStart - zeros) <= 15
        }
        return intDigits + (i - fracStart) <= 15
    }

    /// Bytes copied to the end of `scratch`, as a span.
    private mutating func copy<C: Collection<UInt8>>(_ bytes: C) -> (Int, Int) {
        let a = scratch.count
        scratch.append(contentsOf: bytes)
        return (a, scratch.count)
    }

    /// The text cell from `a` to the end of `scratch`, as CSV writes a text cell: quoted when it
    /// must be (`quoting`: nil when not known yet), a leading `'` against formulas. Most text
    /// needs neither and stays where it is; the rest is written again after it.
    private mutating func guardText(_ a: Int, quoting: Bool? = nil) -> (Int, Int) {
        let end = scratch.count
        guard end > a else { return (0, 0) }
        let formula = CSVEncoder.startsFormula(scratch[a])
        let quoted = quoting ?? scratch[a..<end].contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 10 || $0 == 13 }
        guard formula || quoted else { return (a, end) }
        let b = scratch.count
        if quoted { scratch.append(UInt8(ascii: "\"")) }
        if formula { scratch.append(UInt8(ascii: "'")) }
        for i in a..<end {
            let c = scratch[i]
            if quoted && c == UInt8(ascii: "\"") { scratch.append(c) }
            scratch.append(c)
        }
        if quoted { scratch.append(UInt8(ascii: "\"")) }
        return (b, scratch.count)
    }

    private static let lat = Array("lat".utf8), lon = Array("lon".utf8), accuracy = Array("accuracy".utf8)
    private static let clientUploadId = Array("clientUploadId".utf8)
    private static let one = (1, 2), zero = (2, 3)

}

extension ExportRow {
    /// The row with its answers parsed (the general path).
    public init(_ r: ExportedResponse, versionNumber: Int64?, submitterName: String?) {
        let answers = (try? JSONParser.parse(Array(r.answers.utf8)))?.objectValue ?? [:]
        self.init(responseId: r.responseId, clientSubmissionId: r.clientSubmissionId, surveyVersionId: r.surveyVersionId,
                  versionNumber: versionNumber, submittedBy: r.submitter, submitterName: submitterName, receivedAt: r.receivedAt,
                  capturedAt: r.capturedAt, reviewState: r.reviewState.rawValue, revision: r.revision, fieldTaskId: r.fieldTaskId, answers: answers)
    }
}
