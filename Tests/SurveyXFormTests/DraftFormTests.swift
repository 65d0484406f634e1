import SurveyForms
import Testing
@testable import SurveyXForm

/// What ODK Central's drafts need of a form: a draft that names a file not attached yet reads
/// (its list without choices) and says which file it waits for, and an XForm's version is set
/// through libxml2 with the rest of the form read the same.
@Suite struct DraftFormTests {
    static let villages = Array("name,label\nv1,North\nv2,South\n".utf8)

    @Test func aDraftLackingAFileReadsAndNamesTheFile() throws {
        let unresolved = try XFormReader.unresolvedDefinition(from: try Fixture.bytes("csv_choices"))
        // A version is refused without the file; a draft lists it as pending.
        #expect(throws: ValidationErrors.self) { try FormAttachments.resolve(unresolved, sent: []) { _ in [] } }
        let draft = try FormAttachments.resolve(unresolved, sent: [], pendingAllowed: true) { _ in [] }
        #expect(FormAttachments.pendingFiles(of: draft) == ["villages.csv"])
        let parsed = try SurveyDefinition.parse(draft)
        #expect(parsed.formId == "csv_choices")
        // Attached, the list has its choices and nothing is pending.
        let complete = try FormAttachments.resolve(unresolved, sent: ["villages.csv"], pendingAllowed: true) { _ in Self.villages }
        #expect(FormAttachments.pendingFiles(of: complete).isEmpty)
        #expect(complete["choiceLists"]?["villages.csv"]?.arrayValue?.count == 2)
        // A definition sent with the key claims nothing: only the server writes it.
        guard case .object(var claimed) = complete else { throw XFormRefusal("not an object") }
        claimed[FormAttachments.pendingFilesKey] = ["other.csv"]
        let cleared = try FormAttachments.resolve(.object(claimed), sent: ["villages.csv"]) { _ in Self.villages }
        #expect(FormAttachments.pendingFiles(of: cleared).isEmpty)
    }

    @Test func aVersionIsSetOnThePrimaryInstanceOnly() throws {
        let xform = try Fixture.bytes("simple")
        let set = try XFormVersionRewriter.setting(version: "2024-06 \"b\" & <c>", in: xform)
        #expect(try XFormReader.identity(from: set).version == "2024-06 \"b\" & <c>")
        #expect(try XFormReader.identity(from: set).formId == "simple")
        #expect(try XFormReader.unresolvedDefinition(from: set) == XFormReader.unresolvedDefinition(from: xform))
        // Set again, it replaces the attribute rather than adding one.
        let again = try XFormVersionRewriter.setting(version: "3", in: set)
        #expect(try XFormReader.identity(from: again).version == "3")
        #expect(String(decoding: again, as: UTF8.self).components(separatedBy: "version=\"3\"").count == 2)
    }

    @Test func aVersionThatCannotBeSetIsRefused() throws {
        let xform = try Fixture.bytes("simple")
        #expect(throws: XFormRefusal.self) { try XFormVersionRewriter.setting(version: "", in: xform) }
        #expect(throws: XFormRefusal.self) { try XFormVersionRewriter.setting(version: "a\u{1}b", in: xform) }
        #expect(throws: XFormRefusal.self) { try XFormVersionRewriter.setting(version: String(repeating: "v", count: 256), in: xform) }
        // Read under every XForm's limits first: a DOCTYPE is never expanded.
        let doctype = Array("<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e \"y\">]><h:html xmlns:h=\"http://www.w3.org/1999/xhtml\"/>".utf8)
        #expect(throws: XFormRefusal.self) { try XFormVersionRewriter.setting(version: "2", in: doctype) }
        #expect(throws: XFormRefusal.self) { try XFormVersionRewriter.setting(version: "2", in: Array("<h:html xmlns:h=\"http://www.w3.org/1999/xhtml\"/>".utf8)) }
    }
}
