import SurveyDomain
import SurveyStorage

/// ODK Central API's submission (`POST /v1/projects/{n}/forms/{xmlFormId}/submissions`): a
/// bearer token (an API token or a session's) and the instance XML as the body. The XML is read
/// by the OpenRosa door's own rules (`OpenRosaArrival`) into the same `Submission`, so the
/// operation runs the same checks, gate and transaction for every door, and an instanceID is
/// one key whichever door it came through.
public struct CentralSubmissionDoor: SubmissionDoor {
    public let bearerToken: String?
    /// The form the path names: the instance must be of that form.
    public let xmlFormId: String
    public let xml: [UInt8]

    public init(bearerToken: String?, xmlFormId: String, xml: [UInt8]) {
        self.bearerToken = bearerToken; self.xmlFormId = xmlFormId; self.xml = xml
    }

    public func caller(in db: ReadContext, operations: Operations) throws -> Caller {
        try operations.authenticate(bearerToken: bearerToken, in: db)
    }

    public func arrival(in db: ReadContext, orgId: String, submitter: UserRecord, operations: Operations) throws -> SubmissionArrival {
        var submission = try read(in: db, orgId: orgId, operations: operations).submission
        // Its XML may have waited here for its files (`CentralSubmissionFiles`): stored, it waits no more.
        submission.releasesWaiting = true
        return .submission(submission, stored: .notLookedUp)
    }

    /// The XML read by the OpenRosa door's rules, of the path's form. Files it names are uploads
    /// sent after it (`CentralSubmissionFiles`): until they are all here it is refused 422 / 1014
    /// and waits.
    public func read(in db: ReadContext, orgId: String, operations: Operations) throws -> OpenRosaArrival {
        let arrival = try OpenRosaArrival.read(xml, orgId: orgId, in: db, operations: operations)
        guard arrival.formId == xmlFormId else {
            throw ApiError.malformed("The submission is of the form \(arrival.formId), not \(xmlFormId): post it to that form's submissions.")
        }
        return arrival
    }
}
