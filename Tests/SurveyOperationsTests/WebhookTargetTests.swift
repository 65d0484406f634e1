import Testing
@testable import SurveyOperations

/// Which webhook URLs name a target at all (before the address checks).
@Suite struct WebhookTargetTests {
    static func refused(_ url: String) -> Bool {
        if case .refused = WebhookTarget.parse(url) { return true }
        return false
    }

    @Test func aURLWithoutAHostIsRefused() {
        for url in ["http://[]:80/", "http://[]/hook", "https:///hook", "http://:8080/"] {
            #expect(Self.refused(url), "\(url)")
        }
        guard case .target(let t) = WebhookTarget.parse("http://[::1]:8080/hook") else { Issue.record("refused"); return }
        #expect(t.host == "::1" && t.port == 8080)
    }
}
