import CXLSXWriter
import Foundation
import SurveyDomain
import SurveyStorage

/// An entity list as a workbook: one sheet, the CSV's columns and rows (`EntityListCSV`), the
/// version a number. libxlsxwriter's constant-memory mode writes each row to a temp file as it
/// comes from the snapshot's cursor, so memory stays flat however long the list.
public enum EntityListXLSX {
    /// Writes the list as `snapshot` holds it to a new workbook at `path`; returns the rows written.
    /// 404 when the list does not exist.
    public static func write(snapshot: Snapshot, orgId: String, list: String, to path: String, tempDirectory: String) throws -> Int {
        guard let record = try snapshot.read.entityList(orgId: orgId, name: list) else { throw ApiError.notFound() }
        let cursor = try EntityListCSV.rows(snapshot, orgId: orgId, list: list)
        let workbook = try XLSXWorkbook.newWorkbook(at: path, tempDirectory: tempDirectory)
        var closed = false
        defer { if !closed { workbook_close(workbook) } }
        // A sheet name is at most 31 characters; the list's name is an XML name, so only its length may not fit.
        let sheet = try XLSXWorkbook.addSheet(workbook, String(list.prefix(31)))
        let bold = workbook_add_format(workbook)
        format_set_bold(bold)
        func check(_ e: lxw_error) throws {
            guard e == LXW_NO_ERROR else { throw XLSXWorkbook.failure(e, "The spreadsheet could not be written") }
        }
        for (c, name) in EntityListCSV.header(record).enumerated() {
            try check(worksheet_write_string(sheet, 0, lxw_col_t(c), XLSXText.cell(name), bold))
        }
        var row: lxw_row_t = 1
        while let r = try cursor.next() {
            guard row < 1_048_576 else { throw ApiError(.validationFailed, "An XLSX sheet holds at most 1,048,575 rows; download the CSV.") }
            for (c, field) in try EntityListCSV.fields(r, properties: record.properties).enumerated() where !field.isEmpty {
                if c == 2, let n = Double(field) {
                    try check(worksheet_write_number(sheet, row, lxw_col_t(c), n, nil))
                } else {
                    try check(worksheet_write_string(sheet, row, lxw_col_t(c), XLSXText.cell(field), nil))
                }
            }
            row += 1
        }
        closed = true
        try check(workbook_close(workbook))
        return Int(row) - 1
    }
}
