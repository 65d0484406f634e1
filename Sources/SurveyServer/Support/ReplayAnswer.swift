import SurveyHTTP

extension HTTPResponse {
    static let replayedHeader = "Idempotent-Replayed"

    /// The one way a replay is answered: the stored answer, marked as such (nothing was done again).
    static func replayed(_ answer: HTTPResponse) -> HTTPResponse {
        var r = answer
        r.headers.append((replayedHeader, "true"))
        return r
    }

    var isReplay: Bool { headers.contains { $0.0 == Self.replayedHeader } }
}
