import SurveyDomain
import SurveyStorage

/// The JSON API's submission: a bearer token, an optional `Idempotency-Key`, and the body as
/// sent. Its own work in front of the operation: most replays are a phone resending the bytes
/// it sent before, and those are recognised before the body is parsed (a parse was ~10 % of a
/// replay's CPU).
public struct JSONSubmissionDoor: SubmissionDoor {
    public let bearerToken: String?
    /// Checked for format only: `clientSubmissionId` is this write's key.
    public let idempotencyKey: String?
    /// The submission document exactly as sent.
    public let body: [UInt8]
    /// The body's `clientSubmissionId` as a scan finds it (`ClientIdentifier.scan`), and the
    /// token's hash: each made once for `prefetch` and then `arrival` and `caller`.
    let scannedId: String?
    let tokenHash: [UInt8]?

    public init(bearerToken: String?, idempotencyKey: String?, body: [UInt8]) {
        self.bearerToken = bearerToken; self.idempotencyKey = idempotencyKey; self.body = body
        scannedId = ClientIdentifier.scan(body, key: "clientSubmissionId")
        tokenHash = Operations.tokenHash(bearerToken)
    }

    public func caller(in db: ReadContext, operations: Operations) throws -> Caller {
        try operations.authenticate(tokenHash: tokenHash, in: db)
    }

    /// The look-ups of the token's owner, which `caller` makes, and of the stored row under the
    /// body's id, which `arrival` makes.
    public func prefetch(in db: ReadContext, orgId: String) {
        if let tokenHash { db.prefetchTokenOwner(hash: tokenHash) }
        if let id = scannedId { db.prefetchResponse(orgId: orgId, clientSubmissionId: id) }
    }

    public func arrival(in db: ReadContext, orgId: String, submitter: UserRecord, operations: Operations) throws -> SubmissionArrival {
        if let raw = idempotencyKey { _ = try IdempotencyKey<Done>.normalized(raw) }
        // The id is found by a scan, and the stored row's SHA-256 of its request decides. A match
        // means these bytes are the body that was validated and accepted under this very id, so
        // a parse could only agree. A row citing a field task is left to the full path, which
        // checks the task before the replay.
        var stored = SubmissionArrival.StoredLookup.notLookedUp
        if let id = scannedId {
            let found = try db.response(orgId: orgId, clientSubmissionId: id)
            if let found, found.submitter == submitter.userId, found.fieldTaskId == nil,
               !found.requestSHA256.isEmpty, found.requestSHA256 == Digest.sha256(body) {
                return .replay(found)
            }
            stored = .lookedUp(clientSubmissionId: id, found)
        }
        return .submission(try Submission(json: try JSONBody(body), bytes: body), stored: stored)
    }
}
