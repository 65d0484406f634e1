import Foundation
import Testing
import SurveyDomain
@testable import SurveyStorage

/// Forms with groups, repeats, languages and logic on a real server: the logic is checked on
/// every submission and resubmission, each failure at its path, and a refusal leaves nothing.
@Suite struct FormLogicTests {
    typealias P = FoundationTests

    /// A roster: a consent gate, a relevant group, a repeat per person with a nested repeat, two
    /// languages, a choice list, and a constraint that reads the device's clock.
    static let roster: JSONValue = [
        "title": "Roster", "defaultLanguage": "English (en)",
        "choiceLists": ["yesno": [["name": "yes", "label": ["English (en)": "Yes", "Español (es)": "Sí"]],
                                  ["name": "no", "label": ["English (en)": "No", "Español (es)": "No"]]]],
        "questions": [
            ["id": "consent", "type": "select_one", "label": ["English (en)": "Consent?", "Español (es)": "¿Consiente?"],
             "choiceList": "yesno", "required": true],
            ["id": "household", "type": "group", "label": "Household", "relevant": "${consent} = 'yes'", "children": [
                ["id": "size", "type": "integer", "label": "People", "required": true, "constraint": ". >= 1",
                 "constraintMessage": ["English (en)": "At least one person", "Español (es)": "Al menos una persona"]],
                ["id": "people", "type": "repeat", "label": "Person", "repeatCount": "${size}", "children": [
                    ["id": "name", "type": "text", "label": "Name", "required": true],
                    ["id": "age", "type": "integer", "label": "Age", "constraint": ". >= 0 and . <= 120"],
                    ["id": "pregnant", "type": "select_one", "label": "Pregnant?", "choiceList": "yesno",
                     "relevant": "${age} >= 12 and ${age} <= 55"],
                    ["id": "visits", "type": "repeat", "label": "Clinic visit", "maxCount": 2, "children": [
                        ["id": "visited", "type": "date", "label": "When", "constraint": ". <= today()"],
                    ]],
                ]],
            ]],
            ["id": "eldest", "type": "integer", "label": "Eldest", "relevant": "${consent} = 'yes'", "constraint": ". = max(${age})"],
        ],
    ]

    static let goodAnswers: JSONValue = [
        "consent": "yes", "size": 2, "eldest": 41,
        "people": [["name": "Ana", "age": 41, "pregnant": "no", "visits": [["visited": "2026-10-01"]]],
                   ["name": "Leo", "age": 6]],
    ]

    func publish(_ f: Fixture) throws -> (surveyId: String, versionId: String, contentHash: String) {
        try f.publishSurvey(reviewRequired: true, definition: Self.roster)
    }

