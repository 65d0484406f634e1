/// One cell of an export row, typed so that each format writes it its own way (CSV as text,
/// XLSX as a number or a date).
public enum Cell: Sendable, Equatable {
    case empty
    case text(String)
    case number(Double)
    /// Server time in milliseconds since 1970.
    case timestamp(Int64)
}
