import SurveyDomain
import SurveyStorage

/// ODK Collect's, KoboCollect's and Enketo's submission: a collector's app token in the path and
/// the filled-in form, read against its version (`OpenRosaArrival`) into the same `Submission`
/// the JSON door makes — the same checks, the same gate, the same responses.
public struct OpenRosaSubmissionDoor: SubmissionDoor {
    /// The app token from `/v1/key/{token}/…`.
    public let appToken: String
    public let orgId: String

    /// The filled-in form's bytes, read in the operation's own snapshot after the caller.
    public let instance: [UInt8]
    /// The files its POST carried, received before anything was read: bound to the questions
    /// naming them in that same snapshot and committed with the response, or not at all.
    public let files: [ReceivedFile]
    /// The draft door's survey: the instance must name that survey's draft (stored then as its
    /// test submission, `SubmissionStore.draft`).
    public let draftOf: String?

    public init(appToken: String, orgId: String, instance: [UInt8], files: [ReceivedFile] = [], draftOf: String? = nil) {
        self.appToken = appToken; self.orgId = orgId; self.instance = instance; self.files = files; self.draftOf = draftOf
    }

    public func caller(in db: ReadContext, operations: Operations) throws -> Caller {
        try Self.collector(appToken: appToken, orgId: orgId, in: db, operations: operations)
    }

    /// What a phone reads for a missing, unknown or revoked token, or one that is not a collector's.
    public static let notACollectorsToken = ApiError(.forbidden, "This app token is not a collector's token of this organization: ask your admin for the server URL with a new token.")

    /// The caller behind an app token when it is a collector of `orgId`. A missing, unknown or
    /// revoked token, or a user who may not submit here, is 403: a 401 would make Collect ask for
    /// a user name and password, which surveyd's app tokens have not.
    public static func collector(appToken: String, orgId: String, in db: ReadContext, operations: Operations) throws -> Caller {
        let refused = notACollectorsToken
        let caller: Caller
        do { caller = try operations.authenticate(bearerToken: appToken, in: db) } catch let e as ApiError where e.code == .unauthenticated {
            throw refused
        }
        guard let user = caller.user, user.orgId == orgId, user.active, user.has(.collector) else { throw refused }
        return caller
    }

    public func arrival(in db: ReadContext, orgId: String, submitter: UserRecord, operations: Operations) throws -> SubmissionArrival {
        let arrival = try OpenRosaArrival.read(instance, orgId: orgId, in: db, operations: operations, draftOf: draftOf)
        guard !files.isEmpty else { return .submission(arrival.submission, stored: .notLookedUp) }
        let staged = try arrival.stage(files, submitter: submitter.userId, in: db, operations: operations)
        return .submission(arrival.submission.with(staged), stored: .notLookedUp)
    }
}
