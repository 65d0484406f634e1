import SurveyDomain
import SurveyStorage

/// The reads a resumable upload's door makes, each for the caller it admitted.
extension Operations {
    /// The upload under the path's id, of the caller's organization (nil: none). Whose it is,
    /// and whether it expired, the exchange decides.
    public func resumableUpload(_ user: UserRecord, uploadId: String) throws -> ResumableUploadRecord? {
        try admit(user, to: Uploads.access, orgId: user.orgId)
        return try database.read { try $0.resumableUpload(orgId: user.orgId, uploadId: uploadId) }
    }

    /// The upload a create names by its `clientUploadId` (nil: none).
    public func resumableUpload(_ user: UserRecord, orgId: String, clientUploadId: String) throws -> ResumableUploadRecord? {
        try admit(user, to: Uploads.access, orgId: orgId)
        return try database.read { try $0.resumableUpload(orgId: orgId, clientUploadId: clientUploadId) }
    }

    /// 1001 now, while the organization is expired, before a byte is read (the gate asks again at commit).
    public func refuseWhileExpired(orgId: String) throws {
        if let org = try database.read({ try $0.org(orgId) }) { try gate.refuseIfExpired(org) }
    }
}
