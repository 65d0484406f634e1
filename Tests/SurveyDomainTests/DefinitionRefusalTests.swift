import Testing
@testable import SurveyDomain
@testable import SurveyForms

/// Definitions refused at publish for their shape, each with the sentence and path a form
/// author reads, and answers that are not an object.
@Suite struct DefinitionRefusalTests {
    private func errors(_ json: String) throws -> [FieldError] {
        do {
            _ = try SurveyDefinition.parse(try JSONParser.parse(json))
            return []
        } catch let e as ValidationErrors {
            return e.errors
        }
    }

    private func fe(_ path: String, _ message: String) -> FieldError { FieldError(path: path, message: message) }

    @Test(arguments: [#"["yes", "no"]"#, #""yesno""#, "3", "true"])
    func choiceListsThatAreNotAnObjectAreRefused(_ lists: String) throws {
        #expect(try errors(#"""
        {"title": "t", "choiceLists": \#(lists), "questions": [{"id": "a", "type": "text", "label": "A"}]}
        """#) == [fe("definition.choiceLists", "must be an object of choice lists")])
    }

    @Test func choiceListsThatAreNullAreNoLists() throws {
        #expect(try errors(#"{"title": "t", "choiceLists": null, "questions": [{"id": "a", "type": "text", "label": "A"}]}"#) == [])
    }

    @Test func aDefaultLanguageThatNamesNoLabelLanguageIsRefused() throws {
        #expect(try errors(#"""
        {"title": "t", "defaultLanguage": "German (de)", "questions": [
          {"id": "a", "type": "text", "label": {"English (en)": "Name", "French (fr)": "Nom"}}]}
        """#) == [fe("definition.defaultLanguage", "names no language of the labels (English (en), French (fr))")])
        // One of the labels' languages is accepted, and a question's label is its text there.
        let d = try SurveyDefinition.parse(try JSONParser.parse(#"""
        {"title": "t", "defaultLanguage": "French (fr)", "questions": [
          {"id": "a", "type": "text", "label": {"English (en)": "Name", "French (fr)": "Nom"}}]}
        """#))
        #expect(d.question(id: "a")?.label == "Nom")
        // Without labels in languages there is nothing to name: a plain-text form takes any default.
        #expect(try errors(#"{"title": "t", "defaultLanguage": "German (de)", "questions": [{"id": "a", "type": "text", "label": "A"}]}"#) == [])
    }

    @Test func aGroupOrRepeatWithAnInvalidIdIsRefused() throws {
        let rule = "must be a letter followed by up to 63 letters, digits or underscores"
        #expect(try errors(#"""
        {"title": "t", "questions": [
          {"id": "1st", "type": "group", "label": "G", "children": [{"id": "a", "type": "text", "label": "A"}]},
          {"id": "members-list", "type": "repeat", "label": "R", "children": [{"id": "b", "type": "text", "label": "B"}]},
          {"id": "_note", "type": "note", "label": "N"}]}
        """#) == [
            fe("definition.questions[0].id", rule),
            fe("definition.questions[1].id", rule),
            fe("definition.questions[2].id", rule),
        ])
    }

    @Test(arguments: ["group", "repeat"])
    func aGroupOrRepeatWithNoChildrenIsRefused(_ type: String) throws {
        #expect(try errors(#"{"title": "t", "questions": [{"id": "g", "type": "\#(type)", "label": "G"}]}"#)
                == [fe("definition.questions[0].children", "required")])
        for children in ["[]", "{}", #""a""#] {
            #expect(try errors(#"{"title": "t", "questions": [{"id": "g", "type": "\#(type)", "label": "G", "children": \#(children)}]}"#)
                    == [fe("definition.questions[0].children", "must be a non-empty array of nodes")])
        }
        // A child that is unusable makes its group unusable, with the child's own error.
        #expect(try errors(#"{"title": "t", "questions": [{"id": "g", "type": "\#(type)", "label": "G", "children": [7]}]}"#)
                == [fe("definition.questions[0].children[0]", "must be an object")])
    }

    @Test func aNoteNeedsItsLabel() throws {
        #expect(try errors(#"{"title": "t", "questions": [{"id": "n", "type": "note"}]}"#)
                == [fe("definition.questions[0].label", "required")])
    }

    @Test func repeatCountsAreBounded() throws {
        #expect(try errors(#"""
        {"title": "t", "questions": [{"id": "r", "type": "repeat", "label": "R", "minCount": 3, "maxCount": 2,
          "children": [{"id": "a", "type": "text", "label": "A"}]}]}
        """#) == [fe("definition.questions[0].maxCount", "must not be less than minCount")])
        #expect(try errors(#"""
        {"title": "t", "questions": [{"id": "r", "type": "repeat", "label": "R", "minCount": -1, "maxCount": "2",
          "children": [{"id": "a", "type": "text", "label": "A"}]}]}
        """#) == [fe("definition.questions[0].minCount", "must be an integer from 0 to 1000000"),
                  fe("definition.questions[0].maxCount", "must be an integer from 0 to 1000000")])
    }

    @Test(arguments: ["note", "text", "group"])
    func mediaThatIsNotFilesByFormIsRefused(_ type: String) throws {
        let children = type == "group" ? #", "children": [{"id": "a", "type": "text", "label": "A"}]"# : ""
        func refusal(_ media: String) throws -> [FieldError] {
            try errors(#"{"title": "t", "questions": [{"id": "n", "type": "\#(type)", "label": "N", "media": \#(media)\#(children)}]}"#)
        }
        let shape = "must be an object naming a file for image, big-image, audio or video"
        for media in ["[null, null]", #""cow.jpg""#, "3", "true"] {
            #expect(try refusal(media) == [fe("definition.questions[0].media", shape)])
        }
        #expect(try refusal(#"{"picture": "cow.jpg"}"#) == [fe("definition.questions[0].media.picture", "is not image, big-image, audio or video")])
        #expect(try refusal(#"{"image": ""}"#) == [fe("definition.questions[0].media.image", "must be a file name of 1 to 255 characters")])
        #expect(try refusal(#"{"audio": {"English (en)": null}}"#)
                == [fe("definition.questions[0].media.audio.English (en)", "must be a file name of 1 to 255 characters")])
        // A file by form, or files by language, or no media at all, are accepted.
        #expect(try refusal(#"{"image": "cow.jpg", "audio": {"English (en)": "cow-en.mp3"}}"#) == [])
        #expect(try refusal("null") == [])
    }

    @Test func aChoiceWithMediaThatIsNotFilesByFormIsRefused() throws {
        #expect(try errors(#"""
        {"title": "t", "questions": [{"id": "s", "type": "select_one", "label": "S",
          "choices": [{"name": "cow", "media": {"image": "cow.jpg"}}, {"name": "goat", "media": [null]}]}]}
        """#) == [fe("definition.questions[0].choices[1].media", "must be an object naming a file for image, big-image, audio or video")])
    }

    /// Answers are an object keyed by question id, for flat and structured definitions alike.
    @Test(arguments: ["[]", #""answers""#, "1", "null", #"[{"a": "x"}]"#])
    func answersThatAreNotAnObjectAreRefused(_ answers: String) throws {
        let flat = try SurveyDefinition.parse(try JSONParser.parse(#"{"title": "t", "questions": [{"id": "a", "type": "text", "label": "A"}]}"#))
        let structured = try SurveyDefinition.parse(try JSONParser.parse(#"""
        {"title": "t", "questions": [{"id": "g", "type": "group", "label": "G", "children": [{"id": "a", "type": "text", "label": "A"}]}]}
        """#))
        #expect(flat.structure == nil)
        #expect(structured.structure != nil)
        for d in [flat, structured] {
            let check = d.validate(answers: try JSONParser.parse(answers))
            #expect(check.errors == [fe("answers", "must be an object")])
            #expect(check.fileAnswers.isEmpty)
        }
    }
}