    @Test func aRosterIsPublishedAndAcceptedOnceWithNestedAnswersAsStored() throws {
        let f = try Fixture()
        let v = try publish(f)
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("roster-0001", v, answers: Self.goodAnswers))
        #expect(r.status == 201, "\(r.text)")
        let id = try #require(r.json?["responseId"]?.stringValue)
        let doc = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(id)", token: f.reviewerToken)
        #expect(doc.json?["answers"] == Self.goodAnswers)
        let again = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                      ResponseTests.submission("roster-0001", v, answers: Self.goodAnswers))
        #expect(again.status == 200)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses") == 1)
    }

    @Test func aRefusalListsEveryFailureAtItsPathAndLeavesNothing() throws {
        let f = try Fixture()
        let v = try publish(f)
        let bad: JSONValue = [
            "consent": "yes", "size": 3, "eldest": 6, "extra": true,
            "people": [["name": "Ana", "age": 41, "visits": [["visited": "2026-10-01"], ["visited": "2026-10-02"], ["visited": "2026-10-03"]]],
                       ["age": 130, "pregnant": "yes"]],
        ]
        let auditBefore = try f.server.count("SELECT COUNT(*) AS n FROM audit")
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("roster-0002", v, answers: bad))
        P.expectProblem(r, .validationFailed)
        let errors = (r.json?["errors"]?.arrayValue ?? []).map { "\($0["path"]?.stringValue ?? "?"): \($0["message"]?.stringValue ?? "?")" }
        #expect(errors == [
            "answers.people: must have at least 3 instances (its repeat count), has 2",
            "answers.people[0].visits: takes at most 2 instances, has 3",
            "answers.people[1].name: required",
            "answers.people[1].age: does not meet the constraint . >= 0 and . <= 120",
            "answers.people[1].pregnant: not relevant",
            "answers.eldest: does not meet the constraint . = max(${age})",
            "answers.extra: unknown question",
        ])
        // Nothing stored, nothing audited, and the clientSubmissionId is still free.
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses") == 0)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit") == auditBefore)
        let fixed = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                      ResponseTests.submission("roster-0002", v, answers: Self.goodAnswers))
        #expect(fixed.status == 201, "\(fixed.text)")
    }

    @Test func withoutConsentTheGroupIsNotRelevantAndItsAnswersAreRefused() throws {
        let f = try Fixture()
        let v = try publish(f)
        let declined = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                         ResponseTests.submission("roster-0003", v, answers: ["consent": "no"]))
        #expect(declined.status == 201, "\(declined.text)")
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("roster-0004", v, answers: ["consent": "no", "size": 1, "people": [["name": "x"]]]))
        P.expectProblem(r, .validationFailed)
        #expect(r.json?["errors"]?.arrayValue?.compactMap { $0["path"]?.stringValue } == ["answers.size", "answers.people"])
        // The constraint message is the default language's.
        let zero = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                     ResponseTests.submission("roster-0005", v, answers: ["consent": "yes", "size": 0, "people": []]))
        #expect(zero.json?["errors"]?.arrayValue?.first?["message"]?.stringValue == "At least one person")
    }

    /// The device's clock decided `today()` when the visit was recorded, maybe days before: the
    /// server does not enforce that constraint, whatever date it holds.
    @Test func aConstraintOnTheDevicesClockIsNotEnforced() throws {
        let f = try Fixture()
        let v = try publish(f)
        var answers = Self.goodAnswers.objectValue ?? [:]
        answers["people"] = [["name": "Ana", "age": 41, "visits": [["visited": "2999-12-31"]]], ["name": "Leo", "age": 6]]
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("roster-0006", v, answers: .object(answers)))
        #expect(r.status == 201, "\(r.text)")
    }

    @Test func aResubmissionIsCheckedTheSameWay() throws {
        let f = try Fixture()
        let v = try publish(f)
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("roster-0007", v, answers: Self.goodAnswers))
        let id = try #require(r.json?["responseId"]?.stringValue, "\(r.text)")
        for (action, revision) in [("startReview", 1), ("returnForCorrection", 2)] {
            let step = try f.client.post("/v1/orgs/\(f.orgId)/responses/\(id)/review", token: f.reviewerToken,
                                         ["action": .string(action), "expectedRevision": .number(Double(revision)), "comment": "check ages"])
            #expect(step.status == 200, "\(step.text)")
        }
        func resubmit(_ answers: JSONValue) throws -> Reply {
            try f.client.post("/v1/orgs/\(f.orgId)/responses/\(id)/resubmit", token: f.collectorToken,
                              ["expectedRevision": 3, "surveyVersionId": .string(v.versionId), "contentHash": .string(v.contentHash), "answers": answers])
        }
        let stored = try f.server.rows("SELECT answers, revision FROM responses WHERE response_id = ?", [.text(id)])[0]
        var wrong = Self.goodAnswers.objectValue ?? [:]
        wrong["eldest"] = 99
        let refused = try resubmit(.object(wrong))
        P.expectProblem(refused, .validationFailed)
        #expect(refused.json?["errors"]?.arrayValue?.compactMap { $0["path"]?.stringValue } == ["answers.eldest"])
        let after = try f.server.rows("SELECT answers, revision FROM responses WHERE response_id = ?", [.text(id)])[0]
        #expect(try after.string("answers") == stored.string("answers"))
        #expect(try after.int("revision") == stored.int("revision"))
        wrong["eldest"] = 41
        #expect(try resubmit(.object(wrong)).status == 200)
    }

    @Test func aDefinitionWithBadLogicIsRefusedAtItsPathAndNothingIsPublished() throws {
        let f = try Fixture()
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Bad"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        let bad: JSONValue = ["title": "Bad", "questions": [
            ["id": "a", "type": "integer", "label": "A", "relevant": "${b} > 1"],
            ["id": "b", "type": "integer", "label": "B", "relevant": "${a} > 1"],
        ]]
        let r = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, ["definition": bad])
        P.expectProblem(r, .validationFailed)
        let errors = r.json?["errors"]?.arrayValue ?? []
        #expect(Set(errors.compactMap { $0["path"]?.stringValue }) == ["definition.questions[0].relevant", "definition.questions[1].relevant"], "\(r.text)")
        #expect(errors.allSatisfy { $0["message"]?.stringValue?.hasPrefix("its logic depends on itself") == true }, "\(r.text)")
        let unparsable: JSONValue = ["title": "Bad", "questions": [["id": "a", "type": "text", "label": "A", "constraint": "regex(., '(a+)+$'"]]]
        let r2 = try f.client.post("/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, ["definition": unparsable])
        P.expectProblem(r2, .validationFailed)
        #expect(r2.json?["errors"]?.arrayValue?.first?["path"]?.stringValue == "definition.questions[0].constraint")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM survey_versions WHERE survey_id = ?", [.text(surveyId)]) == 0)
    }

    /// Each repeat is a table of its own, `PARENT_KEY` and `KEY` first, read back by Python's
    /// csv and zipfile modules; the response's row holds each outer repeat's count.
    @Test func exportsHoldATablePerRepeatWithParentAndKey() throws {
        let f = try Fixture()
        let v = try publish(f)
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("roster-export", v, answers: Self.goodAnswers))
        let id = try #require(r.json?["responseId"]?.stringValue, "\(r.text)")
        let base = "/v1/orgs/\(f.orgId)/surveys/\(v.surveyId)/responses"
        let zip = try f.client.get(base + ".zip", token: f.reviewerToken)
        #expect(zip.status == 200)
        let zipPath = f.server.dataDir + "/roster-export.zip"
        FileManager.default.createFile(atPath: zipPath, contents: Data(zip.body))
        let tables = try ExportTests.python("""
            import sys, json, zipfile, csv, io
            z = zipfile.ZipFile(sys.argv[1])
            out = {}
            for name in z.namelist():
                if name.endswith(".csv"):
                    out[name] = list(csv.reader(io.StringIO(z.read(name).decode("utf-8-sig"))))
            print(json.dumps(out))
            """, zipPath)
        let people = tables["responses-people.csv"]?.arrayValue?.map { $0.arrayValue?.compactMap(\.stringValue) ?? [] }
        #expect(people == [["PARENT_KEY", "KEY", "name", "age", "pregnant", "visits"],
                           [id, "\(id)/people[1]", "Ana", "41", "no", "1"],
                           [id, "\(id)/people[2]", "Leo", "6", "", "0"]])
        let visits = tables["responses-visits.csv"]?.arrayValue?.map { $0.arrayValue?.compactMap(\.stringValue) ?? [] }
        #expect(visits == [["PARENT_KEY", "KEY", "visited"], ["\(id)/people[1]", "\(id)/people[1]/visits[1]", "2026-10-01"]])
        let main = tables["responses.csv"]?.arrayValue?.map { $0.arrayValue?.compactMap(\.stringValue) ?? [] } ?? []
        let header = main.first ?? []
        // The repeat's count stands where the repeat stands in the form.
        #expect(header.suffix(4) == ["consent", "size", "people", "eldest"])
        #expect(main.count == 2 && main.last?.suffix(2) == ["2", "41"], "\(main)")

        let xlsx = try f.client.get(base + ".xlsx", token: f.reviewerToken)
        #expect(xlsx.status == 200)
        let xlsxPath = f.server.dataDir + "/roster-export.xlsx"
        FileManager.default.createFile(atPath: xlsxPath, contents: Data(xlsx.body))
        let sheets = try ExportTests.python("""
            import sys, json, zipfile, re
            z = zipfile.ZipFile(sys.argv[1])
            names = re.findall(r'<sheet name="([^"]+)"', z.read("xl/workbook.xml").decode())
            people = z.read("xl/worksheets/sheet2.xml").decode()
            cells = [re.sub('<[^>]+>', '', c) for c in re.findall(r'<c r="[A-Z]+3"[^>]*>(.*?)</c>', people)]
            print(json.dumps({"names": names, "row3": cells}))
            """, xlsxPath)
        #expect(sheets["names"]?.arrayValue?.compactMap(\.stringValue) == ["responses", "people", "visits"])
        #expect(sheets["row3"]?.arrayValue?.compactMap(\.stringValue) == [id, "\(id)/people[2]", "Leo", "6", "0"])
    }

    /// A version-1 definition keeps its hash: the canonical JSON of what was sent.
    @Test func aVersionOneDefinitionKeepsItsHash() throws {
        let f = try Fixture()
        let v = try f.publishSurvey()
        #expect(v.contentHash == "sha256:" + Digest.sha256Hex(CanonicalJSON.encode(Fixture.definition)))
    }

    /// A catastrophic-backtracking pattern against a long answer is answered at once.
    @Test func aBacktrackingPatternCostsLinearTime() throws {
        let f = try Fixture()
        let v = try f.publishSurvey(definition: ["title": "Regex", "questions": [
            ["id": "code", "type": "text", "label": "Code", "constraint": "regex(., '^(a+)+$')"]]])
        let started = Date()
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                  ResponseTests.submission("regex-0001", v, answers: ["code": .string(String(repeating: "a", count: 4_000) + "b")]))
        P.expectProblem(r, .validationFailed)
        #expect(Date().timeIntervalSince(started) < 5, "a backtracking matcher would take far longer")
    }
}
