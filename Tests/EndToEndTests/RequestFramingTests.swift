import Foundation
import Testing
import SurveyDomain

/// A request whose body's end two parties could read differently (RFC 9112 §6.3), or that
/// carries two credentials, is refused before it is run, and its connection closed: nothing
/// hidden in its body is ever read as a request of its own.
@Suite struct RequestFramingTests {
    typealias P = FoundationTests

    /// Sends `head` and `body` raw on one connection; the answer, and whether the server then
    /// closed the connection without a second answer.
    static func exchange(_ f: Fixture, _ head: String, _ body: [UInt8]) throws -> (Reply, closed: Bool) {
        let fd = try f.client.connect()
        defer { close(fd) }
        RawHTTPClient.sendAll(fd, Array(head.utf8) + body)
        let reply = try RawHTTPClient.readReply(fd)
        var rest = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &rest, rest.count, 0)
        return (reply, n == 0)
    }

    static func surveysRequest(_ f: Fixture, _ framing: String, authorization: String? = nil) -> String {
        "POST /v1/orgs/\(f.orgId)/surveys HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "Authorization: \(authorization ?? "Bearer \(f.adminToken)")\r\nContent-Type: application/json\r\n\(framing)\r\n"
    }

    static let smuggled = "GET /v1/orgs/x/surveys HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

    @Test func contentLengthBesideTransferEncodingIsRefusedAndClosed() throws {
        let f = try Fixture()
        let json = #"{"title": "Wells", "reviewRequired": false}"#
        // As chunks, the body is the survey and then a second request; by Content-Length, only a part.
        let chunked = String(json.utf8.count, radix: 16) + "\r\n" + json + "\r\n0\r\n\r\n" + Self.smuggled
        let (reply, closed) = try Self.exchange(f, Self.surveysRequest(f, "Content-Length: 10\r\nTransfer-Encoding: chunked\r\n"), Array(chunked.utf8))
        P.expectProblem(reply, .malformedRequest)
        #expect(reply.json?["detail"]?.stringValue == "The request's body framing is ambiguous (conflicting Content-Length / Transfer-Encoding).")
        #expect(reply.header("connection")?.lowercased() == "close")
        #expect(closed, "no answer to the request hidden in the body")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM surveys") == 0)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'survey.create'") == 0)
        #expect(try f.client.get("/healthz").status == 200)
    }

    @Test func twoContentLengthsThatDisagreeAreRefusedAndClosed() throws {
        let f = try Fixture()
        let json = #"{"title": "Wells", "reviewRequired": false}"#
        let (reply, closed) = try Self.exchange(f, Self.surveysRequest(f, "Content-Length: \(json.utf8.count)\r\nContent-Length: 7\r\n"),
                                                Array((json + Self.smuggled).utf8))
        P.expectProblem(reply, .malformedRequest)
        #expect(reply.json?["detail"]?.stringValue == "The request's body framing is ambiguous (conflicting Content-Length / Transfer-Encoding).")
        #expect(reply.header("connection")?.lowercased() == "close")
        #expect(closed)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM surveys") == 0)
    }

    /// The same length twice is one length (RFC 9110 §8.6): the request is taken.
    @Test func aContentLengthRepeatedWithTheSameValueIsOneLength() throws {
        let f = try Fixture()
        let json = #"{"title": "Wells", "reviewRequired": false}"#
        let (reply, _) = try Self.exchange(f, Self.surveysRequest(f, "Content-Length: \(json.utf8.count)\r\nContent-Length: \(json.utf8.count)\r\nConnection: close\r\n"),
                                           Array(json.utf8))
        #expect(reply.status == 201, "\(reply.text)")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM surveys") == 1)
    }

    @Test func twoAuthorizationHeadersAreRefusedAndClosed() throws {
        let f = try Fixture()
        let json = #"{"title": "Wells", "reviewRequired": false}"#
        let (reply, closed) = try Self.exchange(f, Self.surveysRequest(f, "Content-Length: \(json.utf8.count)\r\n",
                                                                      authorization: "Bearer \(f.collectorToken)\r\nAuthorization: Bearer \(f.adminToken)"),
                                                Array(json.utf8))
        P.expectProblem(reply, .malformedRequest)
        #expect(reply.json?["detail"]?.stringValue == "The request has more than one Authorization header; send exactly one.")
        #expect(reply.header("connection")?.lowercased() == "close")
        #expect(closed)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM surveys") == 0)
    }
}
