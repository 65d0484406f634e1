import SurveyDomain
import SurveyStorage

/// Who may know of a thing. What a caller may not see is exactly the 404 of a thing that does
/// not exist: the answer never tells "not yours" from "not there".
extension Operations {
    /// Reviewers and admins see every response of their organization; a collector their own.
    public func visibleResponse(_ user: UserRecord, orgId: String, responseId: String) throws -> ResponseRecord {
        try member(user, of: orgId)
        guard let r = try database.read({ try $0.response(orgId: orgId, responseId: responseId) }),
              user.has(.reviewer) || user.has(.admin) || r.submitter == user.userId else { throw ApiError.notFound() }
        return r
    }

    /// Admins and reviewers see every task; a collector only those assigned to them.
    public func visibleTask(_ user: UserRecord, orgId: String, taskId: String) throws -> TaskRecord {
        try member(user, of: orgId)
        guard let t = try database.read({ try $0.task(orgId: orgId, taskId: taskId) }),
              user.has(.admin) || user.has(.reviewer) || t.assigneeUserId == user.userId else { throw ApiError.notFound() }
        return t
    }

    /// The uploader, reviewers and admins may read an upload.
    public func readableUpload(_ user: UserRecord, orgId: String, clientUploadId: String) throws -> UploadRecord {
        try member(user, of: orgId)
        guard let u = try database.read({ try $0.upload(orgId: orgId, clientUploadId: clientUploadId) }),
              u.uploader == user.userId || user.has(.reviewer) || user.has(.admin) else { throw ApiError.notFound() }
        return u
    }

    /// Whether a user sees every response (and task) of the organization or only their own.
    public func seesAll(_ user: UserRecord) -> Bool { user.has(.reviewer) || user.has(.admin) }
}
