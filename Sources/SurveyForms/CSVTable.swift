/// A CSV file attached to a form (a choice list, `pulldata`'s data), read as RFC 4180 with what
/// spreadsheets write besides: a UTF-8 byte order mark, `;` between fields (Excel in locales
/// whose decimal mark is a comma), CRLF, LF or CR line ends, quoted fields holding separators,
/// quotes (doubled) and line breaks. The first row names the columns.
///
/// A state machine over the bytes rather than a C library: this module is also the SDK's, which
/// builds for iOS, where Debian's libcsv does not exist, and libcsv's callbacks cannot stop a
/// parse. This one stops at the first limit or mistake with a sentence that names the line, so a
/// hostile file costs at most its own size in time and memory.
///
/// It throws `Refusal` through untyped `throws`: with typed throws and a `Limits` argument
/// passed indirectly, a debug build of Swift 6.3 released a value it had never made (the
/// caller's variable read from the limits' memory).
public struct CSVTable: Sendable, Equatable {
    public let columns: [String]
    /// Every row has exactly `columns.count` fields (a short row is padded with empty fields).
    public let rows: [[String]]

    public struct Limits: Sendable {
        public var maxBytes = 10 << 20
        public var maxColumns = 1_000
        public var maxRows = 100_000
        public var maxFieldBytes = 64 << 10
        /// Fields in all: what the definition holds of a file grows with them, not with its bytes.
        public var maxFields = 1_000_000
        public init() {}
    }

