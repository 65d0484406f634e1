import Foundation
import SurveyDomain

/// One answers object's export cells (`ExportColumns.cells(of:_:)`), read in place from its
/// stored canonical JSON instead of a parsed `JSONValue`: each cell a span of bytes. The hot
/// path of the CSV and zip exports (`CSVRowWriter`) and of the OData feed, where building a
/// tree for every row cost more than everything else together. Each format writes the spans
/// its own way; a text cell carries what both need to know to write it without a second look
/// (whether CSV must quote it, whether JSON must escape it again). An object it cannot read
/// (`read` answers false) is left to the general path.
public struct StoredCells {
    public enum Kind: UInt8, Sendable { case empty, text, number }

    public struct Span: Sendable {
        /// The cell's bytes in `bytes`: a text cell's text (escapes decoded), a number's literal.
        public var start: Int, end: Int
        public var kind: Kind
        /// A text cell: whether it holds a byte a CSV field is quoted for (comma, quote, CR, LF);
        /// nil when not looked for yet.
        var quoting: Bool?
        /// A text cell whose bytes are not already a JSON string's inside (an escape was
        /// decoded, or it is another value's JSON text): JSON writes it escaped.
        public var escaped: Bool

        // The offsets first: 24 bytes a cell, where the kind first took 32 (a row resets them all).
        init(kind: Kind, start: Int, end: Int, quoting: Bool?, escaped: Bool) {
            self.start = start; self.end = end; self.kind = kind; self.quoting = quoting; self.escaped = escaped
        }

        static let empty = Span(kind: .empty, start: 0, end: 0, quoting: false, escaped: false)
        static let one = Span(kind: .number, start: 1, end: 2, quoting: false, escaped: false)
        static let zero = Span(kind: .number, start: 2, end: 3, quoting: false, escaped: false)
    }

    private enum SlotKind { case text, number, geopoint, selectMultiple, file }
    private struct Slot {
        let kind: SlotKind
        /// The question's first cell.
        let column: Int
        /// select_multiple with split columns: its choices, each with a cell of its own after the joined one.
        let choices: [[UInt8]]
    }

    /// The questions read, in order; a question's cells start at `firstCell[index]`.
    public let questions: [Question]
    public let firstCell: [Int]
    private let hasGeopoint: Bool
    private let slots: [Slot]
    private let ids: [[UInt8]]
    private let byId: [String: Int]
    /// The slot met at each key position in the last object (-1: a key that is no question's,
    /// such as a repeat's, kept in `unknown`): the next object's keys are nearly always the
    /// same, so a byte comparison usually replaces a hash lookup.
    private var predicted: [Int] = []
    private var unknown: [[UInt8]] = []
    /// Every cell of the last object read, in order.
    public private(set) var spans: [Span]
    /// A geopoint's `altitude` (not an export cell; the feed's third coordinate), by question index.
    public private(set) var altitudes: [Span]
    /// What the spans point into.
    public private(set) var bytes: [UInt8] = []
    private var key: [UInt8] = []
    private var chosen: [(Int, Int)] = []

