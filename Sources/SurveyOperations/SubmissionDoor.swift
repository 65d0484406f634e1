import SurveyStorage

/// What a door hands the submission operation: who is calling and what they sent, each read in
/// the operation's one snapshot and in the contract's order (the caller first, then — once the
/// operation knows they may submit here — the submission itself).
public protocol SubmissionDoor: Sendable {
    /// Step 1: the caller, as this door identifies one (a bearer token, an app token in the path).
    func caller(in db: ReadContext, operations: Operations) throws -> Caller
    /// After authorization: the submission decoded, or a stored response the door recognised
    /// without decoding (the JSON door: these very bytes were accepted before).
    func arrival(in db: ReadContext, orgId: String, submitter: UserRecord, operations: Operations) throws -> SubmissionArrival
    /// Before step 1: the reads `caller` and `arrival` will make, announced so that PostgreSQL
    /// sends them with the transaction's first statements — under load right after the COMMIT of
    /// the write before it (`ReadContext.prefetchTokenOwner`, `prefetchResponse`). Reads only: one
    /// the operation never asks for, because it refused the caller first, is dropped unread.
    func prefetch(in db: ReadContext, orgId: String)
}

extension SubmissionDoor {
    public func prefetch(in db: ReadContext, orgId: String) {}
}

public enum SubmissionArrival: Sendable {
    /// The door recognised a replay of a stored submission.
    case replay(ResponseRecord)
    /// `stored`: what the door already found stored under an id, if it looked.
    case submission(Submission, stored: StoredLookup)

    public enum StoredLookup: Sendable {
        case notLookedUp
        /// Used when `clientSubmissionId` is the submission's (else it is looked up again).
        case lookedUp(clientSubmissionId: String, ResponseRecord?)
    }
}
