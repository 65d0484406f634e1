import Foundation
import Testing
import SurveyDomain
@testable import SurveyOperations

/// A form read for publication by any door (`FormSources.published`), in process: a form that
/// names no file reads as it always did, one that names files reads them into its definition
/// and stages them, and a refusal stages nothing.
@Suite struct FormUploadTests {
    func upload(_ definition: JSONValue, files: [FormUpload.SentFile] = []) -> FormUpload {
        FormUpload(format: .json, form: CanonicalJSON.encode(["definition": definition]), contentType: "application/json", files: files)
    }

    static func file(_ name: String, _ bytes: [UInt8]) -> FormUpload.SentFile {
        FormUpload.SentFile(fileName: name, declaredType: "application/octet-stream", size: bytes.count) { body in
            try bytes.withUnsafeBytes { try body($0) }
        }
    }

    @Test func aFormNamingNoFileReadsAsBefore() throws {
        let w = try World()
        for definition: JSONValue in [["title": "Meta", "questions": [["id": "meta", "type": "text", "label": "Meta"]]], World.definition] {
            let published = try w.ops.forms.published(upload(definition), surveyId: "srv_form_upload_test", limits: w.ops.limits, blobs: w.ops.blobs)
            #expect(published.definition == definition)
            #expect(published.attachments.isEmpty)
        }
    }

    @Test func namedFilesAreReadAndStagedAndARefusalStagesNothing() throws {
        let w = try World()
        let definition: JSONValue = ["title": "Visit", "questions": [["id": "v", "type": "select_one", "label": "V", "choiceList": "villages.csv"]]]
        let csv = Array("name,label\nv1,Hill\n".utf8)
        let published = try w.ops.forms.published(upload(definition, files: [Self.file("villages.csv", csv)]), surveyId: "srv_form_upload_test", limits: w.ops.limits, blobs: w.ops.blobs)
        #expect(published.definition["choiceLists"]?["villages.csv"] == [["name": "v1", "label": "Hill"]])
        let staged = try #require(published.attachments.first)
        #expect(staged.sha256 == Digest.sha256Hex(csv) && staged.md5 == Digest.md5Hex(csv) && staged.contentType == "text/csv")
        #expect(FileManager.default.contents(atPath: staged.tempPath) == Data(csv))
        unlink(staged.tempPath)
        let tmp = w.dir + "/tmp"
        let before = (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []
        #expect(throws: ApiError.self) {
            try w.ops.forms.published(upload(definition, files: [Self.file("villages.csv", csv), Self.file("extra.png", [1, 2, 3])]), surveyId: "srv_form_upload_test",
                                      limits: w.ops.limits, blobs: w.ops.blobs)
        }
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []) == before)
    }
}
