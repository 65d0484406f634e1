import Foundation
import SurveyDomain
import SurveyHTTP

/// The console's templates, read once from the module's resources, and the one layout every
/// page is rendered in — with the security headers every page carries.
final class Pages: Sendable {
    /// In `PageTemplate`'s order: a case's raw value is its index.
    private let templates: [Template]
    let stylesheet: [UInt8]

    init() throws {
        templates = try PageTemplate.allCases.map { page in
            guard let url = Bundle.module.url(forResource: page.file, withExtension: "html", subdirectory: "Templates") else {
                throw TemplateError("\(page.file).html is missing from the bundle")
            }
            return try Template(String(contentsOf: url, encoding: .utf8))
        }
        guard let css = Bundle.module.url(forResource: "console", withExtension: "css", subdirectory: "Assets") else {
            throw TemplateError("console.css is missing from the bundle")
        }
        stylesheet = Array(try Data(contentsOf: css))
    }

    /// Pages never run inline script, never sit in a frame, never leak their URL elsewhere.
    static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "same-origin"),
        ("X-Content-Type-Options", "nosniff"),
        ("Cache-Control", "no-store"),
    ]

    /// What the layout shows around a page's content.
    struct Frame {
        var title: String
        var who: String?
        var csrf: String?
        var expired: String?
        var notice: String?
        var problem: String?
        var problemDetails: [String] = []
        /// The section links at the top: (label, url, current).
        var nav: [(String, String, Bool)] = []
    }

    func render(_ page: PageTemplate, _ values: [String: TemplateValue], frame: Frame, status: Int = 200, headers: [(String, String)] = []) -> HTTPResponse {
        let content = templates[page.rawValue].render(values)
        var layout: [String: TemplateValue] = [
            "title": .text(frame.title), "content": .html(content), "signedIn": .flag(frame.who != nil),
            "who": .text(frame.who ?? ""), "csrf": .text(frame.csrf ?? ""),
            "hasProblemDetails": .flag(!frame.problemDetails.isEmpty),
            "problemDetails": .list(frame.problemDetails.map { ["line": .text($0)] }),
            "hasNav": .flag(!frame.nav.isEmpty),
            "nav": .list(frame.nav.map { ["label": .text($0.0), "url": .text($0.1), "current": .flag($0.2)] }),
        ]
        if let e = frame.expired { layout["expired"] = .text(e) }
        if let n = frame.notice { layout["notice"] = .text(n) }
        if let p = frame.problem { layout["problem"] = .text(p) }
        let html = templates[PageTemplate.layout.rawValue].render(layout)
        // A page that sets its own policy (the map: its scripts and tiles) replaces the default one.
        let own = headers.contains { $0.0 == "Content-Security-Policy" }
        let security = own ? Self.securityHeaders.filter { $0.0 != "Content-Security-Policy" } : Self.securityHeaders
        return HTTPResponse(status: status, headers: [("Content-Type", "text/html; charset=utf-8")] + security + headers,
                            body: Array(html.utf8))
    }

    /// A piece of a page (a secret shown once, with its QR code), to go into another as `.html`.
    func fragment(_ page: PageTemplate, _ values: [String: TemplateValue]) -> String {
        templates[page.rawValue].render(values)
    }

    /// A server time as pages show it: `2026-12-01 18:24 UTC` (`date`: `2026-12-01`).
    static func time(_ millis: Int64) -> String {
        let s = Timestamp.format(millis)
        return String(s.prefix(10)) + " " + String(s.dropFirst(11).prefix(5)) + " UTC"
    }
    static func date(_ millis: Int64) -> String { String(Timestamp.format(millis).prefix(10)) }

    /// A page that only says something: a refusal, a link that no longer works.
    func message(_ heading: String, _ sentence: String, link: String = "/console/", linkText: String = "Back to the console",
                 frame: Frame, status: Int, headers: [(String, String)] = []) -> HTTPResponse {
        render(.message, ["heading": .text(heading), "message": .text(sentence), "link": .text(link), "linkText": .text(linkText)],
               frame: frame, status: status, headers: headers)
    }

    static func redirect(_ location: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: 303, headers: [("Location", location)] + securityHeaders + headers)
    }
}
