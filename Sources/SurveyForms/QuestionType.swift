/// The kinds of question a survey definition may contain; raw values are the wire names.
public enum QuestionType: String, Sendable, CaseIterable {
    case text
    case integer
    case decimal
    case selectOne = "select_one"
    case selectMultiple = "select_multiple"
    case date
    case geopoint
    case file
    /// `HH:MM[:SS[.fff]]`, with an optional offset.
    case time
    /// RFC 3339.
    case datetime
    /// A line: two points or more.
    case geotrace
    /// A closed shape: four points or more, the last equal to the first.
    case geoshape
    /// Text a device read from a code.
    case barcode
    /// A value the device computed; the server keeps it as sent.
    case calculate
}
