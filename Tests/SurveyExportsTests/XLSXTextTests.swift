import Testing
@testable import SurveyExports

/// A workbook cell's text: within 32,767 code points and 32,767 UTF-16 units, cut between
/// characters with a marker, and every character XML forbids escaped so that it reads back.
@Suite struct XLSXTextTests {
    static let limit = 32_767

    static func fits(_ s: String) -> Bool { s.unicodeScalars.count <= limit && s.utf16.count <= limit }

    @Test func textThatFitsAndNeedsNoEscapeIsUnchanged() {
        for s in ["", "well", "snake_case_x", "Nairobi – Kibera", String(repeating: "a", count: Self.limit), "_x12_", "_xZZZZ_"] {
            #expect(XLSXText.cell(s) == s)
        }
    }

    @Test func forbiddenCharactersAndEscapeLookalikesAreEscaped() {
        #expect(XLSXText.cell("a\u{0}b") == "a_x0000_b")
        #expect(XLSXText.cell("\u{FFFE}\u{FFFF}") == "_xFFFE__xFFFF_")
        #expect(XLSXText.cell("_x0041_") == "_x005F_x0041_")
        #expect(XLSXText.cell("_xbeef_ and _x00") == "_x005F_xbeef_ and _x00")
        // Left to libxlsxwriter, which escapes them itself.
        #expect(XLSXText.cell("a\u{1}\r\t\n") == "a\u{1}\r\t\n")
    }

    @Test func oneCodePointOverIsCutWithAMarker() {
        let cut = XLSXText.cell(String(repeating: "a", count: Self.limit + 1))
        #expect(Self.fits(cut) && cut.hasSuffix("… [cut: 32768 characters in all; the CSV has the whole text]"))
        #expect(cut.unicodeScalars.count > Self.limit - 100)
    }

    @Test func excelsUTF16MeasureCutsTooAndNeverSplitsACodePoint() {
        let emoji = String(repeating: "😀", count: Self.limit / 2 + 1)  // within code points, over in UTF-16 units
        let cut = XLSXText.cell(emoji)
        #expect(Self.fits(cut) && cut.hasSuffix("characters in all; the CSV has the whole text]"))
        #expect(cut.hasPrefix(String(repeating: "😀", count: 16_000)))
    }

    @Test func escapesAreNeverCutInHalf() {
        let cut = XLSXText.cell(String(repeating: "\u{FFFE}", count: 5_000))  // 35,000 code points once escaped
        let marker = "… [cut: 5000 characters in all; the CSV has the whole text]"
        #expect(Self.fits(cut) && cut.hasSuffix(marker))
        let kept = String(cut.unicodeScalars.dropLast(marker.unicodeScalars.count))
        #expect(kept.unicodeScalars.count % 7 == 0 && kept.hasSuffix("_xFFFE_"))
    }

    @Test func aCutFallsBetweenCharactersUnlessOneIsHuge() {
        let accented = XLSXText.cell(String(repeating: "e\u{301}", count: 20_000))
        let kept = accented.prefix { $0 == "e\u{301}" }
        #expect(Self.fits(accented) && kept.unicodeScalars.count > 32_000 && kept.unicodeScalars.count % 2 == 0)
        // One character of 40,001 code points: split between them, not dropped.
        let stacked = XLSXText.cell("a" + String(repeating: "\u{301}", count: 40_000))
        #expect(Self.fits(stacked) && stacked.unicodeScalars.count > 32_000 && stacked.unicodeScalars.starts(with: "a\u{301}\u{301}".unicodeScalars))
    }
}
