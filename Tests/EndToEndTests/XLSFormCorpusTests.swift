import Foundation
import Testing
import SurveyDomain
import SurveyServer

/// The corpus of XLSForms as field teams write them (`Tests/SurveyXFormTests/Fixtures/make_corpus.py`:
/// a health facility checklist, a water point inspection, a form with every column and type
/// surveyd carries, and broken ones), published end to end on a real server. Each good form
/// publishes as an XLSForm and as the XForm pyxform makes of it with the same `contentHash`; its
/// source and XForm are served back byte for byte (and ODK Validate accepts the XForm); a complete
/// submission is accepted, and one that breaks several rules is refused with every failure at its
/// path and leaves nothing behind. Each broken form is refused at `xlsform`, naming the row or the
/// construct, and publishes nothing.
@Suite struct XLSFormCorpusTests {
    typealias P = FoundationTests
    typealias Forms = FormPublishingTests

    typealias Version = (surveyId: String, versionId: String, contentHash: String)

    /// `name.xlsx` and `name.xml` published to a new survey: both 201 with one `contentHash`; the
    /// XLSForm version's `/source` is the xlsx and its `/xform` the fixture's XForm, byte for byte
    /// (make_corpus.py runs xls2xform as the server does), which ODK Validate accepts. Returns the
    /// version published from the XLSForm and the one published from the XForm.
    func publishBothWays(_ f: Fixture, _ name: String, title: String) throws -> (xlsform: Version, xform: Version) {
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": .string(title)])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        let xlsx = try Forms.bytes(name + ".xlsx"), xml = try Forms.bytes(name + ".xml")
        func publish(_ body: [UInt8], _ contentType: String) throws -> Version {
            let r = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken, body: body,
                                         headers: ["Content-Type": contentType])
            #expect(r.status == 201, "\(name) as \(contentType): \(r.text)")
            #expect(r.json?["definition"]?["title"]?.stringValue == title)
            return (surveyId, try #require(r.json?["surveyVersionId"]?.stringValue, "\(r.text)"),
                    try #require(r.json?["contentHash"]?.stringValue))
        }
        let fromXLSForm = try publish(xlsx, Forms.xlsx)
        let fromXForm = try publish(xml, "application/xml")
        #expect(fromXForm.contentHash == fromXLSForm.contentHash, "\(name): the XLSForm and its XForm publish different definitions")

        let base = "/v1/orgs/\(f.orgId)/survey-versions/\(fromXLSForm.versionId)"
        let source = try f.client.get(base + "/source", token: f.collectorToken)
        #expect(source.status == 200 && source.header("content-type") == Forms.xlsx)
        #expect(source.body == xlsx, "\(name): /source is not the uploaded xlsx")
        let xform = try f.client.get(base + "/xform", token: f.collectorToken)
        #expect(xform.status == 200 && xform.header("content-type") == "application/xml")
        #expect(xform.body == xml, "\(name): /xform is not the XForm pyxform makes of the xlsx")
        try ODKValidate.accept(xform.body, label: "\(name).xlsx converted by pyxform")
        return (fromXLSForm, fromXForm)
    }

