// CSVTable.read: the CSV files a form names (choice lists, pulldata's data), and a choice list
// read from one. Properties: every row of an accepted file is as wide as its header, whose names
// are unique and not empty; the table written back as RFC 4180 (every field quoted, quotes
// doubled, CRLF) reads back as the same table; its choices, when it has a name column, are one
// per row with that row's name; a refusal names its line or the limit.
@testable import SurveyDomain
@testable import SurveyForms

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var limits = CSVTable.Limits()
    limits.maxColumns = 64
    limits.maxRows = 200
    limits.maxFieldBytes = 512
    let table: CSVTable
    do {
        table = try CSVTable.read(bytes, limits: limits)
    } catch let refusal as CSVTable.Refusal {
        guard refusal.message.hasPrefix("line ") || refusal.message.hasPrefix("it ") else { fatalError("a refusal without its place: \(refusal.message)") }
        return 0
    } catch {
        fatalError("not a refusal: \(error)")
    }
    guard !table.columns.isEmpty, Set(table.columns).count == table.columns.count, !table.columns.contains("") else {
        fatalError("header \(table.columns)")
    }
    for row in table.rows where row.count != table.columns.count { fatalError("row \(row) for header \(table.columns)") }

    // Written byte by byte: a quote followed by a combining mark is one Character, which a
    // Character-wise replacement would not double.
    var written: [UInt8] = []
    for line in [table.columns] + table.rows {
        for (i, field) in line.enumerated() {
            if i > 0 { written.append(UInt8(ascii: ",")) }
            written.append(UInt8(ascii: "\""))
            for b in field.utf8 {
                if b == UInt8(ascii: "\"") { written.append(b) }
                written.append(b)
            }
            written.append(UInt8(ascii: "\""))
        }
        written += [13, 10]
    }
    if written.count <= limits.maxBytes {
        do {
            let again = try CSVTable.read(written, limits: limits)
            guard again == table else { fatalError("written back, it reads as \(again), not \(table)") }
        } catch {
            fatalError("written back, it is refused: \(error)")
        }
    }
    if let nameColumn = table.columns.firstIndex(of: "name"), let choices = try? FormAttachments.choices(of: table) {
        let names = (choices.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
        guard names == table.rows.map({ $0[nameColumn] }) else { fatalError("choices \(names) of \(table.rows)") }
    }
    return 0
}
