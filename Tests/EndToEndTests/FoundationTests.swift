import Foundation
import Testing
import SurveyDomain
import TestProcesses
@testable import SurveyStorage

/// Authentication, organizations and subscriptions, problem+json, limits.
@Suite struct FoundationTests {
    /// Every error answer is problem+json with errorCode, errorName and retryable that agree
    /// with the contract's table.
    static func expectProblem(_ r: Reply, _ code: ErrorCode, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.status == code.httpStatus, "status \(r.status): \(r.text)", sourceLocation: sourceLocation)
        #expect(r.header("content-type") == "application/problem+json", sourceLocation: sourceLocation)
        #expect(r.json?["errorCode"]?.intValue == code.rawValue, "\(r.text)", sourceLocation: sourceLocation)
        #expect(r.json?["errorName"]?.stringValue == code.name, sourceLocation: sourceLocation)
        #expect(r.json?["retryable"]?.boolValue == code.retryable, sourceLocation: sourceLocation)
        #expect(r.json?["status"]?.intValue == r.status, sourceLocation: sourceLocation)
        #expect(r.json?["title"]?.stringValue != nil, sourceLocation: sourceLocation)
    }

    @Test func healthAndReadiness() throws {
        let s = try TestServer()
        #expect(try s.client.get("/healthz").status == 200)
        let ready = try s.client.get("/readyz")
        #expect(ready.status == 200)
        #expect(ready.json?["status"]?.stringValue == "ready")
    }

    @Test func missingUnknownAndRevokedTokensAre1007() throws {
        let f = try Fixture()
        let path = "/v1/orgs/\(f.orgId)/subscription"
        Self.expectProblem(try f.client.get(path), .unauthenticated)
        Self.expectProblem(try f.client.get(path, token: "sdt_unknown-token"), .unauthenticated)
        Self.expectProblem(try f.client.request("GET", path, headers: ["Authorization": "Basic abc"]), .unauthenticated)
        for refused in ["Bearer", "Bearer  ", "Bearer\(f.adminToken)", "Bearerx \(f.adminToken)", "Bearer \(f.adminToken) x"] {
            Self.expectProblem(try f.client.request("GET", path, headers: ["Authorization": refused]), .unauthenticated)
        }
        // The scheme in any case, spaces around the token.
        for accepted in ["bearer \(f.adminToken)", "BEARER   \(f.adminToken)\t", " Bearer \(f.adminToken)"] {
            #expect(try f.client.request("GET", path, headers: ["Authorization": accepted]).status == 200, "\(accepted)")
        }

        // A second token for the collector, revoked by the admin: refused on the very next request.
        let users = try f.server.rows("SELECT user_id FROM users WHERE org_id = ? AND roles = 'collector'", [.text(f.orgId)])
        let userId = try users[0].string("user_id")
        let t = try f.client.post("/v1/orgs/\(f.orgId)/users/\(userId)/tokens", token: f.adminToken, [:])
        #expect(t.status == 201)
        let token = try #require(t.json?["token"]?.stringValue)
        let tokenId = try #require(t.json?["tokenId"]?.stringValue)
        #expect(try f.client.get(path, token: token).status == 200)
        #expect(try f.client.delete("/v1/orgs/\(f.orgId)/users/\(userId)/tokens/\(tokenId)", token: f.adminToken).status == 204)
        Self.expectProblem(try f.client.get(path, token: token), .unauthenticated)
        // The other token of the same user still works.
        #expect(try f.client.get(path, token: f.collectorToken).status == 200)
        // Tokens are stored only as SHA-256 hashes.
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM tokens WHERE token_hash = ?", [.blob(Digest.sha256(Array(token.utf8)))]) == 1)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM tokens WHERE CAST(token_hash AS TEXT) = ?", [.text(token)]) == 0)
    }

    @Test func subscriptionActiveThenExpiredWithServerTime() throws {
        let f = try Fixture()
        let path = "/v1/orgs/\(f.orgId)/subscription"
        let active = try f.client.get(path, token: f.collectorToken)
        #expect(active.status == 200)
        #expect(active.json?["status"]?.stringValue == "active")
        let serverTime = try #require(active.json?["serverTime"]?.stringValue)
        let parsed = try #require(Timestamp.parse(serverTime))
        #expect(abs(parsed - Timestamp.nowMillis()) < 60_000)
        #expect(active.json?["expiresAt"]?.stringValue != nil)

        let past = Timestamp.nowMillis() - 1000
        try f.setExpiry(past)
        let expired = try f.client.get(path, token: f.collectorToken)
        #expect(expired.status == 200)
        #expect(expired.json?["status"]?.stringValue == "expired")
        #expect(expired.json?["expiresAt"]?.stringValue == Timestamp.format(past))
        #expect(expired.json?["serverTime"]?.stringValue != nil)
        // The change is audited.
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'subscription.set' AND target_id = ?", [.text(f.orgId)]) == 1)
    }

    @Test func onlyOperatorsChangeSubscriptionsOrCreateOrgs() throws {
        let f = try Fixture()
        let path = "/v1/orgs/\(f.orgId)/subscription"
        let body: JSONValue = ["expiresAt": "2099-01-01T00:00:00Z"]
        Self.expectProblem(try f.client.put(path, token: f.adminToken, body), .forbidden)
        Self.expectProblem(try f.client.put(path, token: f.collectorToken, body), .forbidden)
        Self.expectProblem(try f.client.post("/v1/orgs", token: f.adminToken, ["name": "x", "expiresAt": "2099-01-01T00:00:00Z"]), .forbidden)
        // A member of another organization learns nothing: 404.
        let other = try Fixture(server: f.server)
        Self.expectProblem(try f.client.put(path, token: other.adminToken, body), .notFound)
        Self.expectProblem(try f.client.get(path, token: other.collectorToken), .notFound)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'subscription.set'") == 0)
        #expect(try f.server.rows("SELECT expires_at FROM orgs WHERE org_id = ?", [.text(f.orgId)])[0].int("expires_at") != Timestamp.parse("2099-01-01T00:00:00Z"))
    }

    @Test func malformedJSONIs1031AndUnknownRouteIs404() throws {
        let f = try Fixture()
        let r = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, body: Array("{\"title\": ".utf8),
                                     headers: ["Content-Type": "application/json"])
        Self.expectProblem(r, .malformedRequest)
        Self.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": 5]), .malformedRequest)
        Self.expectProblem(try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, body: Array("[1]".utf8)), .malformedRequest)
        Self.expectProblem(try f.client.get("/v1/no/such/route", token: f.adminToken), .notFound)
        Self.expectProblem(try f.client.get("/nope"), .notFound)
        let wrongMethod = try f.client.request("PATCH", "/healthz")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.header("allow") == "GET")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM surveys") == 0)
    }

    @Test func fiveMebibyteBodyIs413AndServerStaysHealthy() throws {
        let f = try Fixture()
        let big = [UInt8](repeating: UInt8(ascii: "a"), count: 5 << 20)
        let r = try f.client.request("POST", "/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, body: big,
                                     headers: ["Content-Type": "application/json"])
        Self.expectProblem(r, .payloadTooLarge)
        #expect(try f.client.get("/healthz").status == 200)
        // A chunked body without Content-Length is cut off at the limit too.
        let fd = try f.client.connect()
        defer { close(fd) }
        RawHTTPClient.sendAll(fd, Array("POST /v1/orgs/\(f.orgId)/surveys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(f.adminToken)\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 256 << 10)
        for _ in 0..<20 {
            if !RawHTTPClient.sendAll(fd, Array("40000\r\n".utf8) + chunk + [13, 10]) { break }
        }
        RawHTTPClient.sendAll(fd, Array("0\r\n\r\n".utf8))
        let chunked = try RawHTTPClient.readReply(fd)
        Self.expectProblem(chunked, .payloadTooLarge)
        #expect(try f.client.get("/healthz").status == 200)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM surveys") == 0)
    }

    @Test func gatedWriteRefusedWhileExpiredLeavesNoRowThenSucceedsOnce() throws {
        let f = try Fixture()
        let auditBefore = try f.server.count("SELECT COUNT(*) AS n FROM audit")
        try f.expire()
        let refused = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Wells", "reviewRequired": false])
        Self.expectProblem(refused, .subscriptionExpired)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM surveys") == 0)
        // Only the subscription change itself was audited.
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit") == auditBefore + 1)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action LIKE 'survey%'") == 0)

        try f.renew()
        let ok = try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "Wells", "reviewRequired": false])
        #expect(ok.status == 201)
        let surveyId = try #require(ok.json?["surveyId"]?.stringValue)
        #expect(ok.header("location") == "/v1/orgs/\(f.orgId)/surveys/\(surveyId)")
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM surveys") == 1)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM audit WHERE action = 'survey.create' AND target_id = ?", [.text(surveyId)]) == 1)
    }

    @Test func securityActionsWorkWhileExpired() throws {
        let f = try Fixture()
        try f.expire()
        let userId = try f.server.rows("SELECT user_id FROM users WHERE org_id = ? AND roles = 'collector'", [.text(f.orgId)])[0].string("user_id")
        // Change roles.
        let roles = try f.client.put("/v1/orgs/\(f.orgId)/users/\(userId)/roles", token: f.adminToken, ["roles": ["collector", "reviewer"]])
        #expect(roles.status == 200)
        #expect(try f.server.rows("SELECT roles FROM users WHERE user_id = ?", [.text(userId)])[0].string("roles") == "collector,reviewer")
        // Create a user and a token, then revoke the token and deactivate the user.
        let u = try f.client.post("/v1/orgs/\(f.orgId)/users", token: f.adminToken, ["name": "Temp", "roles": ["collector"]])
        #expect(u.status == 201)
        let newId = try #require(u.json?["userId"]?.stringValue)
        let newToken = try #require(u.json?["token"]?.stringValue)
        let tokenId = try #require(u.json?["tokenId"]?.stringValue)
        #expect(try f.client.delete("/v1/orgs/\(f.orgId)/users/\(newId)/tokens/\(tokenId)", token: f.adminToken).status == 204)
        Self.expectProblem(try f.client.get("/v1/orgs/\(f.orgId)/subscription", token: newToken), .unauthenticated)
        #expect(try f.client.delete("/v1/orgs/\(f.orgId)/users/\(userId)", token: f.adminToken).status == 204)
        Self.expectProblem(try f.client.get("/v1/orgs/\(f.orgId)/subscription", token: f.collectorToken), .unauthenticated)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM tokens WHERE user_id = ? AND revoked_at IS NULL", [.text(userId)]) == 0)
    }

    @Test func roleRemovedTakesEffectOnNextRequest() throws {
        let f = try Fixture()
        let adminId = try f.server.rows("SELECT user_id FROM users WHERE org_id = ? AND roles = 'admin'", [.text(f.orgId)])[0].string("user_id")
        #expect(try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "A"]).status == 201)
        #expect(try f.client.put("/v1/orgs/\(f.orgId)/users/\(adminId)/roles", token: f.server.operatorToken, ["roles": ["reviewer"]]).status == 200)
        Self.expectProblem(try f.client.post("/v1/orgs/\(f.orgId)/surveys", token: f.adminToken, ["title": "B"]), .forbidden)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM surveys") == 1)
    }

    @Test func metricsNeedAnOperator() throws {
        let f = try Fixture()
        Self.expectProblem(try f.client.get("/metrics", token: f.adminToken), .forbidden)
        let m = try f.client.get("/metrics", token: f.server.operatorToken)
        #expect(m.status == 200)
        #expect(MetricsText.withoutProcess(m.text).contains("surveyd_responses_accepted_total 0\n"))
        // Every sample names the process that counted it, by one name, and the name's host, pid
        // and engine are on surveyd_process_info.
        let samples = m.text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        let names = Set(samples.compactMap { line in
            line.firstRange(of: #/\{process="([^"]*)"/#).map { String(line[$0].dropFirst(10).dropLast()) }
        })
        #expect(!samples.isEmpty && samples.allSatisfy { $0.contains("{process=\"") }, "\(samples.filter { !$0.contains("{process=") })")
        #expect(names.count == 1, "\(names)")
        let name = try #require(names.first)
        #expect(name.hasSuffix(":\(f.server.app.port)"), "the default name is host:port: \(name)")
        #expect(m.text.contains("surveyd_process_info{process=\"\(name)\",hostname=\""), "\(m.text.prefix(400))")
        #expect(m.text.contains(",pid=\"") && m.text.contains("surveyd_process_start_time_seconds{process=\"\(name)\"} "))
    }

    @Test func theOpenAPIDocumentIsServedAndMatchesSchemas() throws {
        let s = try TestServer()
        let r = try s.client.get("/v1/openapi.json")
        #expect(r.status == 200)
        #expect(r.header("content-type") == "application/json")
        #expect(r.json?["openapi"]?.stringValue?.hasPrefix("3.1") == true)
        // The served copy is exactly the bundle of Schemas/ (regenerate with scripts/bundle_openapi.py).
        let p = try SpawnedProcess("/usr/bin/env", ["python3", ServerProcess.packageRoot.path + "/scripts/bundle_openapi.py", "--check",
                                                    ServerProcess.packageRoot.path + "/Sources/SurveyServer/Resources/openapi.json"])
        #expect(p.waitUntilExit() == .exited(0), "Sources/SurveyServer/Resources/openapi.json is stale: run scripts/bundle_openapi.py -o it")
    }

    @Test func literalSegmentsBeatParameters() throws {
        let f = try Fixture()
        // `resumable` is the tus collection, never an upload id.
        let put = try f.client.request("PUT", "/v1/orgs/\(f.orgId)/uploads/resumable", token: f.collectorToken, body: Files.png(),
                                       headers: ["Content-Type": "image/png", "Survey-Version-Id": "x", "Question-Id": "photo"])
        #expect(put.status == 405)
        #expect(put.header("allow") == "OPTIONS, POST")
        #expect(try f.client.get("/v1/orgs/\(f.orgId)/uploads/resumable", token: f.collectorToken).status == 405)
        #expect(try f.server.count("SELECT COUNT(*) AS n FROM uploads") == 0)
    }

    @Test func pathsSplitOnTheSlashByteEvenBeforeACombiningMark() throws {
        let f = try Fixture()
        // "/" followed by U+1032 (a combining mark) is one Character but still two segments.
        let r = try f.client.request("HEAD", "/v1/orgs/\(f.orgId)/uploads/resumable/%E1%80%B2%C2%B8", token: f.collectorToken,
                                     headers: ["Tus-Resumable": "1.0.0"])
        #expect(r.status == 404)
        #expect(r.header("tus-resumable") == "1.0.0")  // answered by the tus route, not the upload route
        let g = try f.client.get("/v1/orgs/\(f.orgId)/uploads/x/%E1%80%B2", token: f.collectorToken)
        #expect(g.status == 404)
    }
}
