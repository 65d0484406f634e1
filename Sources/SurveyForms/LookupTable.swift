/// A CSV file `pulldata` reads, as the definition keeps it (`lookupTables`): its columns and rows
/// of text, and for each key column a form looks rows up by, the first row of each key — so a
/// look-up costs one hash look-up however long the file is.
public final class LookupTable: Sendable, Equatable {
    public let columns: [String]
    public let rows: [[String]]
    let columnIndex: [String: Int]
    /// Key column → key → the first row that holds it; built when the definition is parsed, for
    /// the key columns its lookups name.
    private let keys: [Int: [String: Int]]

    init(columns: [String], rows: [[String]], keyColumns: Set<String>) {
        self.columns = columns
        self.rows = rows
        var index: [String: Int] = [:]
        for (i, c) in columns.enumerated() where index[c] == nil { index[c] = i }
        columnIndex = index
        var keys: [Int: [String: Int]] = [:]
        for name in keyColumns {
            guard let k = index[name] else { continue }
            var byKey: [String: Int] = [:]
            byKey.reserveCapacity(rows.count)
            for (r, row) in rows.enumerated() where row.indices.contains(k) && byKey[row[k]] == nil { byKey[row[k]] = r }
            keys[k] = byKey
        }
        self.keys = keys
    }

    /// The value of `column` in the first row whose `keyColumn` holds `key`; "" when none does.
    func value(column: Int, keyColumn: Int, key: String) -> String {
        guard let r = keys[keyColumn]?[key], rows.indices.contains(r), rows[r].indices.contains(column) else { return "" }
        return rows[r][column]
    }

    public static func == (a: LookupTable, b: LookupTable) -> Bool { a === b || (a.columns == b.columns && a.rows == b.rows) }
}
