import Foundation
import SurveyDomain
import Testing

/// The review desk's long queues and files, without a browser, on either engine.
@Suite struct ConsoleReviewDeskTests {
    typealias Session = ConsoleAdminTests.Session

    /// The queue lists fifty responses at a time, newest first, and links to the older ones:
    /// every response once, none twice.
    @Test func theQueueListsFiftyAtATimeWithALinkToTheOlderOnes() throws {
        let f = try Fixture()
        let survey = try f.publishSurvey(reviewRequired: true)
        var ids: Set<String> = []
        for i in 0..<51 {
            let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken,
                                      ResponseTests.submission("queue-page-\(1000 + i)", survey))
            ids.insert(try #require(r.json?["responseId"]?.stringValue))
        }
        let s = try Session(f, token: f.reviewerToken)
        func rows(_ html: String) -> [String] {
            html.components(separatedBy: #"name="item" value=""#).dropFirst().map { String($0.prefix { $0 != ":" }) }
        }
        func olderLink(_ html: String) -> String? {
            guard let end = html.range(of: "\">Older responses</a>"), let start = html[..<end.lowerBound].range(of: "<a href=\"", options: .backwards)
            else { return nil }
            return String(html[start.upperBound..<end.lowerBound]).replacingOccurrences(of: "&amp;", with: "&")
        }
        let first = try s.get("/console/orgs/\(f.orgId)/surveys/\(survey.surveyId)/responses?state=submitted")
        #expect(first.status == 200)
        let firstRows = rows(first.text)
        #expect(firstRows.count == 50)
        #expect(first.text.contains("Submitted <span class=\"count\">51</span>"))
        let link = try #require(olderLink(first.text))
        #expect(link.contains("state=submitted") && link.contains("before="))
        let second = try s.get(link)
        let secondRows = rows(second.text)
        #expect(secondRows.count == 1)
        #expect(olderLink(second.text) == nil)
        #expect(Set(firstRows + secondRows) == ids && firstRows.count + secondRows.count == ids.count)
    }

    /// A file answer opens through the reviewer's session with the bytes the collector sent
    /// (from the blob file on SQLite, read from the database on PostgreSQL).
    @Test func aFileAnswerOpensThroughTheSessionAsItWasUploaded() throws {
        let f = try Fixture()
        let survey = try f.publishSurvey(reviewRequired: true)
        let photo = Files.jpeg(70_000)
        let put = try f.client.request("PUT", "/v1/orgs/\(f.orgId)/uploads/console-photo-0001", token: f.collectorToken, body: photo,
                                       headers: ["Content-Type": "image/jpeg", "Survey-Version-Id": survey.versionId, "Question-Id": "photo"])
        #expect(put.status == 201)
        let r = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, ResponseTests.submission("console-file-0001", survey,
                                  answers: ["size": 2, "source": "well", "photo": ["clientUploadId": "console-photo-0001"]]))
        let rid = try #require(r.json?["responseId"]?.stringValue)
        let s = try Session(f, token: f.reviewerToken)
        let page = try s.get("/console/orgs/\(f.orgId)/responses/\(rid)")
        #expect(page.text.contains("src=\"/console/orgs/\(f.orgId)/uploads/console-photo-0001\""))
        let file = try s.get("/console/orgs/\(f.orgId)/uploads/console-photo-0001")
        #expect(file.status == 200)
        #expect(file.header("content-type") == "image/jpeg")
        #expect(file.body == photo)
        // Without a session it is the sign-in page's way, not the file.
        let anonymous = try f.client.get("/console/orgs/\(f.orgId)/uploads/console-photo-0001")
        #expect(anonymous.status == 303 && anonymous.body != photo)
    }
}
