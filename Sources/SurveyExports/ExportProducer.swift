import SurveyDomain
import SurveyOperations
import SurveyStorage

/// Turns an export's rows into a format's bytes a piece at a time: each call appends roughly
/// `chunk` bytes (whole rows), so memory stays flat however many rows there are.
public protocol ExportProducer: AnyObject {
    /// Appends the next bytes to `out`; false once everything has been produced.
    func produce(into out: inout [UInt8]) throws -> Bool
    /// Ends the export's snapshot and removes any temp file (idempotent).
    func close()
}

extension Export {
    /// The next response as an export row, or nil after the last.
    func nextRow() throws -> ExportRow? {
        guard let r = try next() else { return nil }
        return ExportRow(r, versionNumber: versionNumber(of: r.surveyVersionId), submitterName: submitterNames[r.submitter])
    }

    /// The export's columns over all versions.
    public func columns(splitSelectMultiples: Bool) -> ExportColumns {
        ExportColumns(definitions: versions.map(\.definition), splitSelectMultiples: splitSelectMultiples)
    }
}

/// How much a producer adds per call.
let chunk = 64 * 1024

/// CSV: an optional BOM, the header, then a line per response.
public final class CSVProducer: ExportProducer {
    private let export: Export
    private let columns: ExportColumns
    private let bom: Bool
    private var writer: CSVRowWriter
    private var started = false

    public init(_ export: Export, splitSelectMultiples: Bool, bom: Bool) {
        self.export = export
        self.columns = export.columns(splitSelectMultiples: splitSelectMultiples)
        self.bom = bom
        writer = CSVRowWriter(columns)
    }

    public func produce(into out: inout [UInt8]) throws -> Bool {
        if !started {
            started = true
            if bom { out += CSVEncoder.byteOrderMark }
            CSVEncoder.line(columns.header, into: &out)
        }
        while out.count < chunk {
            guard let r = try export.next() else { close(); return false }
            writer.line(r, versionNumber: export.versionNumber(of: r.surveyVersionId), submitterName: export.submitterNames[r.submitter],
                        file: nil, into: &out)
        }
        return true
    }

    public func close() { export.close() }
}

/// GeoJSON: a FeatureCollection with a Point per response that has the geopoint answer.
public final class GeoJSONProducer: ExportProducer {
    private let export: Export
    private var encoder: GeoJSONEncoder
    private var started = false

    public init(_ export: Export, geoField: String) {
        self.export = export
        encoder = GeoJSONEncoder(geoField: geoField)
    }

    public func produce(into out: inout [UInt8]) throws -> Bool {
        if !started { started = true; out += GeoJSONEncoder.head }
        while out.count < chunk {
            guard let row = try export.nextRow() else {
                out += GeoJSONEncoder.tail
                close()
                return false
            }
            encoder.feature(row, into: &out)
        }
        return true
    }

    public func close() { export.close() }
}
