import Testing
import SurveyDomain
@testable import SurveyHTTP

/// Which route a method and path reach.
@Suite struct RouterTests {
    static func router() -> Router {
        var r = Router()
        for (m, p) in [("GET", "/v1/orgs/{orgId}/uploads/{uploadId}"), ("POST", "/v1/orgs/{orgId}/uploads/resumable"),
                       ("GET", "/v1/orgs/{orgId}/uploads/resumable"), ("PUT", "/v1/orgs/{orgId}/uploads/{uploadId}"),
                       ("GET", "/console/"), ("GET", "/console")] {
            r.add(m, p, access: "anyone") { _ in .text(200, "\(m) \(p)") }
        }
        return r
    }

    static func found(_ method: String, _ path: String) -> (String, [String: String])? {
        if case .found(let route, let params) = router().match(method: method, path: path) { return (route.pattern, params) }
        return nil
    }

    @Test func aLiteralSegmentBeatsAParameter() {
        #expect(Self.found("GET", "/v1/orgs/o1/uploads/resumable")?.0 == "/v1/orgs/{orgId}/uploads/resumable")
        let upload = Self.found("GET", "/v1/orgs/o1/uploads/u7")
        #expect(upload?.0 == "/v1/orgs/{orgId}/uploads/{uploadId}")
        #expect(upload?.1 == ["orgId": "o1", "uploadId": "u7"])
    }

    /// `{surveyId}.svc` (the OData feed): a parameter with a literal suffix, which the value
    /// loses, and which beats a bare parameter in the same place.
    @Test func aParameterWithASuffixKeepsItOut() {
        var r = Router()
        for p in ["/v1/orgs/{orgId}/surveys/{surveyId}", "/v1/orgs/{orgId}/surveys/{surveyId}.svc", "/v1/orgs/{orgId}/surveys/{surveyId}.svc/{table}"] {
            r.add("GET", p, access: "anyone") { _ in .text(200, p) }
        }
        func found(_ path: String) -> (String, [String: String])? {
            if case .found(let route, let params) = r.match(method: "GET", path: path) { return (route.pattern, params) }
            return nil
        }
        #expect(found("/v1/orgs/o1/surveys/s1.svc")?.0 == "/v1/orgs/{orgId}/surveys/{surveyId}.svc")
        #expect(found("/v1/orgs/o1/surveys/s1.svc")?.1 == ["orgId": "o1", "surveyId": "s1"])
        #expect(found("/v1/orgs/o1/surveys/s1")?.0 == "/v1/orgs/{orgId}/surveys/{surveyId}")
        #expect(found("/v1/orgs/o1/surveys/.svc")?.0 == "/v1/orgs/{orgId}/surveys/{surveyId}")  // an empty value is no match
        #expect(found("/v1/orgs/o1/surveys/s1.svc/Submissions.members")?.1 == ["orgId": "o1", "surveyId": "s1", "table": "Submissions.members"])
        #expect(found("/v1/orgs/o1/surveys/s1.svcx/T") == nil)
    }

    @Test func anotherMethodIs405WithTheAllowedOnes() {
        guard case .methodNotAllowed(let allow) = Self.router().match(method: "DELETE", path: "/v1/orgs/o1/uploads/u7") else {
            Issue.record("not 405"); return
        }
        #expect(Set(allow) == ["GET", "PUT"])
        // A literal route with its own methods answers for itself, not for the parameter route.
        guard case .methodNotAllowed(let literal) = Self.router().match(method: "PUT", path: "/v1/orgs/o1/uploads/resumable") else {
            Issue.record("not 405"); return
        }
        #expect(Set(literal) == ["GET", "POST"])
    }

    @Test func headIsAnsweredByGet() {
        #expect(Self.found("HEAD", "/v1/orgs/o1/uploads/u7")?.0 == "/v1/orgs/{orgId}/uploads/{uploadId}")
    }

    @Test func emptySegmentsAndTrailingSlashesAreDistinct() {
        #expect(Self.found("GET", "/v1/orgs//uploads/u7") == nil)  // an empty parameter matches nothing
        #expect(Self.found("GET", "/console/")?.0 == "/console/")
        #expect(Self.found("GET", "/console")?.0 == "/console")
        guard case .notFound = Self.router().match(method: "GET", path: "/console//") else { Issue.record("found"); return }
    }

    /// A combining mark after a slash makes one Character with it; the split is on bytes.
    @Test func aCombiningMarkAfterASlashStillSplits() {
        let params = Self.found("GET", "/v1/orgs/o1/uploads/\u{1032}x")?.1
        #expect(params?["uploadId"] == "\u{1032}x")
        #expect(Self.found("GET", "/v1/orgs/o1\u{301}/uploads/u")?.1["orgId"] == "o1\u{301}")
    }
}