    /// A small PNG uploaded for `questionId` of `version`, under `clientUploadId`.
    func uploadPhoto(_ f: Fixture, _ version: Version, questionId: String, clientUploadId: String) throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 64)
        let r = try f.client.request("PUT", "/v1/orgs/\(f.orgId)/uploads/\(clientUploadId)", token: f.collectorToken, body: png,
                                     headers: ["Survey-Version-Id": version.versionId, "Question-Id": questionId, "Content-Type": "image/png"])
        #expect(r.status == 201, "upload: \(r.text)")
    }

    func errors(_ r: Reply) -> [String] {
        (r.json?["errors"]?.arrayValue ?? []).map { "\($0["path"]?.stringValue ?? "?"): \($0["message"]?.stringValue ?? "?")" }
    }

    /// `bad` is refused with exactly `expected` on both versions (the XLSForm's and the XForm's: one
    /// definition, one refusal), storing nothing and consuming no `clientSubmissionId`; then `good`
    /// under the same id is accepted once, stored as sent, and a replay of it is not a second response.
    func refusedThenAccepted(_ f: Fixture, _ v: (xlsform: Version, xform: Version), id: String,
                             bad: JSONValue, expected: [String], good: JSONValue, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let auditBefore = try f.server.count("SELECT COUNT(*) AS n FROM audit")
        let responsesBefore = try f.server.count("SELECT COUNT(*) AS n FROM responses")
        for (version, submissionId) in [(v.xlsform, id), (v.xform, id + "-xform")] {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                      ResponseTests.submission(submissionId, version, answers: bad))
            P.expectProblem(r, .validationFailed, sourceLocation: sourceLocation)
            #expect(errors(r) == expected, sourceLocation: sourceLocation)
            #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id = ?", [.text(submissionId)]) == 0,
                    sourceLocation: sourceLocation)
        }
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses") == responsesBefore, sourceLocation: sourceLocation)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit") == auditBefore, sourceLocation: sourceLocation)

        let fixed = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                      ResponseTests.submission(id, v.xlsform, answers: good))
        #expect(fixed.status == 201, "\(fixed.text)", sourceLocation: sourceLocation)
        let responseId = try #require(fixed.json?["responseId"]?.stringValue, sourceLocation: sourceLocation)
        let stored = try f.client.get("/v1/orgs/\(f.orgId)/responses/\(responseId)", token: f.reviewerToken)
        #expect(stored.json?["answers"] == good, sourceLocation: sourceLocation)
        let replay = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                       ResponseTests.submission(id, v.xlsform, answers: good))
        #expect(replay.status == 200 && replay.json?["responseId"]?.stringValue == responseId, sourceLocation: sourceLocation)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM responses WHERE client_submission_id = ?", [.text(id)]) == 1,
                sourceLocation: sourceLocation)
    }

    @Test func aHealthFacilityChecklist() throws {
        let f = try Fixture()
        let v = try publishBothWays(f, "health_facility", title: "Health facility checklist")
        let good: JSONValue = [
            "visit_date": "2026-11-20", "facility_type": "health_centre",
            "doctors": 2, "nurses": 6, "midwives": 3, "total_staff": 8, "staff_trained": "yes",
            "working_equipment": ["fridge", "scale", "solar"], "fridge_temp": 4.5,
            "in_stock": ["amoxicillin", "ors"], "stockout_days": 3, "ors_litres": 12.5,
        ]
        // A dispensary has no midwives; a fridge out of range; fewer than three items working
        // makes "what is broken" required; the number of stock-out days is missing.
        let bad: JSONValue = [
            "visit_date": "2023-06-01", "facility_type": "dispensary",
            "doctors": 60, "midwives": 1, "total_staff": 60, "staff_trained": "maybe",
            "working_equipment": ["fridge"], "fridge_temp": 12,
            "in_stock": ["ors", "paracetamol"], "ors_litres": 0,
        ]
        try refusedThenAccepted(f, v, id: "health-0001", bad: bad, expected: [
            "answers.visit_date: The visit cannot be before 2024",
            "answers.doctors: Between 0 and 50 doctors",
            "answers.nurses: required",
            "answers.midwives: not relevant",
            "answers.staff_trained: \"maybe\" is not one of the choices",
            "answers.fridge_temp: Between 2 and 8 °C",
            "answers.broken_equipment: required",
            "answers.in_stock: \"paracetamol\" is not one of the choices",
            "answers.stockout_days: required",
            "answers.ors_litres: More than 0 and at most 1000 litres",
        ], good: good)
    }

    @Test func aWaterPointInspection() throws {
        let f = try Fixture()
        let v = try publishBothWays(f, "water_point", title: "Water point inspection")
        try uploadPhoto(f, v.xlsform, questionId: "photo", clientUploadId: "water-photo-0001")
        let good: JSONValue = [
            "inspected_at": "2026-11-20T08:30:00+03:00", "district": "kilosa", "village": "magole",
            "location": ["lat": -6.8302, "lon": 36.9871, "altitude": 480, "accuracy": 4.5],
            "photo": ["clientUploadId": "water-photo-0001"], "pump_tag": "TZ-MOR-00417", "point_type": "borehole",
            "tap_count": 2, "taps": [["tap_working": "yes", "flow_rate": 12.5], ["tap_working": "no"]], "taps_recorded": 2,
            "opens_at": "06:00", "closes_at": "18:30:00", "fee": "yes", "fee_per_bucket": 50,
        ]
        // A village of the other district, no location, three taps counted but two recorded (one
        // too fast, one not said to work yet with a flow rate), a price without a fee.
        let bad: JSONValue = [
            "inspected_at": "2026-11-20 08:30", "district": "kilosa", "village": "dakawa", "point_type": "borehole",
            "tap_count": 3, "taps": [["tap_working": "yes", "flow_rate": 75], ["flow_rate": 5]], "taps_recorded": 2,
            "fee": "no", "fee_per_bucket": 20,
        ]
        try refusedThenAccepted(f, v, id: "water-0001", bad: bad, expected: [
            "answers.inspected_at: must be a date and time (RFC 3339)",
            "answers.village: \"dakawa\" is not offered here (its choice filter is false)",
            "answers.location: required",
            "answers.taps: must have at least 3 instances (its repeat count), has 2",
            "answers.taps[0].flow_rate: More than 0 and at most 60 litres a minute",
            "answers.taps[1].tap_working: required",
            "answers.taps[1].flow_rate: not relevant",
            "answers.fee_per_bucket: not relevant",
        ], good: good)
    }

    @Test func everyColumnAndType() throws {
        let f = try Fixture()
        let v = try publishBothWays(f, "every_column", title: "Every column")
        try uploadPhoto(f, v.xlsform, questionId: "portrait", clientUploadId: "every-portrait-0001")
        let point = { (lat: Double, lon: Double) -> JSONValue in ["lat": .number(lat), "lon": .number(lon)] }
        let good: JSONValue = [
            "started": "2026-11-20T08:00:00Z", "ended": "2026-11-20T08:40:00Z", "day": "2026-11-20", "device": "collect:7f3a9c",
            "name": "Amaru", "age": 34, "weight": 70.5, "visits_planned": 2, "village_code": "VC-01",
            "woke_up": "06:15", "last_meal": "2026-11-19T19:00:00-05:00", "home": point(-12.05, -77.04),
            "route": [point(-12.05, -77.04), point(-12.06, -77.05)],
            "plot": [point(-12.0, -77.0), point(-12.0, -77.1), point(-12.1, -77.1), point(-12.0, -77.0)],
            "portrait": ["clientUploadId": "every-portrait-0001"], "card": "7501031311309",
            "consent": "yes", "foods": ["maize", "beans"], "region": "coast", "district": "bay", "food_count": 2,
            "members": 2, "member": [["member_name": "Amaru", "member_age": 34, "jobs": [["job_title": "Fisher"]]],
                                     ["member_name": "Killa", "member_age": 8]],
            "oldest": 34, "visits_count": "2", "visits": [["visit_day": "2026-12-01"], ["visit_day": "2026-12-15"]],
        ]
        // The messages are the default language's (Español). A child of 3 needs a date of birth
        // and a weight; "none" with another food; a district of the other region; two members
        // counted, one recorded, without a name, with a job without a title; two visits fixed, one.
        let bad: JSONValue = [
            "name": "A", "age": 3, "consent": "yes", "foods": ["none", "fish"], "region": "highlands", "district": "port",
            "members": 2, "member": [["member_age": 16, "jobs": [[:]]]],
            "visits_count": "2", "visits": [["visit_day": "2026-12-01"]],
        ]
        try refusedThenAccepted(f, v, id: "every-0001", bad: bad, expected: [
            "answers.name: Al menos 2 letras",
            "answers.weight: required",
            "answers.born: required",
            "answers.foods: 'Ninguno' va solo",
            "answers.district: \"port\" is not offered here (its choice filter is false)",
            "answers.member: must have at least 2 instances (its repeat count), has 1",
            "answers.member[0].member_name: required",
            "answers.member[0].jobs[0].job_title: required",
            "answers.visits: must have at least 2 instances (its repeat count), has 1",
        ], good: good)
    }

    /// pyxform's refusals name the sheet and row (or the type it does not know); what surveyd does
    /// not carry is named by its construct. Nothing is published.
    @Test func brokenFormsAreRefusedAtXLSFormAndPublishNothing() throws {
        let f = try Fixture()
        let s = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Broken"])
        let surveyId = try #require(s.json?["surveyId"]?.stringValue)
        let before = try f.server.count("SELECT COUNT(*) AS n FROM survey_versions")
        let expected: [(String, (String) -> Bool)] = [
            ("missing_reference", { $0 == "[row : 3] On the 'survey' sheet, the 'relevant' value is invalid. Reference variables must contain a name from the 'survey' sheet. Could not find the name 'agee'." }),
            ("missing_list", { $0 == "[row : 2] List name not in choices sheet: colours" }),
            ("unknown_type", { $0 == "Unknown question type 'integr'." }),
            ("unclosed_group", { $0 == "[row : 2] Unmatched 'begin_group'. No matching 'end_group' was found for the name 'g'." }),
        ]
        for (name, matches) in expected {
            let r = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken,
                                         body: try Forms.bytes(name + ".xlsx"), headers: ["Content-Type": Forms.xlsx])
            P.expectProblem(r, .validationFailed)
            let errors = r.json?["errors"]?.arrayValue ?? []
            #expect(errors.count == 1 && errors.first?["path"]?.stringValue == "xlsform", "\(name): \(r.text)")
            #expect(matches(errors.first?["message"]?.stringValue ?? ""), "\(name): \(r.text)")
        }
        // A form that names a file, sent without it: refused naming the file.
        for (name, file) in [("csv_choices", "villages.csv"), ("pulldata", "prices.csv"), ("media_label", "face.png")] {
            let r = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys/\(surveyId)/versions", token: f.adminToken,
                                         body: try Forms.bytes(name + ".xlsx"), headers: ["Content-Type": Forms.xlsx])
            P.expectProblem(r, .validationFailed)
            let errors = r.json?["errors"]?.arrayValue ?? []
            #expect(errors.count == 1 && errors.first?["path"]?.stringValue == "attachments.\(file)", "\(name): \(r.text)")
            #expect(errors.first?["message"]?.stringValue?.hasPrefix("the form names \(file)") == true, "\(name): \(r.text)")
        }
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM survey_versions") == before)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM survey_version_sources") == 0)
    }
}
