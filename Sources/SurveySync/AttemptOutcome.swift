import Foundation

/// What one attempt to send a command established.
enum AttemptOutcome: Sendable {
    /// The server holds it (201, or a replay/reconciliation that found it).
    case held(CommandState, responseId: String?, revision: Int?, note: String)
    /// No answer, or one that may hide a write (timeout, reset, 5xx): reconcile, then resend.
    case ambiguous(String)
    /// A definitive "not stored, try later" (429, 503); `after` from Retry-After.
    case retryLater(after: TimeInterval?, note: String)
    /// 402 / 1001: kept, sent again only after renewal.
    case renewalRequired
    /// 401: kept, sent again only after the person signs in.
    case signInRequired
    /// A permanent refusal: the sentences a person reads.
    case refused([String], note: String)
    /// A 3xx, not followed (it would carry the token elsewhere) and not stored: surveyd never
    /// redirects, so the address is probably wrong. `location` is the header as sent.
    case redirected(status: Int, location: String?)
    /// A file's upload address on another origin: a tus creation's `Location` (`status` its answer),
    /// or one already in the store (`status` nil). Not used, for the reason a redirect is not
    /// followed; `location` is the address as the server gave it.
    case pointedElsewhere(status: Int?, location: String)

    /// The outcome of an answer that is not a success.
    static func of(_ answer: IncomingAnswer) -> AttemptOutcome {
        let problem = Problem.decode(answer.body)
        let note = "HTTP \(answer.status)" + (problem?.errorCode.map { " errorCode \($0)" } ?? "")
        switch (answer.status, problem?.errorCode) {
        case (300..<400, _): return .redirected(status: answer.status, location: answer.header("Location"))
        case (401, _): return .signInRequired
        case (_, 1001?), (402, _): return .renewalRequired
        case (429, _), (503, _), (_, 1030?), (_, 1040?):
            return .retryLater(after: answer.header("Retry-After").flatMap(TimeInterval.init), note: note)
        case (500..., _): return .ambiguous(note)
        default:
            // An unknown code is judged by `retryable`, then by status.
            let known = problem?.errorCode.map(SyncWords.knownCodes.contains) ?? false
            if !known, problem?.retryable == true {
                return .retryLater(after: answer.header("Retry-After").flatMap(TimeInterval.init), note: note)
            }
            return .refused(SyncWords.attention(for: problem, status: answer.status), note: note)
        }
    }

    /// Where a redirect points, for the words: host, with the port if one is named; a relative
    /// `Location` is read against the server address. Empty when there is no usable `Location`.
    static func redirectTarget(_ location: String?, server: String) -> String {
        guard let location, let url = URL(string: location, relativeTo: URL(string: server))?.absoluteURL,
              let host = url.host, !host.isEmpty else { return "" }
        return url.port.map { "\(host):\($0)" } ?? host
    }
}
