import CXLSXWriter
import Foundation
import Testing
import SurveyDomain
@testable import SurveyExports

/// The names of repeat tables: a sheet name Excel and libxlsxwriter accept and a zip entry name
/// that survives a case-insensitive file system, distinct from each other and from the
/// responses' own table; and which failures of the workbook writer are the disk's.
@Suite struct RepeatTableNamesTests {
    static func isValidSheetName(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.count <= 31 && name.utf16.count <= 31
            && !name.contains(where: { "[]:*?/\\".contains($0) }) && name.first != "'" && name.last != "'"
    }

    static func caseDistinct(_ names: [String]) -> Bool { Set(names.map { $0.lowercased() }).count == names.count }

    @Test func idsThatAreValidFreeSheetNamesAreKept() {
        #expect(RepeatTableNames.sheets([]) == [])
        #expect(RepeatTableNames.sheets(["people", "visits", "x"]) == ["people", "visits", "x"])
        let exactly31 = String(repeating: "a", count: 31)
        #expect(RepeatTableNames.sheets([exactly31]) == [exactly31])
    }

    @Test func longIdsAreCutTo31AndToldApartWithin31() {
        let ids = ["household_members_roster_section_a", "household_members_roster_section_b", "household_members_roster_section_c"]
        let names = RepeatTableNames.sheets(ids)
        #expect(names == ["household_members_roster_sectio", "household_members_roster_sect~2", "household_members_roster_sect~3"])
        #expect(names.allSatisfy(Self.isValidSheetName))
        // A 64-character id, the longest there is.
        let longest = "a" + String(repeating: "b", count: 63)
        #expect(RepeatTableNames.sheets([longest]) == [String(longest.prefix(31))])
    }

    @Test func anIdThatFitsKeepsItsNameEvenAfterALongerIdCutToTheSame() {
        // The long one comes first, yet the one whose id is a sheet name as it is keeps it.
        let cut = "household_members_roster_sectio"
        #expect(RepeatTableNames.sheets([cut + "n_a", cut]) == ["household_members_roster_sect~2", cut])
    }

    @Test func manyClashesStayWithin31() {
        let ids = (0..<12).map { "household_members_roster_section_\($0)" }
        let names = RepeatTableNames.sheets(ids)
        #expect(names.allSatisfy(Self.isValidSheetName) && Self.caseDistinct(names))
        #expect(names.last == "household_members_roster_sec~12")
    }

