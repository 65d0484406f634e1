import Foundation
import SurveyDomain
import SurveyHTTP
import SurveyOperations

/// Signing in (email + password, or an API token), signing out, and the invitation page where
/// a new user sets a password.
struct SignInPages: Sendable {
    let console: Console
    var pages: Pages { console.pages }
    var operations: Operations { console.operations }

    /// Only a path of this console: a sign-in never sends anyone elsewhere.
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/console/"), !next.hasPrefix("//"), !next.contains("\\") else { return "/console/" }
        return next
    }

    func form(_ request: HTTPRequest) throws -> HTTPResponse {
        if try console.visitor(request) != nil { return Pages.redirect(Self.safeNext(request.query["next"])) }
        return signInPage(next: Self.safeNext(request.query["next"]), email: "", problem: nil, status: 200)
    }

    private func signInPage(next: String, email: String, problem: String?, status: Int, headers: [(String, String)] = []) -> HTTPResponse {
        var frame = Pages.Frame(title: "Sign in")
        frame.problem = problem
        return pages.render(.signIn, ["next": .text(next), "email": .text(email)], frame: frame, status: status, headers: headers)
    }

    func signIn(_ request: HTTPRequest) throws -> HTTPResponse {
        let form = request.form
        let next = Self.safeNext(form["next"])
        let address = request.head.clientAddress
        do {
            let started: ConsoleSessions.Started
            if let token = form["token"], !token.isEmpty {
                started = try operations.consoleSessions.signIn(token: token, from: address)
            } else {
                started = try operations.consoleSessions.signIn(email: form["email"] ?? "", password: form["password"] ?? "", from: address)
            }
            return Pages.redirect(next, headers: [console.sessionCookie(started.sessionId, request)])
        } catch let e as ApiError where e.code == .unauthenticated || e.code == .tooManyPendingRequests {
            var headers: [(String, String)] = []
            if let r = e.retryAfterSeconds { headers.append(("Retry-After", String(r))) }
            return signInPage(next: next, email: form["email"] ?? "", problem: e.detail, status: e.code.httpStatus, headers: headers)
        }
    }

    func signOut(_ visit: Visit, _ request: HTTPRequest) throws -> HTTPResponse {
        let v = visit.visitor
        try operations.consoleSessions.signOut(v.sessionId)
        return Pages.redirect("/console/sign-in", headers: [console.sessionCookie("", request, maxAge: 0)])
    }

    func invitation(_ request: HTTPRequest) throws -> HTTPResponse {
        let token = request.parameter("invitationSecret")
        guard let (user, email) = try operations.invitations.open(token: token) else { return gone() }
        return pages.render(.invitation, ["name": .text(user.name), "email": .text(email), "token": .text(token)],
                            frame: Pages.Frame(title: "Set your password"))
    }

    func acceptInvitation(_ request: HTTPRequest) throws -> HTTPResponse {
        let token = request.parameter("invitationSecret")
        guard let (user, email) = try operations.invitations.open(token: token) else { return gone() }
        do {
            _ = try operations.invitations.accept(token: token, password: request.form["password"] ?? "")
        } catch let e as ApiError where e.code == .validationFailed {
            var frame = Pages.Frame(title: "Set your password")
            frame.problem = e.detail
            return pages.render(.invitation, ["name": .text(user.name), "email": .text(email), "token": .text(token)], frame: frame, status: 422)
        }
        var frame = Pages.Frame(title: "Sign in")
        frame.notice = "Your password is set. Sign in with \(email) and your new password."
        return pages.render(.signIn, ["next": .text("/console/"), "email": .text(email)], frame: frame)
    }

    private func gone() -> HTTPResponse {
        pages.message("This link no longer works",
                      "This invitation link has been used, replaced by a newer one, or has expired. Ask your organization's admin for a new one.",
                      link: "/console/sign-in", linkText: "Go to sign in", frame: Pages.Frame(title: "Invitation"), status: 404)
    }
}