    /// Why a file is not read: a sentence naming the line (1-based, as a spreadsheet numbers it).
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
        public init(message: String) { self.message = message }
    }

    public init(columns: [String], rows: [[String]]) {
        self.columns = columns
        self.rows = rows
    }

    public static func read(_ bytes: [UInt8], limits: Limits = Limits()) throws -> CSVTable {
        guard bytes.count <= limits.maxBytes else {
            throw Refusal(message: "it is \(bytes.count) bytes; a CSV file a form reads is at most \(limits.maxBytes) bytes")
        }
        var start = 0
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { start = 3 }
        if let bad = firstInvalidOffset(bytes, from: start) {
            throw Refusal(message: "line \(lineNumber(of: bad, in: bytes)): it is not UTF-8 text (save it as CSV UTF-8)")
        }
        var reader = Reader(bytes: bytes, position: start, separator: separator(bytes, from: start), limits: limits)
        guard let header = try reader.nextRow() else { throw Refusal(message: "it is empty; its first line names the columns") }
        var seen: Set<String> = []
        for (i, name) in header.enumerated() {
            let trimmed = name
            guard !trimmed.isEmpty else { throw Refusal(message: "line 1: column \(i + 1) has no name") }
            guard seen.insert(trimmed).inserted else { throw Refusal(message: "line 1: two columns are named \(trimmed)") }
        }
        var rows: [[String]] = []
        var fields = header.count
        while let row = try reader.nextRow() {
            guard row.count <= header.count else {
                throw Refusal(message: "line \(reader.rowLine): the row has \(row.count) fields, the header \(header.count)")
            }
            // A blank line (one empty field) is no row.
            if row.count == 1 && row[0].isEmpty && header.count > 1 { continue }
            guard rows.count < limits.maxRows else { throw Refusal(message: "it has more than \(limits.maxRows) rows") }
            fields += header.count
            guard fields <= limits.maxFields else { throw Refusal(message: "it has more than \(limits.maxFields) fields in all") }
            rows.append(row.count == header.count ? row : row + Array(repeating: "", count: header.count - row.count))
        }
        return CSVTable(columns: header, rows: rows)
    }

    /// `;` when the first line has more of them than commas outside quotes (Excel's CSV in
    /// locales whose decimal mark is a comma), else `,`.
    static func separator(_ bytes: [UInt8], from start: Int) -> UInt8 {
        var commas = 0, semicolons = 0, quoted = false
        var i = start
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") { quoted.toggle() }
            else if !quoted && (b == UInt8(ascii: "\n") || b == UInt8(ascii: "\r")) { break }
            else if !quoted && b == UInt8(ascii: ",") { commas += 1 }
            else if !quoted && b == UInt8(ascii: ";") { semicolons += 1 }
            i += 1
        }
        return semicolons > commas ? UInt8(ascii: ";") : UInt8(ascii: ",")
    }

    /// Where the bytes stop being UTF-8 text (a NUL counts: no text file holds one).
    static func firstInvalidOffset(_ bytes: [UInt8], from start: Int) -> Int? {
        bytes.withUnsafeBufferPointer { p -> Int? in
            var i = start
            while i < p.count {
                let b = p[i]
                if b == 0 { return i }
                if b < 0x80 { i += 1; continue }
                guard case .valid(let length) = UTF8Validation.sequence(p, at: i) else { return i }
                i += length
            }
            return nil
        }
    }

    static func lineNumber(of offset: Int, in bytes: [UInt8]) -> Int {
        var line = 1
        for b in bytes[..<min(offset, bytes.count)] where b == UInt8(ascii: "\n") { line += 1 }
        return line
    }

    /// The rows one at a time. States: at a field's start, inside an unquoted field, inside a
    /// quoted one, right after a quote inside a quoted one (a doubled quote or the field's end).
    private struct Reader {
        let bytes: [UInt8]
        var position: Int
        let separator: UInt8
        let limits: Limits
        /// The line the current row starts on, and the line the reader is on.
        private(set) var rowLine = 1
        private var line = 1

        init(bytes: [UInt8], position: Int, separator: UInt8, limits: Limits) {
            self.bytes = bytes
            self.position = position
            self.separator = separator
            self.limits = limits
        }

        enum State { case fieldStart, unquoted, quoted, quoteInQuoted }

        mutating func nextRow() throws -> [String]? {
            guard position < bytes.count else { return nil }
            rowLine = line
            var row: [String] = []
            var field: [UInt8] = []
            var state = State.fieldStart
            func finishField() throws {
                guard row.count < limits.maxColumns else {
                    throw Refusal(message: "line \(rowLine): the row has more than \(limits.maxColumns) fields")
                }
                // Validated as UTF-8 before reading, and cut only at ASCII bytes.
                row.append(String(decoding: field, as: UTF8.self))
                field.removeAll(keepingCapacity: true)
            }
            while position < bytes.count {
                let b = bytes[position]
                position += 1
                switch state {
                case .fieldStart, .unquoted:
                    if b == separator {
                        try finishField()
                        state = .fieldStart
                    } else if b == UInt8(ascii: "\n") || b == UInt8(ascii: "\r") {
                        passLineEnd(b)
                        try finishField()
                        return row
                    } else if b == UInt8(ascii: "\"") {
                        guard state == .fieldStart else {
                            throw Refusal(message: "line \(line): a quote inside an unquoted field (field \(row.count + 1)); quote the whole field and double the quotes in it")
                        }
                        state = .quoted
                    } else {
                        // The rest of a plain run in one append: a field is mostly such a run.
                        let end = runEnd(from: position, quoted: false)
                        try append(bytes[(position - 1)..<end], to: &field, fieldNumber: row.count + 1)
                        position = end
                        state = .unquoted
                    }
                case .quoted:
                    if b == UInt8(ascii: "\"") {
                        state = .quoteInQuoted
                    } else {
                        let end = runEnd(from: position, quoted: true)
                        var k = position - 1
                        while k < end {
                            let c = bytes[k]
                            if c == UInt8(ascii: "\n") || (c == UInt8(ascii: "\r") && (k + 1 >= bytes.count || bytes[k + 1] != UInt8(ascii: "\n"))) {
                                line += 1
                            }
                            k += 1
                        }
                        try append(bytes[(position - 1)..<end], to: &field, fieldNumber: row.count + 1)
                        position = end
                    }
                case .quoteInQuoted:
                    if b == UInt8(ascii: "\"") {
                        try append(b, to: &field, fieldNumber: row.count + 1)
                        state = .quoted
                    } else if b == separator {
                        try finishField()
                        state = .fieldStart
                    } else if b == UInt8(ascii: "\n") || b == UInt8(ascii: "\r") {
                        passLineEnd(b)
                        try finishField()
                        return row
                    } else {
                        throw Refusal(message: "line \(line): text after the closing quote of field \(row.count + 1)")
                    }
                }
            }
            if state == .quoted {
                throw Refusal(message: "line \(rowLine): a quoted field (field \(row.count + 1)) is never closed")
            }
            try finishField()
            return row
        }

        /// Past a line end just read (`b`, a CR or an LF): the LF of a CRLF too, and onto the next line.
        private mutating func passLineEnd(_ b: UInt8) {
            if b == UInt8(ascii: "\r"), position < bytes.count, bytes[position] == UInt8(ascii: "\n") { position += 1 }
            line += 1
        }

        private func append(_ b: UInt8, to field: inout [UInt8], fieldNumber: Int) throws {
            try append(CollectionOfOne(b), to: &field, fieldNumber: fieldNumber)
        }

        private func append<C: Collection<UInt8>>(_ run: C, to field: inout [UInt8], fieldNumber: Int) throws {
            guard field.count + run.count <= limits.maxFieldBytes else {
                throw Refusal(message: "line \(rowLine): field \(fieldNumber) is over \(limits.maxFieldBytes) bytes")
            }
            field.append(contentsOf: run)
        }

        /// Where a run of bytes that need no decision ends: the next quote, and outside quotes the
        /// next separator or line end.
        private func runEnd(from start: Int, quoted: Bool) -> Int {
            bytes.withUnsafeBufferPointer { p in
                var i = start
                if quoted {
                    while i < p.count, p[i] != UInt8(ascii: "\"") { i += 1 }
                } else {
                    while i < p.count {
                        let c = p[i]
                        if c == separator || c == UInt8(ascii: "\n") || c == UInt8(ascii: "\r") || c == UInt8(ascii: "\"") { break }
                        i += 1
                    }
                }
                return i
            }
        }
    }
}