    /// `choices`: a select_multiple question's split columns (nil: no split columns).
    public init(questions: [Question], choices: ((_ questionId: String) -> [String])?) {
        self.questions = questions
        var slots: [Slot] = []
        var firstCell: [Int] = []
        var column = 0
        for q in questions {
            firstCell.append(column)
            switch q.type {
            case .geopoint:
                slots.append(Slot(kind: .geopoint, column: column, choices: []))
                column += 3
            case .selectMultiple:
                let split = choices.map { $0(q.id).map { Array($0.utf8) } } ?? []
                slots.append(Slot(kind: .selectMultiple, column: column, choices: split))
                column += 1 + split.count
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
        self.firstCell = firstCell
        hasGeopoint = questions.contains { $0.type == .geopoint }
        ids = questions.map { Array($0.id.utf8) }
        byId = Dictionary(questions.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        spans = Array(repeating: .empty, count: column)
        altitudes = Array(repeating: .empty, count: questions.count)
    }

    /// The cells of the answers object `json`; false when it is not what canonical answers look
    /// like. `file` turns a file answer's upload id into its cell (a zip's path); nil keeps the id.
    public mutating func read(_ json: UnsafeBufferPointer<UInt8>, file: ((_ questionId: String, _ clientUploadId: String) -> String)? = nil) -> Bool {
        bytes.removeAll(keepingCapacity: true)
        bytes += [0, UInt8(ascii: "1"), UInt8(ascii: "0")]  // the split columns' 1 and 0 (Span.one, Span.zero)
        for i in spans.indices { spans[i] = .empty }
        if hasGeopoint { for i in altitudes.indices { altitudes[i] = .empty } }
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
            position += 1
            guard let slot else {
                guard p.skipValue() else { return false }
                continue
            }
            guard value(&p, slot, file: file) else { return false }
        } while p.take(UInt8(ascii: ","))
        return p.take(UInt8(ascii: "}")) && p.atEnd
    }

    /// The slot of the key just read, guessed from the last object first.
    private mutating func slot(at position: Int, _ key: Slice<UnsafeBufferPointer<UInt8>>) -> Int? {
        if position < predicted.count {
            let guess = predicted[position]
            if guess >= 0 ? Self.same(ids[guess], key) : Self.same(unknown[position], key) { return guess >= 0 ? guess : nil }
        }
        let found = byId[String(decoding: key, as: UTF8.self)]
        if position >= predicted.count {
            predicted += Array(repeating: -1, count: position - predicted.count + 1)
            unknown += Array(repeating: [], count: position - unknown.count + 1)
        }
        predicted[position] = found ?? -1
        unknown[position] = found == nil ? Array(key) : []
        return found
    }

    private static func same(_ a: [UInt8], _ key: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard a.count == key.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBufferPointer { a in
            guard let x = a.baseAddress, let y = key.base.baseAddress else { return false }
            return memcmp(x, y + key.startIndex, a.count) == 0
        }
    }

    private mutating func value(_ p: inout JSONBytes, _ index: Int, file: ((String, String) -> String)?) -> Bool {
        if p.takeNull() { return true }
        let slot = slots[index]
        switch slot.kind {
        case .number:
            guard let n = p.number() else { return p.skipValue() }  // not a number: an empty cell, as in `cells`
            spans[slot.column] = number(n)
        case .text:
            if p.peek == UInt8(ascii: "\"") {
                let a = bytes.count
                var quoting = false, escaped = false
                guard p.string(into: &bytes, quoting: &quoting, escaped: &escaped) else { return false }
                spans[slot.column] = Span(kind: .text, start: a, end: bytes.count, quoting: quoting, escaped: escaped)
            } else {
                // Not a string: its canonical JSON text, which the stored answers already are.
                let from = p.offset
                guard p.skipValue() else { return false }
                let a = bytes.count
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: p.bytes[from..<p.offset]))
                spans[slot.column] = Span(kind: .text, start: a, end: bytes.count, quoting: nil, escaped: true)
            }
        case .geopoint:
            guard p.take(UInt8(ascii: "{")) else { return p.skipValue() }
            if p.take(UInt8(ascii: "}")) { return true }
            repeat {
                key.removeAll(keepingCapacity: true)
                guard p.string(into: &key), p.take(UInt8(ascii: ":")) else { return false }
                let offset: Int? = key == Self.lat ? 0 : key == Self.lon ? 1 : key == Self.accuracy ? 2 : key == Self.altitude ? 3 : nil
                if let offset, let n = p.number() {
                    if offset == 3 { altitudes[index] = number(n) } else { spans[slot.column + offset] = number(n) }
                } else if !p.takeNull() {
                    guard p.skipValue() else { return false }
                }
            } while p.take(UInt8(ascii: ","))
            return p.take(UInt8(ascii: "}"))
        case .selectMultiple:
            guard p.take(UInt8(ascii: "[")) else { return p.skipValue() }
            let a = bytes.count
            var quoting = false, escaped = false
            chosen.removeAll(keepingCapacity: true)
            if !p.take(UInt8(ascii: "]")) {
                repeat {
                    if p.peek == UInt8(ascii: "\"") {
                        if !chosen.isEmpty { bytes.append(UInt8(ascii: " ")) }
                        let s = bytes.count
                        guard p.string(into: &bytes, quoting: &quoting, escaped: &escaped) else { return false }
                        chosen.append((s, bytes.count))
                    } else {
                        guard p.skipValue() else { return false }  // `compactMap(\.stringValue)` drops it too
                    }
                } while p.take(UInt8(ascii: ","))
                guard p.take(UInt8(ascii: "]")) else { return false }
            }
            for (i, c) in slot.choices.enumerated() {
                let hit = chosen.contains { bytes[$0.0..<$0.1].elementsEqual(c) }
                spans[slot.column + 1 + i] = hit ? .one : .zero
            }
            spans[slot.column] = Span(kind: .text, start: a, end: bytes.count, quoting: quoting, escaped: escaped)
        case .file:
            guard p.take(UInt8(ascii: "{")) else { return p.skipValue() }
            if p.take(UInt8(ascii: "}")) { return true }
            repeat {
                key.removeAll(keepingCapacity: true)
                guard p.string(into: &key), p.take(UInt8(ascii: ":")) else { return false }
                if key == Self.clientUploadId, p.peek == UInt8(ascii: "\"") {
                    let a = bytes.count
                    var quoting = false, escaped = false
                    guard p.string(into: &bytes, quoting: &quoting, escaped: &escaped) else { return false }
                    if let file {
                        let id = String(decoding: bytes[a...], as: UTF8.self)
                        bytes.removeSubrange(a...)
                        bytes += file(questions[index].id, id).utf8
                        spans[slot.column] = Span(kind: .text, start: a, end: bytes.count, quoting: nil, escaped: true)
                    } else {
                        spans[slot.column] = Span(kind: .text, start: a, end: bytes.count, quoting: quoting, escaped: escaped)
                    }
                } else {
                    guard p.skipValue() else { return false }
                }
            } while p.take(UInt8(ascii: ","))
            return p.take(UInt8(ascii: "}"))
        }
        return true
    }

