import SurveyForms
import Testing
@testable import SurveyXForm

/// An XForm that names files (pyxform's of an XLSForm with `select_one_from_file`,
/// `select_multiple_from_file`, `pulldata()` and `media::image`) read into a definition that
/// names them, then published with them.
@Suite struct AttachmentReadingTests {
    @Test func filesAreNamedWhereTheFormUsesThem() throws {
        let json = try XFormReader.unresolvedDefinition(from: try Fixture.bytes("village_visit"))
        #expect(json.node("village")?["choiceList"] == "villages.csv")
        #expect(json.node("village")?["choiceFilter"] == "district=${district}")
        #expect(json.node("crops")?["choiceList"] == "crops.csv")
        #expect(json.node("population")?["calculation"] == "pulldata('villages', 'population', 'name', ${village})")
        // The one translation pyxform writes for a label's media (its `default`) reads as plain text.
        #expect(json.node("households")?["label"] == "Households visited")
        #expect(json.node("households")?["media"] == ["image": "map.png"])
        #expect(json["defaultLanguage"] == nil)
        #expect(FormAttachments.named(in: json).map(\.fileName) == ["villages.csv", "map.png", "crops.csv"])
    }

    @Test func mediaInALabelIsRead() throws {
        let json = try XFormReader.definition(from: try Fixture.bytes("media_label"))
        #expect(json.node("name")?["label"] == "Name")
        #expect(json.node("name")?["media"] == ["image": "face.png"])
    }
}
