import SurveyDomain

/// One cell of an export row, typed so that each format writes it its own way (CSV as text,
/// XLSX as a number or a date).
public enum Cell: Sendable, Equatable {
    case empty
    case text(String)
    case number(Double)
    /// Server time in milliseconds since 1970.
    case timestamp(Int64)
}

extension Cell {
    /// The cell's value as a CSV export writes it, before any quoting or formula guard: a number
    /// as `CSVEncoder` prints it (no rounding, no grouping), a time as RFC 3339 UTC.
    public var csvText: String {
        switch self {
        case .empty: return ""
        case .text(let s): return s
        case .timestamp(let t): return Timestamp.format(t)
        case .number(let d):
            var out: [UInt8] = []
            CSVEncoder.number(d, into: &out)
            return String(decoding: out, as: UTF8.self)
        }
    }
}
