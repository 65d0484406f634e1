import Foundation
import Testing
import SurveyDomain
@testable import SurveyServer
@testable import SurveyStorage

/// Server time is injected: a test moves it instead of sleeping or writing dates in the past, and
/// every expiry (the subscription's gate, a resumable upload's) follows the same clock.
@Suite struct ServerClockTests {
    typealias P = FoundationTests

    @Test func movingTheClockExpiresTheSubscriptionAndUnfinishedUploads() throws {
        let clock = ManualClock()
        let server = try TestServer { $0.clock = clock }
        let f = try Fixture(server: server)  // the organization runs for one day from now
        let v = try f.publishSurvey()
        let t = ResumableUploadTests.Tus(s: UploadTests.Setup(f: f, v: v))
        let location = try #require(try t.create("clock-tus-0001", length: 3_000).header("location"))
        #expect(try t.patch(location, offset: 0, Array(Files.jpeg(3_000)[0..<1_000])).status == 204)
        #expect(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, ResponseTests.submission("clock-0001", v)).status == 201)

        // 25 hours later: the subscription has ended and the upload has expired, by server time.
        clock.advance(byMillis: 25 * 3_600_000)
        let sub = try f.client.get("/v1/orgs/\(f.orgId)/subscription", token: f.collectorToken)
        #expect(sub.json?["status"]?.stringValue == "expired")
        #expect(sub.json?["serverTime"]?.stringValue == Timestamp.format(clock.nowMillis()))
        P.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, ResponseTests.submission("clock-0002", v)),
                        .subscriptionExpired)
        // A replay of stored work is still answered.
        #expect(try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, ResponseTests.submission("clock-0001", v)).status == 200)
        #expect(try t.head(location).status == 410)
        let app = server.app
        #expect(try ResumableUploadService.sweepExpired(database: app.database, blobs: app.blobs, busy: app.uploadLocks) == 1)
        #expect(server.files(in: "partial").isEmpty)

        // Renewed from the moved "now": the refused submission goes through once.
        try f.setExpiry(clock.nowMillis() + 86_400_000)
        let accepted = try f.client.post("/v1/orgs/\(f.orgId)/responses", token: f.collectorToken, ResponseTests.submission("clock-0002", v))
        #expect(accepted.status == 201)
        #expect(accepted.json?["receivedAt"]?.stringValue == Timestamp.format(clock.nowMillis()))
    }
}
