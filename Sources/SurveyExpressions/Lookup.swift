/// What a `pulldata('file', 'column', 'keyColumn', key)` call reads: a column of a CSV file
/// attached to the form, in the row whose key column holds the key. The file is named as ODK
/// names it, without `.csv`. Its three names are literals, so that the server knows every file
/// and column a form reads when the form is published.
public struct Lookup: Sendable, Hashable {
    /// The file's name without `.csv` (`villages` reads `villages.csv`).
    public let file: String
    public let column: String
    public let keyColumn: String

    public init(file: String, column: String, keyColumn: String) {
        self.file = file
        self.column = column
        self.keyColumn = keyColumn
    }

    /// The attachment it reads.
    public var fileName: String { file + ".csv" }
}
