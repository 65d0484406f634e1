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

    /// The same by the submission's `clientSubmissionId` (ODK Central's instanceId).
    public func visibleResponse(_ user: UserRecord, orgId: String, clientSubmissionId: String) throws -> ResponseRecord {
        try member(user, of: orgId)
        guard let r = try database.read({ try $0.response(orgId: orgId, clientSubmissionId: clientSubmissionId) }),
              seesAll(user) || r.submitter == user.userId else { throw ApiError.notFound() }
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

/// The reads the doors list and show, each deciding visibility once, here.
extension Operations {
    /// A survey with its versions: anyone of the organization sees its surveys.
    public func visibleSurveys(of orgId: String, by user: UserRecord, after: String?, limit: Int) throws -> [(SurveyRecord, [SurveyVersionRecord])] {
        try member(user, of: orgId)
        return try database.read { db in
            try db.surveys(orgId: orgId, after: after, limit: limit).map { ($0, try db.surveyVersions(surveyId: $0.surveyId)) }
        }
    }

    public func visibleSurvey(_ surveyId: String, of orgId: String, by user: UserRecord) throws -> (SurveyRecord, [SurveyVersionRecord]) {
        try member(user, of: orgId)
        guard let found = try database.read({ db in
            try db.survey(orgId: orgId, surveyId: surveyId).map { ($0, try db.surveyVersions(surveyId: $0.surveyId)) }
        }) else { throw ApiError.notFound() }
        return found
    }

    public func visibleVersion(_ surveyVersionId: String, of orgId: String, by user: UserRecord) throws -> SurveyVersionRecord {
        try member(user, of: orgId)
        guard let v = try database.read({ try $0.surveyVersion(orgId: orgId, surveyVersionId: surveyVersionId) }) else { throw ApiError.notFound() }
        return v
    }

    /// The version and what it was published from (nil when it was JSON), for any member.
    public func visibleVersionSource(_ surveyVersionId: String, of orgId: String, by user: UserRecord) throws -> (SurveyVersionRecord, VersionSourceRecord?) {
        try member(user, of: orgId)
        let found = try database.read { db -> (SurveyVersionRecord, VersionSourceRecord?)? in
            guard let v = try db.surveyVersion(orgId: orgId, surveyVersionId: surveyVersionId) else { return nil }
            return (v, try db.versionSource(orgId: orgId, surveyVersionId: surveyVersionId))
        }
        guard let found else { throw ApiError.notFound() }
        return found
    }

    /// Responses a user may see: all of the organization's for reviewers and admins, a collector's own.
    public func visibleResponses(_ user: UserRecord, orgId: String, reviewState: ReviewState?, after: String?, limit: Int,
                                 surveyId: String? = nil) throws -> [ResponseRecord] {
        try member(user, of: orgId)
        let onlyOwn = !seesAll(user)
        return try database.read {
            try $0.responses(orgId: orgId, submitter: onlyOwn ? user.userId : nil, reviewState: reviewState, after: after, limit: limit,
                             surveyId: surveyId)
        }
    }

    /// A caller's own submission by its `clientSubmissionId` (reconciling after an ambiguous
    /// answer): anyone else's is the 404 of nothing, whatever the caller's role.
    public func ownResponse(_ user: UserRecord, orgId: String, clientSubmissionId: String) throws -> ResponseRecord {
        try member(user, of: orgId)
        guard let r = try database.read({ try $0.response(orgId: orgId, clientSubmissionId: clientSubmissionId) }),
              r.submitter == user.userId else { throw ApiError.notFound() }
        return r
    }

    /// Tasks a user may see: all for admins and reviewers, a collector's own assignments.
    public func visibleTasks(_ user: UserRecord, orgId: String, after: String?, limit: Int) throws -> [TaskRecord] {
        try member(user, of: orgId)
        let all = seesAll(user)
        return try database.read { try $0.tasks(orgId: orgId, assignee: all ? nil : user.userId, after: after, limit: limit) }
    }

    /// What happened to the responses and tasks a user follows (their own; reviewers and admins
    /// all), after a sealed cursor of this feed, with the key that seals the next ones. Read
    /// following the audit, so a change is never listed before what it refers to.
    public func visibleChanges(_ user: UserRecord, orgId: String, after cursor: String?, limit: Int) throws -> (changes: [ChangeRecord], cursorKey: [UInt8]) {
        try member(user, of: orgId)
        let all = seesAll(user)
        return try database.read(followingAudit: true) { db in
            let key = try db.cursorKey()
            var after: Int64 = 0
            if let cursor {
                // Sealed, like export cursors: a plain number would show how much every other
                // organization did between two pages.
                guard let n = SealedCursor.changes.parse(cursor, orgId: orgId, key: key) else {
                    throw ApiError(.validationFailed, "`after` must be a cursor from this feed.", errors: [FieldError(path: "after", message: "not a cursor")])
                }
                after = n
            }
            return (try db.changes(orgId: orgId, userId: all ? nil : user.userId, after: after, limit: limit), key)
        }
    }

    /// The organization's people by id, for the names on a page: anyone of it may see them.
    public func members(of orgId: String, by user: UserRecord) throws -> [UserRecord] {
        try member(user, of: orgId)
        return try database.read { try $0.users(orgId: orgId) }
    }

    /// Each survey with the responses waiting for review (above `ReviewQueue.countCap`: more than
    /// that): reviewers and admins only (others, none).
    public func waitingForReview(_ user: UserRecord, orgId: String) throws -> [(survey: SurveyRecord, waiting: Int)] {
        try member(user, of: orgId)
        guard seesAll(user) else { return [] }
        return try database.read { db in
            try db.surveys(orgId: orgId, after: nil, limit: 500).map { s in
                (s, try db.count(ExportFilter(orgId: orgId, surveyId: s.surveyId), in: .submitted, upTo: ReviewQueue.countCap))
            }
        }
    }

    /// The organization's users with their sign-in email, and one user with email and tokens:
    /// admins only, who manage them.
    public func usersWithEmail(of orgId: String, by user: UserRecord) throws -> [(user: UserRecord, email: String?)] {
        try member(user, of: orgId, withAnyOf: [.admin])
        return try database.read { try $0.usersWithEmail(orgId: orgId) }
    }

    public func userAccount(_ userId: String, of orgId: String, by admin: UserRecord) throws -> (user: UserRecord, email: String?, tokens: [TokenSummary]) {
        try member(admin, of: orgId, withAnyOf: [.admin])
        let (user, email, tokens) = try database.read { db in (try db.user(userId), try db.email(userId: userId), try db.tokens(userId: userId)) }
        guard let user, user.orgId == orgId else { throw ApiError.notFound() }
        return (user, email, tokens)
    }

    /// Every organization: operators only.
    public func allOrganizations(by caller: Caller) throws -> [OrgRecord] {
        try requireOperator(caller)
        return try database.read { try $0.orgs() }
    }
}
