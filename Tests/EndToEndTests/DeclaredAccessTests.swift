import Foundation
import Testing
import SurveyDomain
@testable import SurveyServer

/// Every route declares who may call it, and the declaration is what the route does: run in
/// process over every registered route, so a route added without the check its declaration
/// promises fails here.
@Suite struct DeclaredAccessTests {
    typealias World = InProcessOrderOfChecksTests.World

    /// The pattern with `{orgId}` (and ODK Central's `{projectId}`) as the world's organization
    /// and every other parameter unknown.
    static func path(_ pattern: String, org: String, project: String = "unknown-0001") -> String {
        pattern.split(separator: "/", omittingEmptySubsequences: false).map { s in
            // `{surveyId}.svc`: a parameter keeps its literal suffix.
            s == "{orgId}" ? org : s == "{projectId}" ? project : s.hasPrefix("{") ? "unknown-0001" + s[s.index(after: s.firstIndex(of: "}")!)...] : String(s)
        }.joined(separator: "/")
    }

    /// The error code; a HEAD answer has no body, so its status stands for the code.
    static func code(_ r: App.Answer) -> Int? {
        r.body?["errorCode"]?.intValue ?? [401: 1007, 403: 1006, 404: 1005][r.body == nil ? r.status : -1]
    }

    @Test func everyRouteDeclaresItsAccess() throws {
        let w = try World()
        let routes = w.app.declaredRoutes
        #expect(routes.count > 60)
        let known = ["anyone", "any caller", "operator"]
        for r in routes {
            #expect(known.contains(r.access) || r.access.hasPrefix("member") || r.access.hasPrefix("operator, or member"), "\(r.method) \(r.pattern): \(r.access)")
            // Whatever names an organization admits by it.
            // (tus discovery, OPTIONS, tells anyone what the server supports.)
            if (r.pattern.contains("{orgId}") || r.pattern.contains("{projectId}")) && !r.pattern.hasPrefix("/console/operator/") && r.method != "OPTIONS" {
                #expect(r.access.contains("member"), "\(r.method) \(r.pattern) is \(r.access)")
            }
        }
        let open = Set(routes.filter { $0.access == "anyone" }.map { "\($0.method) \($0.pattern)" })
        #expect(open == ["GET /healthz", "GET /readyz", "GET /v1/openapi.json", "OPTIONS /v1/orgs/{orgId}/uploads/resumable",
                         "GET /console", "GET /console/assets/console.css", "GET /console/sign-in", "POST /console/sign-in",
                         // The map's scripts and images (Leaflet, as Debian packages it): static, as the stylesheet.
                         "GET /console/assets/map.js", "GET /console/assets/leaflet/{file}", "GET /console/assets/leaflet/images/{file}",
                         "GET /console/invitations/{invitationSecret}", "POST /console/invitations/{invitationSecret}",
                         // ODK Central's sign-in with a console user's email and password, throttled as the console's.
                         "POST /v1/sessions"])
    }

    /// The API's routes: no token is 1007; a user of another organization gets the 404 of
    /// nothing (1005); a user without the declared role 1006; a user on an operator's route 1006.
    @Test func everyAPIRouteChecksWhatItDeclares() throws {
        let w = try World()
        let before = try w.traces()
        let tus = ["tus-resumable": "1.0.0"]
        for r in w.app.declaredRoutes where !r.pattern.hasPrefix("/console") && !r.pattern.hasPrefix("/v1/key/") && r.access != "anyone" {
            let path = Self.path(r.pattern, org: w.org, project: w.project)
            let what = "\(r.method) \(r.pattern) (\(r.access))"
            let anonymous = w.app.respond(method: r.method, path: path, headers: tus)
            #expect(anonymous.status == 401 && Self.code(anonymous) == 1007, "\(what) without a token: \(anonymous.status)")
            if r.access.contains("member") {
                let stranger = w.app.respond(method: r.method, path: path, token: w.stranger, headers: tus)
                #expect(Self.code(stranger) == 1005, "\(what) for another organization's user: \(stranger.status)")
            }
            let holders: [(String, String)] = [("admin", w.admin), ("collector", w.collector), ("reviewer", w.reviewer)]
            if r.access == "operator" {
                #expect(Self.code(w.app.respond(method: r.method, path: path, token: w.admin, headers: tus)) == 1006, "\(what) for an admin")
            } else if let roles = r.access.split(separator: ":").dropFirst().first, let lacking = holders.first(where: { !roles.contains($0.0) }) {
                let refused = w.app.respond(method: r.method, path: path, token: lacking.1, headers: tus)
                #expect(Self.code(refused) == 1006, "\(what) for a \(lacking.0): \(refused.status)")
            }
        }
        #expect(try w.traces() == before)
    }

    /// The OpenRosa door's routes take the token in the path: an unknown one, another
    /// organization's user's and a user's without the collector role are all 403 / 1006 (never
    /// 401, which would make ODK Collect ask for a password); a bearer token is not read.
    @Test func everyOpenRosaRouteChecksTheTokenInItsPath() throws {
        let w = try World()
        let before = try w.traces()
        let routes = w.app.declaredRoutes.filter { $0.pattern.hasPrefix("/v1/key/") }
        #expect(routes.count == 14)  // the OpenRosa door and the draft door, 7 each
        // (POST submission takes a form, decoded only from the wire: OpenRosaTests refuses it there.)
        for r in routes where r.method != "POST" {
            #expect(r.access == "member: collector", "\(r.method) \(r.pattern): \(r.access)")
            for (who, token) in [("no one", "unknown-0001"), ("another organization's user", w.stranger), ("an admin", w.admin), ("a reviewer", w.reviewer)] {
                let path = Self.path(r.pattern.replacingOccurrences(of: "{token}", with: token), org: w.org)
                let refused = w.app.respond(method: r.method, path: path, token: w.collector)
                #expect(refused.status == 403 && refused.headers.contains { $0.0 == "Surveyd-Error-Code" && $0.1 == "1006" },
                        "\(r.method) \(r.pattern) for \(who): \(refused.status)")
            }
            let path = Self.path(r.pattern.replacingOccurrences(of: "{token}", with: w.collector), org: w.org)
            #expect(w.app.respond(method: r.method, path: path).status != 403, "\(r.method) \(r.pattern) for the collector")
        }
        #expect(try w.traces() == before)
    }

    /// The console's pages: nobody signed in is sent to the sign-in page, whatever the page.
    /// (Its forms are checked on the wire by the console's own tests: the in-process seam sends
    /// no form body.)
    @Test func everyConsolePageForSignedInPeopleSendsOthersToSignIn() throws {
        let w = try World()
        for r in w.app.declaredRoutes where r.pattern.hasPrefix("/console") && r.access != "anyone" && r.method == "GET" {
            let a = w.app.respond(method: r.method, path: Self.path(r.pattern, org: w.org))
            let location = a.headers.first { $0.0.lowercased() == "location" }?.1 ?? ""
            #expect(a.status == 303 && location.hasPrefix("/console/sign-in"), "\(r.method) \(r.pattern): \(a.status) \(location)")
        }
    }
}
