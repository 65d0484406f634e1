import Foundation
import SurveyDomain
import SurveyStorage

/// A response's CSV line written straight from its stored answers (canonical JSON), without
/// building a `JSONValue` for them: the hot path of a CSV or zip export, where parsing every
/// row into dictionaries cost more than everything else together. It writes exactly what
/// `CSVEncoder.line(columns.cells(row))` writes (a test holds the two together); a row whose
/// answers it cannot read takes that general path instead.
struct CSVRowWriter {
    private let columns: ExportColumns
    private var cells: StoredCells

    init(_ columns: ExportColumns) {
        self.columns = columns
        cells = StoredCells(questions: columns.questions, choices: columns.splitSelectMultiples ? { columns.choices(of: $0) } : nil)
    }

    /// The row's line. `file` turns a file answer's upload id into its cell (a zip's path); nil
    /// keeps the id.
    mutating func line(_ r: ExportedResponse, versionNumber: Int64?, submitterName: String?,
                       file: ((_ questionId: String, _ clientUploadId: String) -> String)?, into out: inout [UInt8]) {
        var answers = r.answers
        // A form with repeats takes the general path: its row ends with each repeat's count.
        let read = columns.repeatCounts.isEmpty && answers.withUTF8 { cells.read($0, file: file) }
        guard read else {
            let row = ExportRow(r, versionNumber: versionNumber, submitterName: submitterName)
            CSVEncoder.line(columns.cells(row, file: file ?? { $1 }), into: &out)
            return
        }
        metadata(r, versionNumber, submitterName, into: &out)
        // The whole line from the cells' buffers in place: no slice (and reference count) per cell.
        cells.bytes.withUnsafeBufferPointer { bytes in
            cells.spans.withUnsafeBufferPointer { spans in
                for span in spans {
                    out.append(UInt8(ascii: ","))
                    switch span.kind {
                    case .empty: break
                    case .number: Self.number(bytes[span.start..<span.end], into: &out)
                    case .text: Self.text(bytes[span.start..<span.end], quoting: span.quoting, into: &out)
                    }
                }
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

    /// A number cell as `CSVEncoder` writes it: the stored literal when it is already in that
    /// form (nearly always), else the value printed again.
    private static func number(_ literal: Slice<UnsafeBufferPointer<UInt8>>, into out: inout [UInt8]) {
        if StoredCells.printsAsWritten(literal) {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: literal))
        } else if let d = Double(String(decoding: literal, as: UTF8.self)) {
            CSVEncoder.number(d, into: &out)
        }
    }

    /// A text cell as CSV writes one: quoted when it must be (`quoting`: nil when not known
    /// yet), a leading `'` against formulas.
    private static func text(_ text: Slice<UnsafeBufferPointer<UInt8>>, quoting: Bool?, into out: inout [UInt8]) {
        guard let first = text.first else { return }
        let formula = CSVEncoder.startsFormula(first)
        let quoted = quoting ?? text.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 10 || $0 == 13 }
        guard formula || quoted else { out.append(contentsOf: UnsafeBufferPointer(rebasing: text)); return }
        if quoted { out.append(UInt8(ascii: "\"")) }
        if formula { out.append(UInt8(ascii: "'")) }
        if quoted {
            for c in text {
                if c == UInt8(ascii: "\"") { out.append(c) }
                out.append(c)
            }
            out.append(UInt8(ascii: "\""))
        } else {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: text))
        }
    }
}

extension ExportRow {
    /// The row with its answers parsed (the general path).
    public init(_ r: ExportedResponse, versionNumber: Int64?, submitterName: String?) {
        let answers = (try? JSONParser.parse(Array(r.answers.utf8)))?.objectValue ?? [:]
        self.init(responseId: r.responseId, clientSubmissionId: r.clientSubmissionId, surveyVersionId: r.surveyVersionId,
                  versionNumber: versionNumber, submittedBy: r.submitter, submitterName: submitterName, receivedAt: r.receivedAt,
                  capturedAt: r.capturedAt, reviewState: r.reviewState.rawValue, revision: r.revision, fieldTaskId: r.fieldTaskId, answers: answers)
        edits = r.edits
    }
}
