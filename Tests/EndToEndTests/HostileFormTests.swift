import Foundation
import Testing
import SurveyDomain

/// Console forms are decoded by libmicrohttpd's post processor as they stream in: a form no
/// browser would send (an empty multipart boundary, a body cut short, another content type,
/// too many or too large fields) is refused with a page naming the problem, before anything
/// runs — and the server process stays up, its data dir intact.
@Suite struct HostileFormTests {
    struct Case {
        let name: String
        let contentType: String?
        let body: [UInt8]
        let status: Int
    }

    static let cases: [Case] = {
        let part = "--B\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\na@example.org"
        return [
            Case(name: "empty boundary", contentType: "multipart/form-data; boundary=", body: Array("--\r\n\r\n".utf8), status: 400),
            Case(name: "empty boundary before a parameter", contentType: "multipart/form-data; boundary=;", body: Array("x".utf8), status: 400),
            // libmicrohttpd reads `""` as a two-character boundary: a body without it holds no
            // part, so the sign-in form is empty and the sign-in refused.
            Case(name: "quoted empty boundary", contentType: "multipart/form-data; boundary=\"\"", body: Array("x".utf8), status: 401),
            Case(name: "no boundary at all", contentType: "multipart/form-data", body: Array("x".utf8), status: 400),
            Case(name: "a multipart body cut short", contentType: "multipart/form-data; boundary=B", body: Array(part.utf8), status: 400),
            Case(name: "not a form", contentType: "text/plain", body: Array("email=a".utf8), status: 400),
            Case(name: "a body without a content type", contentType: nil, body: Array("email=a".utf8), status: 400),
            Case(name: "too many fields", contentType: "application/x-www-form-urlencoded",
                 body: Array(Array(repeating: "item=x", count: 2_001).joined(separator: "&").utf8), status: 413),
            Case(name: "one field too large", contentType: "application/x-www-form-urlencoded",
                 body: Array(("email=" + String(repeating: "a", count: 300_000)).utf8), status: 413),
            Case(name: "a body over the form limit", contentType: "application/x-www-form-urlencoded",
                 body: Array(("a=" + String(repeating: "b", count: 1 << 20)).utf8), status: 413),
        ]
    }()

    @Test func aHostileFormIsRefusedWithAPageAndTheServerStaysUp() throws {
        let p = ServerProcess()
        try p.start()
        _ = try p.seed()
        for c in Self.cases {
            var headers: [String: String] = [:]
            if let type = c.contentType { headers["Content-Type"] = type }
            let r = try p.client.request("POST", "/console/sign-in", body: c.body, headers: headers)
            #expect(r.status == c.status, "\(c.name): \(r.status) \(r.text.prefix(300))")
            #expect(r.headers["content-type"]?.hasPrefix("text/html") == true, "\(c.name): a page, not \(r.headers["content-type"] ?? "-")")
            let says = [400: "could not be read", 401: "not right", 413: "larger than this form takes"][c.status] ?? "?"
            #expect(r.text.contains(says), "\(c.name): \(r.text.prefix(300))")
            #expect(try p.client.get("/healthz").status == 200, "\(c.name) stopped the server: \(p.stderrText.suffix(2000))")
        }
        // A well-formed multipart sign-in is read as the urlencoded one is: a wrong password is 401.
        let boundary = "surveyd-test-boundary"
        let fields = [("email", "nobody@example.org"), ("password", "not the password at all")]
        let body = fields.map { "--\(boundary)\r\nContent-Disposition: form-data; name=\"\($0.0)\"\r\n\r\n\($0.1)\r\n" }.joined() + "--\(boundary)--\r\n"
        let signIn = try p.client.request("POST", "/console/sign-in", body: Array(body.utf8),
                                          headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"])
        #expect(signIn.status == 401, "\(signIn.status) \(signIn.text.prefix(300))")
        #expect(signIn.text.contains("not right"))
        #expect(p.terminate() == 0)
        let check = try ServerProcess.command(["check", "--data-dir", p.dataDir] + (try TestEngine.urlArguments(dataDir: p.dataDir)))
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        // No form file is left behind in the data dir's temporary folder.
        #expect(ServerProcess.regularFiles(under: p.dataDir + "/tmp").isEmpty)
    }
}
