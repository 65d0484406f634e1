/// A row that does not read as its decoding expects. Each names the column: a SELECT whose
/// column list and decoding drifted apart, or a stored value of another type, is found at once.
public enum RowDecodingError: Error, Equatable, CustomStringConvertible {
    /// The statement has no column of this name (`in`: the columns it has).
    case columnNotFound(String, in: [String])
    /// The column holds another type than asked for (`found` says which, never the value).
    case typeMismatch(column: String, expected: String, found: String)
    /// The column holds a value that is none of the cases of `type` (a review state, a task state).
    case unknownValue(column: String, value: String, type: String)

    public var description: String {
        switch self {
        case .columnNotFound(let column, let columns):
            "the row has no column '\(column)' (its columns: \(columns.joined(separator: ", ")))"
        case .typeMismatch(let column, let expected, let found):
            "column '\(column)' holds \(found), not \(expected)"
        case .unknownValue(let column, let value, let type):
            "column '\(column)' holds '\(value)', which is no \(type)"
        }
    }
}
