import Foundation
import Testing
import SurveyDomain
@testable import SurveyOperations
import SurveyExpressions

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
    /// An XForm as pyxform writes one: four expressions (a relevance, a constraint, a
    /// calculation, a required condition).
    static let checkedXForm = """
        <?xml version="1.0"?>
        <h:html xmlns="http://www.w3.org/2002/xforms" xmlns:h="http://www.w3.org/1999/xhtml" xmlns:jr="http://openrosa.org/javarosa" xmlns:odk="http://www.opendatakit.org/xforms" xmlns:orx="http://openrosa.org/xforms">
          <h:head>
            <h:title>Household</h:title>
            <model odk:xforms-version="1.0.0">
              <instance>
                <data id="household_once" version="2026120701">
                  <people/><adults/><share/><reason/>
                  <meta><instanceID/></meta>
                </data>
              </instance>
              <bind nodeset="/data/people" type="int" constraint=". &gt;= 1"/>
              <bind nodeset="/data/adults" type="int" relevant=" /data/people  &gt; 1"/>
              <bind nodeset="/data/share" type="string" calculate=" /data/adults  div  /data/people "/>
              <bind nodeset="/data/reason" type="string" required=" /data/people  &gt; 10"/>
              <bind nodeset="/data/meta/instanceID" type="string" readonly="true()" jr:preload="uid"/>
            </model>
          </h:head>
          <h:body>
            <input ref="/data/people"><label>People</label></input>
            <input ref="/data/adults"><label>Adults</label></input>
            <input ref="/data/reason"><label>Why so many?</label></input>
          </h:body>
        </h:html>
        """

    /// A publish reads its XForm once (the definition, its form id and version in one pass) and
    /// parses each expression once, the version's document included.
    @Test func aPublishReadsItsXFormOnceAndEachExpressionOnce() throws {
        let w = try World()
        let xform = Array(Self.checkedXForm.utf8)
        let tally = ParsingTally()
        let files = try ParsingTally.$current.withValue(tally) {
            let survey = try w.ops.surveys.create(orgId: w.org, by: w.admin.user) { .init(title: "Household", reviewRequired: false) }.written
            let upload = FormUpload(format: .xform, form: xform, contentType: "application/xml")
            let published = try w.ops.forms.published(upload, surveyId: survey.surveyId, limits: w.ops.limits, blobs: w.ops.blobs)
            let version = try w.ops.surveys.publish(orgId: w.org, surveyId: survey.surveyId, by: w.admin.user) { published }.written
            return try w.ops.versionFiles(of: version, published: published)
        }
        #expect(files.xform?.formId == "household_once" && files.xform?.version == "2026120701")
        #expect(tally.xmlDocuments == 1)
        #expect(tally.expressions == 4)
        // A JSON definition: parsed once, the XForm its document describes written from that parse.
        let definition: JSONValue = ["title": "Household", "questions": [
            ["id": "people", "type": "integer", "label": "People", "constraint": ". >= 1"],
            ["id": "adults", "type": "integer", "label": "Adults", "relevant": "${people} > 1"],
        ]]
        let json = ParsingTally()
        let written = try ParsingTally.$current.withValue(json) {
            let survey = try w.ops.surveys.create(orgId: w.org, by: w.admin.user) { .init(title: "Household JSON", reviewRequired: false) }.written
            let published = try w.ops.forms.published(upload(definition), surveyId: survey.surveyId, limits: w.ops.limits, blobs: w.ops.blobs)
            let version = try w.ops.surveys.publish(orgId: w.org, surveyId: survey.surveyId, by: w.admin.user) { published }.written
            return try w.ops.versionFiles(of: version, published: published)
        }
        #expect(written.xform != nil)
        #expect(json.expressions == 2)
    }
}