    private mutating func number(_ n: Slice<UnsafeBufferPointer<UInt8>>) -> Span {
        let a = bytes.count
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: n))
        return Span(kind: .number, start: a, end: bytes.count, quoting: false, escaped: false)
    }

    /// A span's bytes.
    public func bytes(of span: Span) -> ArraySlice<UInt8> { bytes[span.start..<span.end] }

    /// Whether a span's number prints as written: the literal, when Swift (CSV) and ECMAScript
    /// (canonical JSON) both print its value exactly so — nearly always; else the writer prints
    /// the value again.
    public func printsAsWritten(_ span: Span) -> Bool {
        bytes.withUnsafeBufferPointer { Self.printsAsWritten($0[span.start..<span.end]) }
    }

    /// Whether Swift prints the literal's value as the literal: an integer of at most 15 digits
    /// (not `-0`), or a decimal fraction not ending in 0 with at most 15 significant digits and
    /// no more than two zeros after the point before its first digit (smaller values Swift may
    /// print with an exponent). ECMAScript prints such a value the same way.
    static func printsAsWritten(_ n: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard !n.isEmpty else { return false }
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

    /// A span's number as a value (for a literal that does not print as written).
    public func double(_ span: Span) -> Double? { Double(String(decoding: bytes(of: span), as: UTF8.self)) }

    private static let lat = Array("lat".utf8), lon = Array("lon".utf8), accuracy = Array("accuracy".utf8)
    private static let altitude = Array("altitude".utf8)
    private static let clientUploadId = Array("clientUploadId".utf8)
}
