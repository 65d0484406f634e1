import CXLSXWriter
import Foundation
import SurveyDomain
import SurveyOperations

/// XLSX through libxlsxwriter in its constant-memory mode (rows go to a temp file as they are
/// written): a sheet of responses and a sheet per repeat of the form (named by
/// `RepeatTableNames`), typed cells — numbers as numbers, times as dates. The workbook is a zip
/// assembled when it is closed, so unlike CSV its first byte exists only after the last row:
/// `write` builds the whole file, and the door then sends it.
///
/// A failure of the disk (a temp file that cannot be made, written or read back) is 503 / 1040,
/// worth a retry; any other failure of the writer is 500 / 1099, as retrying the same export
/// would only fail the same way.
public enum XLSXWorkbook {
    /// A workbook at `path` in constant-memory mode (rows streamed to `tempDirectory`, ZIP64 for
    /// large ones). It only allocates memory: no file is touched before the close.
    static func newWorkbook(at path: String, tempDirectory: String) throws -> UnsafeMutablePointer<lxw_workbook> {
        var options = lxw_workbook_options(constant_memory: 1, tmpdir: nil, use_zip64: 1)
        let workbook: UnsafeMutablePointer<lxw_workbook>? = tempDirectory.withCString { dir in
            options.tmpdir = UnsafeMutablePointer(mutating: dir)
            return workbook_new_opt(path, &options)
        }
        guard let workbook else { throw ApiError(.internalError, "The spreadsheet could not be created.") }
        return workbook
    }

    /// Writes every row of `export` to a new workbook at `path`; returns the rows written.
    public static func write(_ export: Export, splitSelectMultiples: Bool, to path: String, tempDirectory: String) throws -> Int {
        let columns = export.columns(splitSelectMultiples: splitSelectMultiples)
        let workbook = try newWorkbook(at: path, tempDirectory: tempDirectory)
        var closed = false
        defer { if !closed { workbook_close(workbook) } }
        let sheet = try addSheet(workbook, "responses")
        let dateFormat = workbook_add_format(workbook)
        format_set_num_format(dateFormat, "yyyy-mm-dd hh:mm:ss")
        let bold = workbook_add_format(workbook)
        format_set_bold(bold)
        func check(_ e: lxw_error) throws {
            guard e == LXW_NO_ERROR else { throw failure(e, "The spreadsheet could not be written") }
        }
        // A sheet per repeat; its name may differ from the repeat's id (`RepeatTableNames`), so
        // each sheet's repeat is written down as a custom document property, sheet name → id.
        var repeatSheets: [UnsafeMutablePointer<lxw_worksheet>] = []
        for (t, name) in zip(columns.repeats, RepeatTableNames.sheets(columns.repeats.map(\.id))) {
            repeatSheets.append(try addSheet(workbook, name))
            try check(workbook_set_custom_property_string(workbook, name, t.id))
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

    /// A new sheet named `name`. libxlsxwriter answers NULL both for a name it refuses and for a
    /// temp file it cannot make (constant-memory mode writes each sheet's rows to one), so the
    /// name is checked first: a refused name is the writer's failure (1099), not the disk's.
    static func addSheet(_ workbook: UnsafeMutablePointer<lxw_workbook>, _ name: String) throws -> UnsafeMutablePointer<lxw_worksheet> {
        let e = workbook_validate_sheet_name(workbook, name)
        guard e == LXW_NO_ERROR else { throw failure(e, "The spreadsheet could not be created: the sheet name \"\(name)\" was refused") }
        guard let sheet = workbook_add_worksheet(workbook, name) else {
            throw ApiError(.storageUnavailable, "The spreadsheet could not be created: its temp file could not be made.")
        }
        return sheet
    }

    /// The error for libxlsxwriter's `e`: 1040 when the disk failed — the xlsx file or a temp
    /// file could not be made, written or read back (`LXW_ERROR_ZIP_FILE_OPERATION` is minizip's
    /// `ZIP_ERRNO`, a failed system call; `LXW_ERROR_ZIP_FILE_ADD`, a temp file read short) —
    /// and 1099 for everything else: a refused sheet name or value, memory, a zip parameter.
    static func failure(_ e: lxw_error, _ what: String) -> ApiError {
        let storage = [LXW_ERROR_CREATING_XLSX_FILE, LXW_ERROR_CREATING_TMPFILE, LXW_ERROR_READING_TMPFILE,
                       LXW_ERROR_ZIP_FILE_OPERATION, LXW_ERROR_ZIP_FILE_ADD].contains(e)
        return ApiError(storage ? .storageUnavailable : .internalError, "\(what): \(String(cString: lxw_strerror(e))).")
    }
}
