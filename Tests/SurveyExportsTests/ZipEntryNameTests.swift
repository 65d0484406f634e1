import Testing
@testable import SurveyExports

/// Zip entry names that extract on Windows, macOS and Linux alike, and stay apart where case
/// does not count.
@Suite struct ZipEntryNameTests {
    @Test func charactersWindowsRefusesBecomeUnderscores() {
        #expect(ZipEntryName.safe("photo-cam:0001:a") == "photo-cam_0001_a")
        #expect(ZipEntryName.safe("a*b?c\"d<e>f|g\\h/i") == "a_b_c_d_e_f_g_h_i")
        #expect(ZipEntryName.safe("tab\there\u{1}\u{7F}") == "tab_here__")
        #expect(ZipEntryName.safe("fine-name_1.2") == "fine-name_1.2")
        #expect(ZipEntryName.safe("") == "_")
    }

    @Test func aTrailingDotOrSpaceIsReplaced() {
        #expect(ZipEntryName.safe("name.") == "name_")
        #expect(ZipEntryName.safe("name ") == "name_")
        #expect(ZipEntryName.safe("a..") == "a._")
    }

    @Test func reservedDeviceNamesGetAPrefix() {
        for name in ["CON", "con", "Nul", "aux.png", "COM1", "lpt9.tar.gz", "CONIN$", "com¹", "PRN .txt"] {
            #expect(ZipEntryName.safe(name) == "_" + name, "\(name)")
        }
        for name in ["CONSOLE", "com10", "photo-con", "nul_1", "lpt"] {
            #expect(ZipEntryName.safe(name) == name, "\(name)")
        }
    }

    @Test func namesThatDifferOnlyInCaseStayApart() {
        var taken: Set<String> = []
        #expect(ZipEntryName.unique(stem: "photo-a_b", ext: "png", taken: &taken) == "photo-a_b.png")
        #expect(ZipEntryName.unique(stem: "Photo-a_b", ext: "png", taken: &taken) == "Photo-a_b~2.png")
        #expect(ZipEntryName.unique(stem: "PHOTO-a_b", ext: "png", taken: &taken) == "PHOTO-a_b~3.png")
        #expect(ZipEntryName.unique(stem: "photo-a_b", ext: "jpg", taken: &taken) == "photo-a_b.jpg")
    }
}
