import Foundation
import Testing
@testable import SurveySync

/// What a person reads for each refusal the server can answer (`SyncWords` is part of the API:
/// apps show these sentences), and how long a busy server is left alone.
@Suite struct RefusalWordsTests {
    struct Refusal: Sendable, CustomTestStringConvertible {
        let status: Int
        let body: String
        let words: [String]
        var testDescription: String { "HTTP \(status) \(body)" }
        init(_ status: Int, _ body: String, _ words: [String]) {
            self.status = status
            self.body = body
            self.words = words
        }
    }

    static let refusals: [Refusal] = [
        Refusal(422, #"{"errorCode":1002,"errors":[{"path":"answers.household_size","message":"must be at most 50"},{"path":"fieldTaskId","message":"task is for survey srv_2"}]}"#,
                ["Check the answer to household_size: must be at most 50.", "Check fieldTaskId: task is for survey srv_2."]),
        Refusal(422, #"{"errorCode":1002}"#, ["The server says the answers break the survey's rules. Check them and save a corrected copy."]),
        Refusal(409, #"{"errorCode":1003}"#, ["This device's copy of the survey does not match the server's. Download the survey again; your answers are kept."]),
        Refusal(409, #"{"errorCode":1004}"#, ["This was already sent with different content under the same id, so it was not sent again. Contact support; your answers are kept."]),
        Refusal(404, #"{"errorCode":1005}"#, ["The server does not know the survey or response this refers to, or you may no longer see it. It will not be sent again automatically."]),
        Refusal(403, #"{"errorCode":1006}"#, ["Your account is no longer allowed to send this (your role in the organization changed). Ask your administrator; it will not be sent again automatically."]),
        Refusal(415, #"{"errorCode":1011,"detail":"The bytes are not a PNG image."}"#,
                ["The server did not accept an attached file: The bytes are not a PNG image.. Attach it again in a corrected copy."]),
        Refusal(413, #"{"errorCode":1013}"#, ["The server did not accept an attached file: it cannot be stored. Attach it again in a corrected copy."]),
        Refusal(409, #"{"errorCode":1021,"reviewState":"in_review","revision":3}"#,
                ["This response changed on the server before your correction arrived (it is now in review, revision 3): another device or a reviewer acted on it first. Your correction was not applied; open the response again to see its current version."]),
        Refusal(409, #"{"errorCode":1020,"reviewState":"returned"}"#,
                ["This response changed on the server before your correction arrived (it is now returned for correction): another device or a reviewer acted on it first. Your correction was not applied; open the response again to see its current version."]),
        Refusal(409, #"{"errorCode":1021,"reviewState":"edited","revision":4}"#,
                ["This response changed on the server before your correction arrived (it is now edited by a reviewer, revision 4): another device or a reviewer acted on it first. Your correction was not applied; open the response again to see its current version."]),
        Refusal(409, #"{"errorCode":1020,"reviewState":"hasIssues"}"#,
                ["This response changed on the server before your correction arrived (it is now flagged as having issues): another device or a reviewer acted on it first. Your correction was not applied; open the response again to see its current version."]),
        Refusal(409, #"{"errorCode":1021}"#,
                ["This response changed on the server before your correction arrived: another device or a reviewer acted on it first. Your correction was not applied; open the response again to see its current version."]),
        Refusal(409, #"{"errorCode":1022}"#, ["The field task was already completed by other work. Send the response without the task if it is still needed."]),
        Refusal(409, #"{"errorCode":1023,"detail":"The survey Household is closed: it takes no new responses."}"#,
                ["The survey was closed before this response reached the server, so it takes no new responses. Your answers are kept on this device; ask your administrator whether the survey will open again. It will not be sent again automatically."]),
        Refusal(400, "not a problem document", ["The server refused this (HTTP 400): no reason given. It will not be sent again automatically."]),
    ]

    @Test(arguments: refusals)
    func eachRefusalHasItsWords(_ r: Refusal) {
        guard case .refused(let words, let note) = AttemptOutcome.of(IncomingAnswer(status: r.status, headers: [:], body: Array(r.body.utf8))) else {
            Issue.record("not a refusal")
            return
        }
        #expect(words == r.words)
        #expect(note.hasPrefix("HTTP \(r.status)"))
    }

    /// A busy server, a full queue of requests or an unknown code the server calls retryable:
    /// sent again after the server's Retry-After, else after the backoff.
    @Test(arguments: [(429, #"{"errorCode":1030}"#), (409, #"{"errorCode":1030,"retryable":true}"#), (409, #"{"errorCode":1901,"retryable":true}"#)])
    func aRetryableAnswerWaitsForRetryAfter(_ status: Int, _ body: String) {
        for (headers, after) in [(["retry-after": "17"], TimeInterval(17)), ([:], nil)] as [([String: String], TimeInterval?)] {
            guard case .retryLater(let wait, _) = AttemptOutcome.of(IncomingAnswer(status: status, headers: headers, body: Array(body.utf8))) else {
                Issue.record("not retried")
                return
            }
            #expect(wait == after)
        }
    }

    /// How an owner reads in a support report or a log line; a trailing slash of the address is dropped.
    @Test func anOwnerIsNamedByPersonOrganizationAndServer() {
        let owner = Owner(server: "https://surveys.example.org/", organization: "org_7", user: "usr_3")
        #expect(owner.server == "https://surveys.example.org")
        #expect("\(owner)" == "usr_3 in org_7 at https://surveys.example.org")
        #expect(owner == Owner(server: "https://surveys.example.org", organization: "org_7", user: "usr_3"))
    }
}
