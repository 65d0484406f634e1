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

    /// The outcome of an answer that is not a success.
    static func of(_ answer: IncomingAnswer) -> AttemptOutcome {
        let problem = Problem.decode(answer.body)
        let note = "HTTP \(answer.status)" + (problem?.errorCode.map { " errorCode \($0)" } ?? "")
        switch (answer.status, problem?.errorCode) {
        case (401, _): return .signInRequired
        case (_, 1001?), (402, _): return .renewalRequired
        case (429, _), (503, _), (_, 1030?), (_, 1040?):
            return .retryLater(after: answer.header("Retry-After").flatMap(TimeInterval.init), note: note)
        case (500..., _): return .ambiguous(note)
        default:
            // An unknown code is judged by `retryable`, then by status.
            if problem?.errorCode == nil || !SyncWords.knownCodes.contains(problem!.errorCode!), problem?.retryable == true {
                return .retryLater(after: answer.header("Retry-After").flatMap(TimeInterval.init), note: note)
            }
            return .refused(SyncWords.attention(for: problem, status: answer.status), note: note)
        }
    }
}
