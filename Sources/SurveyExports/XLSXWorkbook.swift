import CXLSXWriter
import Foundation
import SurveyDomain
import SurveyOperations

/// XLSX through libxlsxwriter in its constant-memory mode (rows go to a temp file as they are
/// written): a sheet of responses and a sheet per repeat of the form, typed cells — numbers as numbers, times as dates. The workbook is a zip
/// assembled when it is closed, so unlike CSV its first byte exists only after the last row:
/// `write` builds the whole file, and the door then sends it.
public enum XLSXWorkbook {
    /// Writes every row of `export` to a new workbook at `path`; returns the rows written.
    public static func write(_ export: Export, splitSelectMultiples: Bool, to path: String, tempDirectory: String) throws -> Int {
        let columns = export.columns(splitSelectMultiples: splitSelectMultiples)
        var options = lxw_workbook_options(constant_memory: 1, tmpdir: nil, use_zip64: 1)
        let workbook: UnsafeMutablePointer<lxw_workbook>? = tempDirectory.withCString { dir in
            options.tmpdir = UnsafeMutablePointer(mutating: dir)
            return workbook_new_opt(path, &options)
        }
        guard let workbook else { throw ApiError(.storageUnavailable, "The spreadsheet could not be created.") }
        var closed = false
        defer { if !closed { workbook_close(workbook) } }
        // No sheet when its temp file cannot be made (constant-memory mode writes rows to one).
        guard let sheet = workbook_add_worksheet(workbook, "responses") else {
            throw ApiError(.storageUnavailable, "The spreadsheet could not be created: its temp file could not be made.")
        }
        let dateFormat = workbook_add_format(workbook)
        format_set_num_format(dateFormat, "yyyy-mm-dd hh:mm:ss")
        let bold = workbook_add_format(workbook)
        format_set_bold(bold)
        func check(_ e: lxw_error) throws {
            guard e == LXW_NO_ERROR else { throw ApiError(.storageUnavailable, "The spreadsheet could not be written: \(String(cString: lxw_strerror(e))).") }
        }
        // A sheet per repeat, named by its id (ids are letters, digits and `_`, at most 31 of
        // them fit a sheet name; "responses" is taken).
        var repeatSheets: [UnsafeMutablePointer<lxw_worksheet>] = []
        for t in columns.repeats {
            let name = t.id == "responses" ? "repeat_responses" : String(t.id.prefix(31))
            guard let s = workbook_add_worksheet(workbook, name) else {
                throw ApiError(.storageUnavailable, "The spreadsheet could not be created: its temp file could not be made.")
            }
            repeatSheets.append(s)
        }
        func write(_ cells: [Cell], _ sheet: UnsafeMutablePointer<lxw_worksheet>, _ row: lxw_row_t) throws {
            for (c, cell) in cells.enumerated() {
                let col = lxw_col_t(c)
                switch cell {
                case .empty: break
                case .number(let d): try check(worksheet_write_number(sheet, row, col, d, nil))
                case .text(let s):
                    try check(worksheet_write_string(sheet, row, col, XLSXText.cell(s), nil))
                case .timestamp(let t):
                    // Excel's serial date: days since 1899-12-30, UTC.
                    try check(worksheet_write_number(sheet, row, col, Double(t) / 86_400_000 + 25_569, dateFormat))
                }
            }
        }
        for (c, name) in columns.header.enumerated() { try check(worksheet_write_string(sheet, 0, lxw_col_t(c), XLSXText.cell(name), bold)) }
        for (t, names) in columns.repeatHeaders.enumerated() {
            for (c, name) in names.enumerated() { try check(worksheet_write_string(repeatSheets[t], 0, lxw_col_t(c), XLSXText.cell(name), bold)) }
        }
        var row: lxw_row_t = 1
        var repeatRow = [lxw_row_t](repeating: 1, count: repeatSheets.count)
        // Excel's limit: 1,048,576 rows a sheet.
        let full = ApiError(.validationFailed, "An XLSX sheet holds at most 1,048,575 rows; export CSV or narrow the filters.")
        while let r = try export.nextRow() {
            guard row < 1_048_576 else { throw full }
            try write(columns.cells(r), sheet, row)
            row += 1
            for (t, cells) in columns.repeatRows(r) {
                guard repeatRow[t] < 1_048_576 else { throw full }
                try write(cells, repeatSheets[t], repeatRow[t])
                repeatRow[t] += 1
            }
        }
        closed = true
        try check(workbook_close(workbook))
        return Int(row) - 1
    }
}
