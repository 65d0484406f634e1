import Testing
@testable import SurveyDomain
@testable import SurveyForms
import SurveyExpressions

private func definition(_ json: String) throws -> SurveyDefinition {
    try SurveyDefinition.parse(try JSONParser.parse(json))
}

private func definitionErrors(_ json: String) throws -> [FieldError] {
    do {
        _ = try definition(json)
        return []
    } catch let e as ValidationErrors {
        return e.errors
    }
}

private func answerErrors(_ d: SurveyDefinition, _ answers: String) throws -> [FieldError] {
    d.validate(answers: try JSONParser.parse(answers)).errors
}

private func fe(_ path: String, _ message: String) -> FieldError { FieldError(path: path, message: message) }

/// Version-2 definitions (groups, repeats, notes, languages, logic) and the answers they take,
/// checked in the contract's order with one error per answer at its path.
@Suite struct FormDefinitionTests {
    /// A household roster: two languages, a relevant group, a repeat with a nested repeat,
    /// constraints, a choice list with a filter column, a calculate and a note.
    static let household = #"""
    {"title": "Household", "defaultLanguage": "English (en)",
     "choiceLists": {"yesno": [{"name": "yes", "label": {"English (en)": "Yes", "Français (fr)": "Oui"}},
                               {"name": "no", "label": {"English (en)": "No", "Français (fr)": "Non"}}],
                     "districts": [{"name": "d1", "label": "North", "region": "n"}, {"name": "d2", "label": "South", "region": "s"}]},
     "questions": [
      {"id": "intro", "type": "note", "label": {"English (en)": "Welcome", "Français (fr)": "Bienvenue"}},
      {"id": "region", "type": "select_one", "label": "Region", "choices": ["n", "s"], "required": true},
      {"id": "district", "type": "select_one", "label": "District", "choiceList": "districts", "choiceFilter": "region = ${region}"},
      {"id": "consent", "type": "select_one", "label": {"English (en)": "Consent?", "Français (fr)": "Consentement ?"}, "choiceList": "yesno", "required": true},
      {"id": "hh", "type": "group", "label": "Household", "relevant": "${consent} = 'yes'", "children": [
        {"id": "size", "type": "integer", "label": "How many people?", "required": true, "constraint": ". >= 1 and . <= 30",
         "constraintMessage": {"English (en)": "Between 1 and 30", "Français (fr)": "Entre 1 et 30"}},
        {"id": "members", "type": "repeat", "label": "Member", "repeatCount": "${size}", "maxCount": 30, "children": [
          {"id": "name", "type": "text", "label": "Name", "required": true},
          {"id": "age", "type": "integer", "label": "Age", "constraint": ". >= 0 and . < 130"},
          {"id": "school", "type": "select_one", "label": "In school?", "choiceList": "yesno", "relevant": "${age} >= 5 and ${age} <= 18"},
          {"id": "phones", "type": "repeat", "label": "Phone", "maxCount": 3, "children": [
            {"id": "number", "type": "barcode", "label": "Number", "constraint": "regex(., '^[0-9]{6,12}$')"}
          ]}
        ]},
        {"id": "adults", "type": "calculate", "label": "Adults", "calculation": "count(${age})"},
        {"id": "total_age", "type": "decimal", "label": "Ages check", "relevant": "sum(${age}) > 0", "constraint": ". = sum(${age})"}
      ]},
      {"id": "visited", "type": "date", "label": "Visit", "relevant": "${consent} = 'yes'", "constraint": ". <= today()"}
    ]}
    """#

    @Test func aRosterFormParsesWithItsTreeLanguagesAndColumns() throws {
        let d = try definition(Self.household)
        #expect(d.nodes.map(\.id) == ["intro", "region", "district", "consent", "hh", "visited"])
        #expect(d.languages == ["English (en)", "Français (fr)"])
        #expect(d.defaultLanguage == "English (en)")
        // The response's columns: questions outside repeats, groups flattened, notes left out.
        #expect(d.questions.map(\.id) == ["region", "district", "consent", "size", "adults", "total_age", "visited"])
        #expect(d.question(id: "consent")?.label == "Consent?")
        #expect(d.question(id: "district")?.choices == ["d1", "d2"])
        #expect(d.question(id: "district")?.options.first?.columns == ["region": "n"])
    }

    static let goodAnswers = #"""
    {"region": "n", "district": "d1", "consent": "yes", "size": 2,
     "members": [{"name": "Ama", "age": 34, "phones": [{"number": "0244123456"}]},
                 {"name": "Kofi", "age": 9, "school": "yes"}],
     "adults": 2, "total_age": 43, "visited": "2026-11-30"}
    """#

    @Test func aCompleteRosterIsAccepted() throws {
        let d = try definition(Self.household)
        #expect(try answerErrors(d, Self.goodAnswers) == [])
    }

    @Test func everyFailureIsListedAtItsPathInDocumentOrder() throws {
        let d = try definition(Self.household)
        let answers = #"""
        {"region": "n", "district": "d2", "consent": "yes", "size": 3,
         "members": [{"name": "Ama", "age": 34, "school": "no", "phones": [{"number": "12ab"}]},
                     {"age": 140}],
         "adults": 2, "total_age": 5, "extra": 1}
        """#
        #expect(try answerErrors(d, answers) == [
            fe("answers.district", "\"d2\" is not offered here (its choice filter is false)"),
            fe("answers.members", "must have at least 3 instances (its repeat count), has 2"),
            fe("answers.members[0].school", "not relevant"),
            fe("answers.members[0].phones[0].number", "does not meet the constraint regex(., '^[0-9]{6,12}$')"),
            fe("answers.members[1].name", "required"),
            fe("answers.members[1].age", "does not meet the constraint . >= 0 and . < 130"),
            fe("answers.total_age", "does not meet the constraint . = sum(${age})"),
            fe("answers.extra", "unknown question"),
        ])
    }

    @Test func aNonRelevantGroupRefusesItsAnswersAndExcusesItsRequiredOnes() throws {
        let d = try definition(Self.household)
        // Consent refused: the household group is not relevant, so `size` is not required…
        #expect(try answerErrors(d, #"{"region": "s", "consent": "no"}"#) == [])
        // …and an answer inside it is refused, as is the repeat's.
        #expect(try answerErrors(d, #"{"region": "s", "consent": "no", "size": 2, "members": [{"name": "x"}]}"#) == [
            fe("answers.size", "not relevant"),
            fe("answers.members", "not relevant"),
        ])
    }

    /// What a page laying out a response leaves out: each non-relevant node at its path, inside
    /// repeat instances too, and what sits inside a non-relevant group.
    @Test func theNonRelevantNodesOfAResponseAreNamedByPath() throws {
        let d = try definition(Self.household)
        #expect(d.notRelevant(in: try JSONParser.parse(Self.goodAnswers)) == ["answers.members[0].school"])
        #expect(d.notRelevant(in: try JSONParser.parse(#"{"region": "s", "consent": "no"}"#))
                == ["answers.hh", "answers.size", "answers.members", "answers.adults", "answers.total_age", "answers.visited"])
        // A version-1 form has no logic: nothing is left out.
        let flat = try definition(#"{"title": "t", "questions": [{"id": "a", "type": "text", "label": "A"}]}"#)
        #expect(flat.notRelevant(in: try JSONParser.parse(#"{}"#)) == [])
    }

    @Test func theConstraintMessageIsShownInTheDefaultLanguage() throws {
        let d = try definition(Self.household)
        #expect(try answerErrors(d, #"{"region": "n", "consent": "yes", "size": 0, "members": []}"#) == [
            fe("answers.size", "Between 1 and 30"),
        ])
        // Not merely the first language listed: the default one.
        let french = try definition(Self.household.replacingOccurrences(of: #""defaultLanguage": "English (en)""#, with: #""defaultLanguage": "Français (fr)""#))
        #expect(try answerErrors(french, #"{"region": "n", "consent": "yes", "size": 0, "members": []}"#) == [
            fe("answers.size", "Entre 1 et 30"),
        ])
    }

    /// `today()` is the device's, maybe days before: the server enforces no constraint that reads it.
    /// Cascading selects may name a choice twice when its columns tell the two apart (pyxform's
    /// `allow_choice_duplicates`): an answer is offered when one of its choices passes the filter.
    @Test func aChoiceNamedTwiceIsToldApartByItsColumns() throws {
        let d = try definition(#"""
        {"title": "t", "choiceLists": {
           "district": [{"name": "north", "label": "North"}, {"name": "south", "label": "South"}],
           "village": [{"name": "kati", "label": "Kati", "district": "north"}, {"name": "mji", "label": "Mji", "district": "north"},
                       {"name": "mji", "label": "Mji", "district": "south"}, {"name": "pwani", "label": "Pwani", "district": "south"}]},
         "questions": [
          {"id": "district", "type": "select_one", "label": "District", "choiceList": "district"},
          {"id": "village", "type": "select_one", "label": "Village", "choiceList": "village", "choiceFilter": "district = ${district}"}]}
        """#)
        #expect(try answerErrors(d, #"{"district": "north", "village": "mji"}"#) == [])
        #expect(try answerErrors(d, #"{"district": "south", "village": "mji"}"#) == [])
        #expect(try answerErrors(d, #"{"district": "south", "village": "kati"}"#)
                == [FieldError(path: "answers.village", message: "\"kati\" is not offered here (its choice filter is false)")])
        // The same name with the same columns is still a duplicate.
        #expect(try definitionErrors(#"""
        {"title": "t", "questions": [{"id": "v", "type": "select_one", "label": "V",
           "choices": [{"name": "a", "label": "A", "d": "1"}, {"name": "a", "label": "A again", "d": "1"}]}]}
        """#) == [FieldError(path: "definition.questions[0].choices[1].name", message: "duplicate choice")])
    }

    @Test func logicThatDependsOnTheMomentIsNotEnforced() throws {
        let d = try definition(Self.household)
        var answers = try JSONParser.parse(Self.goodAnswers).objectValue ?? [:]
        answers["visited"] = .string("2999-01-01")
        #expect(d.validate(answers: .object(answers)).errors == [])
        let moment = try definition(#"""
        {"title": "t", "questions": [
          {"id": "a", "type": "text", "label": "A", "relevant": "today() > date('2020-01-01')"},
          {"id": "b", "type": "text", "label": "B", "required": "now() != ''"}]}
        """#)
        // Relevance that reads the moment allows the answer present or absent; such a required is not enforced.
        #expect(try answerErrors(moment, #"{}"#) == [])
        #expect(try answerErrors(moment, #"{"a": "x"}"#) == [])
    }

    @Test func requiredAsAnExpressionAndRepeatBounds() throws {
        let d = try definition(#"""
        {"title": "t", "questions": [
          {"id": "has_kids", "type": "select_one", "label": "Kids?", "choices": ["yes", "no"]},
          {"id": "kids", "type": "integer", "label": "How many", "required": "${has_kids} = 'yes'"},
          {"id": "visits", "type": "repeat", "label": "Visit", "minCount": 1, "maxCount": 2, "children": [
            {"id": "when", "type": "time", "label": "When"}, {"id": "at", "type": "datetime", "label": "At"}]}]}
        """#)
        #expect(try answerErrors(d, #"{"has_kids": "yes", "visits": [{"when": "09:30"}]}"#) == [fe("answers.kids", "required")])
        #expect(try answerErrors(d, #"{"has_kids": "no", "visits": []}"#) == [fe("answers.visits", "needs at least 1 instance, has 0")])
        #expect(try answerErrors(d, #"{"visits": [{}, {}, {}]}"#) == [fe("answers.visits", "takes at most 2 instances, has 3")])
        #expect(try answerErrors(d, #"{"visits": [{"when": "25:00", "at": "yesterday"}]}"#) == [
            fe("answers.visits[0].when", "must be a time HH:MM[:SS[.fff]] with an optional offset"),
            fe("answers.visits[0].at", "must be a date and time (RFC 3339)"),
        ])
        #expect(try answerErrors(d, #"{"visits": [{"when": "09:30:15.250+02:00", "at": "2026-12-02T10:00:00Z"}]}"#) == [])
        #expect(try answerErrors(d, #"{"visits": {"when": "09:30"}}"#) == [fe("answers.visits", "must be a list of objects, one per instance")])
    }

    @Test func linesShapesAndAltitude() throws {
        let d = try definition(#"""
        {"title": "t", "questions": [{"id": "route", "type": "geotrace", "label": "Route"},
          {"id": "field", "type": "geoshape", "label": "Field"}, {"id": "here", "type": "geopoint", "label": "Here"}]}
        """#)
        #expect(try answerErrors(d, #"{"here": {"lat": 5.6, "lon": -0.2, "altitude": 61.5, "accuracy": 4}}"#) == [])
        #expect(try answerErrors(d, #"{"route": [{"lat": 1, "lon": 1}]}"#) == [fe("answers.route", "must have at least 2 points")])
        #expect(try answerErrors(d, #"{"field": [{"lat": 0, "lon": 0}, {"lat": 0, "lon": 1}, {"lat": 1, "lon": 1}, {"lat": 1, "lon": 0}]}"#)
                == [fe("answers.field", "must end where it starts (a closed shape)")])
        #expect(try answerErrors(d, #"{"field": [{"lat": 0, "lon": 0}, {"lat": 0, "lon": 1}, {"lat": 1, "lon": 1}, {"lat": 0, "lon": 0}]}"#) == [])
    }

    @Test func badLogicIsRefusedAtPublishWithItsPath() throws {
        #expect(try definitionErrors(#"""
        {"title": "t", "questions": [
          {"id": "a", "type": "integer", "label": "A", "relevant": "${nope} > 1"},
          {"id": "b", "type": "integer", "label": "B", "constraint": "frobnicate(.)"},
          {"id": "c", "type": "integer", "label": "C", "relevant": ". > 1"},
          {"id": "d", "type": "integer", "label": "D", "relevant": "age > 1"},
          {"id": "e", "type": "select_one", "label": "E", "choiceList": "missing"}]}
        """#) == [
            fe("definition.questions[1].constraint", try #require(Self.parseMessage("frobnicate(.)"))),
            fe("definition.questions[4].choiceList", "names no list of choiceLists"),
        ])
        // Once every expression parses, the names and `.` are checked against the tree.
        #expect(try definitionErrors(#"""
        {"title": "t", "questions": [
          {"id": "a", "type": "integer", "label": "A", "relevant": "${nope} > 1"},
          {"id": "c", "type": "integer", "label": "C", "relevant": ". > 1"},
          {"id": "d", "type": "integer", "label": "D", "relevant": "age > 1"}]}
        """#) == [
            fe("definition.questions[0].relevant", "names ${nope}, which is no node of this definition"),
            fe("definition.questions[1].relevant", "`.` is the answer itself, so it belongs in a constraint, not in relevant"),
            fe("definition.questions[2].relevant", "`age` is a bare name; refer to a question as ${age}"),
        ])
    }

    static func parseMessage(_ source: String) -> String? {
        do { _ = try SurveyExpressions.Expression(source); return nil } catch { return "does not parse: \(error.message)" }
    }

    @Test func aCycleThroughRelevanceOrCalculationIsRefused() throws {
        let errors = try definitionErrors(#"""
        {"title": "t", "questions": [
          {"id": "a", "type": "calculate", "label": "A", "calculation": "${b} + 1"},
          {"id": "b", "type": "calculate", "label": "B", "calculation": "${a} + 1"}]}
        """#)
        // At each expression that takes part.
        #expect(Set(errors.map(\.path)) == ["definition.questions[0].calculation", "definition.questions[1].calculation"], "\(errors)")
        #expect(errors.allSatisfy { $0.message.hasPrefix("its logic depends on itself: ${") })
        // A group whose relevance reads a question inside it.
        #expect(try definitionErrors(#"""
        {"title": "t", "questions": [{"id": "g", "type": "group", "label": "G", "relevant": "${q} = 1", "children": [
          {"id": "q", "type": "integer", "label": "Q"}]}]}
        """#).first?.message.hasPrefix("its logic depends on itself") == true)
    }

    /// A calculation is the device's, never run by the server: it may read `.`, as JavaRosa lets it.
    @Test func aCalculationMayReadItsOwnValue() throws {
        #expect(try definitionErrors(#"""
        {"title": "t", "questions": [{"id": "a", "type": "calculate", "label": "A", "calculation": "if(. = '', 1, . + 1)"}]}
        """#) == [])
    }

    @Test func idsAreUniqueAcrossGroupsAndRepeats() throws {
        #expect(try definitionErrors(#"""
        {"title": "t", "questions": [{"id": "a", "type": "text", "label": "A"},
          {"id": "r", "type": "repeat", "label": "R", "children": [{"id": "a", "type": "text", "label": "A again"}]}]}
        """#) == [fe("definition.questions[1].children[0].id", "duplicate id \"a\"")])
    }

    @Test func nestingIsBoundedWithoutRecursingWithoutLimit() throws {
        var json = #"{"id": "q", "type": "text", "label": "Q"}"#
        for i in 0..<20 { json = #"{"id": "g\#(i)", "type": "group", "label": "G", "children": [\#(json)]}"# }
        let errors = try definitionErrors(#"{"title": "t", "questions": [\#(json)]}"#)
        #expect(errors.contains { $0.message == "groups and repeats nest at most 16 deep" })
    }

    /// Inside a repeat `${sibling}` is the same instance's answer; from outside, the list of all.
    @Test func referencesInsideAndOutsideARepeat() throws {
        let d = try definition(#"""
        {"title": "t", "questions": [
          {"id": "people", "type": "repeat", "label": "P", "children": [
            {"id": "age", "type": "integer", "label": "Age"},
            {"id": "adult", "type": "select_one", "label": "Adult?", "choices": ["yes"], "relevant": "${age} >= 18"},
            {"id": "rank", "type": "integer", "label": "Rank", "constraint": ". = position(..)"}]},
          {"id": "n", "type": "integer", "label": "N", "constraint": ". = count(${people}) and . = count(${age})"},
          {"id": "oldest", "type": "integer", "label": "Oldest", "constraint": ". = max(${age})"}]}
        """#)
        #expect(try answerErrors(d, #"{"people": [{"age": 40, "adult": "yes", "rank": 1}, {"age": 7, "rank": 2}], "n": 2, "oldest": 40}"#) == [])
        #expect(try answerErrors(d, #"{"people": [{"age": 40, "rank": 2}, {"age": 7, "adult": "yes", "rank": 2}], "n": 3, "oldest": 7}"#) == [
            fe("answers.people[0].rank", "does not meet the constraint . = position(..)"),
            fe("answers.people[1].adult", "not relevant"),
            fe("answers.n", "does not meet the constraint . = count(${people}) and . = count(${age})"),
            fe("answers.oldest", "does not meet the constraint . = max(${age})"),
        ])
    }

    /// A key finds its node at its level as Swift compares strings: one may spell an id with
    /// other code points (U+212A KELVIN SIGN is "K"). A group's own id, a node of another level
    /// and any other key are unknown there, listed sorted after that object's other errors.
    @Test func keysFindTheirNodesAtTheirLevel() throws {
        let d = try definition(#"""
        {"title": "t", "questions": [
          {"id": "K", "type": "integer", "label": "K", "constraint": ". < 10"},
          {"id": "g", "type": "group", "label": "G", "children": [{"id": "inside", "type": "text", "label": "I"}]},
          {"id": "rows", "type": "repeat", "label": "R", "children": [{"id": "v", "type": "integer", "label": "V", "constraint": ". > ${K}"}]}]}
        """#)
        #expect(try answerErrors(d, #"{"K": 3, "inside": "x", "rows": [{"v": 4}, {"v": 2, "K": 1, "g": 0}]}"#) == [
            fe("answers.rows[1].v", "does not meet the constraint . > ${K}"),
            fe("answers.rows[1].K", "unknown question"),
            fe("answers.rows[1].g", "unknown question"),
        ])
        #expect(try answerErrors(d, #"{"K": 30, "g": {}, "zz": 1}"#) == [
            fe("answers.K", "does not meet the constraint . < 10"),
            fe("answers.g", "unknown question"),
            fe("answers.zz", "unknown question"),
        ])
    }

    /// A version-1 definition reads as it always did: no structure, the same checks.
    @Test func aVersionOneDefinitionTakesTheFlatReading() throws {
        let d = try definition(#"{"title": "t", "questions": [{"id": "a", "type": "text", "label": "A", "required": true}]}"#)
        #expect(d.structure == nil)
        #expect(try answerErrors(d, #"{"b": 1}"#) == [fe("answers.a", "required"), fe("answers.b", "unknown question")])
    }
}
