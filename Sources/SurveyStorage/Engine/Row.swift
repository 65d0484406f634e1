import Synchronization

/// One result row, read by column name: `let name: String = try row["name"]`, or
/// `try row.string("name")`, `try row.optionalInt("completed_at")`. A column the statement does
/// not have, or a value of another type than asked for, throws a `RowDecodingError` naming the
/// column — never a default — so a SELECT whose columns drifted from its decoding fails loudly.
public struct Row: Sendable {
    /// The result columns of one statement, shared by all of its rows.
    public final class Columns: Sendable {
        public let names: [String]
        private let positions: [String: Int]
        /// Where the next look-up probably is: a record reads its columns in the order its SELECT
        /// names them, so the column after the last one found is tried before the dictionary.
        /// An export reads a million rows of ten columns: hashing every name cost ~300 ns a row,
        /// the guess ~30 ns (measured with -O). Only a guess, checked every time: threads that
        /// race on it cost a look-up, never a wrong column.
        private let next = Atomic<Int>(0)
        /// Two columns share a name: only the dictionary knows which one is read.
        private let repeatsNames: Bool

        init(_ names: [String]) {
            self.names = names
            // The first of two columns of one name wins (alias one of them to read the other).
            positions = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
            repeatsNames = positions.count < names.count
        }

        func position(of column: String) -> Int? {
            let guess = next.load(ordering: .relaxed)
            let found = !repeatsNames && guess < names.count && names[guess] == column ? guess : positions[column]
            // After the last column, the next row's first.
            if let found { next.store(found + 1 == names.count ? 0 : found + 1, ordering: .relaxed) }
            return found
        }
    }

    public let columns: Columns
    /// In the order of `columns.names`; read only through a name.
    private let values: [SQLValue]

    init(columns: Columns, values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    /// The value as stored, whatever its type.
    public func value(_ column: String) throws(RowDecodingError) -> SQLValue {
        guard let i = columns.position(of: column) else { throw .columnNotFound(column, in: columns.names) }
        return values[i]
    }

    public subscript<T: SQLDecodable>(_ column: String) -> T {
        get throws(RowDecodingError) { try T.decode(try value(column), column: column) }
    }

    public func string(_ column: String) throws(RowDecodingError) -> String { try self[column] }
    public func optionalString(_ column: String) throws(RowDecodingError) -> String? { try self[column] }
    public func int(_ column: String) throws(RowDecodingError) -> Int64 { try self[column] }
    public func optionalInt(_ column: String) throws(RowDecodingError) -> Int64? { try self[column] }
    public func bool(_ column: String) throws(RowDecodingError) -> Bool { try self[column] }
    public func optionalBool(_ column: String) throws(RowDecodingError) -> Bool? { try self[column] }
    public func blob(_ column: String) throws(RowDecodingError) -> [UInt8] { try self[column] }
    public func optionalBlob(_ column: String) throws(RowDecodingError) -> [UInt8]? { try self[column] }
}