    @Test func namesThatDifferOnlyInCaseAreToldApart() {
        #expect(RepeatTableNames.sheets(["members", "Members", "MEMBERS"]) == ["members", "Members~2", "MEMBERS~3"])
        #expect(RepeatTableNames.zipEntries(["members", "Members", "MEMBERS"])
                == ["responses-members.csv", "responses-Members~2.csv", "responses-MEMBERS~3.csv"])
    }

    @Test func theResponsesSheetAndExcelsReservedNameAreNeverTaken() {
        #expect(RepeatTableNames.sheets(["responses"]) == ["responses~2"])
        #expect(RepeatTableNames.sheets(["Responses"]) == ["Responses~2"])
        #expect(RepeatTableNames.sheets(["responses", "repeat_responses"]) == ["responses~2", "repeat_responses"])
        #expect(RepeatTableNames.sheets(["responses", "responses_2"]) == ["responses~2", "responses_2"])
        #expect(RepeatTableNames.sheets(["History"]) == ["History~2"])
    }

    @Test func charactersExcelRefusesBecomeUnderscores() {
        // Not possible in an id today; the rule holds for any name all the same.
        #expect(RepeatTableNames.sheets(["a[b]c:d*e?f/g\\h"]) == ["a_b_c_d_e_f_g_h"])
        #expect(RepeatTableNames.sheets(["'quoted'", "it's"]) == ["_quoted_", "it_s"])
        #expect(RepeatTableNames.sheets([""]) == ["_"])
        // Excel counts UTF-16 units: 16 emoji are 32 of them.
        let emoji = RepeatTableNames.sheets([String(repeating: "😀", count: 16)])
        #expect(emoji == [String(repeating: "😀", count: 15)])
    }

    @Test func zipEntriesKeepTheirIdAndNeverMeetTheOtherEntries() {
        #expect(RepeatTableNames.zipEntries(["people", "visits"]) == ["responses-people.csv", "responses-visits.csv"])
        let long = "household_members_roster_section_a" + String(repeating: "x", count: 30)
        #expect(RepeatTableNames.zipEntries([long]) == ["responses-\(long).csv"])
        #expect(RepeatTableNames.zipEntries(["responses", "repeat_responses"]) == ["responses-responses.csv", "responses-repeat_responses.csv"])
    }

    /// Every name the rule gives is accepted by libxlsxwriter itself, beside the `responses` sheet.
    @Test func libxlsxwriterAcceptsEveryName() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("repeat-names-" + UUID().uuidString).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let workbook = try #require(Self.workbook(dir + "/names.xlsx", tempDirectory: dir))
        defer { workbook_close(workbook) }
        _ = try XLSXWorkbook.addSheet(workbook, "responses")
        let ids = ["household_members_roster_section_a", "household_members_roster_section_b", "members", "Members",
                   "responses", "Responses", "repeat_responses", "History"]
        for name in RepeatTableNames.sheets(ids) { _ = try XLSXWorkbook.addSheet(workbook, name) }
    }

    static func workbook(_ path: String, tempDirectory: String) -> UnsafeMutablePointer<lxw_workbook>? {
        var options = lxw_workbook_options(constant_memory: 1, tmpdir: nil, use_zip64: 1)
        return tempDirectory.withCString { dir in
            options.tmpdir = UnsafeMutablePointer(mutating: dir)
            return workbook_new_opt(path, &options)
        }
    }

    /// A sheet name the writer refuses is its failure (500 / 1099), not the disk's (503 / 1040).
    /// (A temp directory that cannot be written stays 1040: ExportEdgeCaseTests.)
    @Test func aRefusedSheetNameIsTheWritersFailureNotTheDisks() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("repeat-names-" + UUID().uuidString).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let workbook = try #require(Self.workbook(dir + "/refused.xlsx", tempDirectory: dir))
        defer { workbook_close(workbook) }
        _ = try XLSXWorkbook.addSheet(workbook, "responses")
        for refused in ["Responses", String(repeating: "a", count: 32), "a/b", "'quoted'"] {
            let error = #expect(throws: ApiError.self) { _ = try XLSXWorkbook.addSheet(workbook, refused) }
            #expect(error?.code == .internalError, "\(refused)")
        }
    }

    @Test func onlyTheDisksFailuresAreStorageOutages() {
        for e in [LXW_ERROR_CREATING_XLSX_FILE, LXW_ERROR_CREATING_TMPFILE, LXW_ERROR_READING_TMPFILE, LXW_ERROR_ZIP_FILE_OPERATION,
                  LXW_ERROR_ZIP_FILE_ADD] {
            #expect(XLSXWorkbook.failure(e, "x").code == .storageUnavailable, "\(e)")
        }
        for e in [LXW_ERROR_MEMORY_MALLOC_FAILED, LXW_ERROR_ZIP_PARAMETER_ERROR, LXW_ERROR_ZIP_BAD_ZIP_FILE, LXW_ERROR_ZIP_INTERNAL_ERROR,
                  LXW_ERROR_ZIP_CLOSE, LXW_ERROR_SHEETNAME_ALREADY_USED, LXW_ERROR_SHEETNAME_LENGTH_EXCEEDED,
                  LXW_ERROR_INVALID_SHEETNAME_CHARACTER, LXW_ERROR_255_STRING_LENGTH_EXCEEDED, LXW_ERROR_MAX_STRING_LENGTH_EXCEEDED] {
            #expect(XLSXWorkbook.failure(e, "x").code == .internalError, "\(e)")
        }
    }
}
