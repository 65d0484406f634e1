import SurveyDomain
import SurveyStorage

/// The files a version was published from, as the console offers them for download.
extension Operations {
    /// For each version of the survey published from a file (by version id), its format and
    /// type; versions published as JSON are not there. Any member.
    public func visibleVersionSources(ofSurvey surveyId: String, of orgId: String, by user: UserRecord) throws -> [String: VersionSourceSummary] {
        try member(user, of: orgId)
        return try database.read { try $0.versionSourceSummaries(orgId: orgId, surveyId: surveyId) }
    }

    /// The files each version of the survey was published with (by version id). Any member.
    public func visibleVersionAttachments(ofSurvey surveyId: String, of orgId: String, by user: UserRecord) throws -> [String: [VersionAttachmentRecord]] {
        try member(user, of: orgId)
        return try database.read { try $0.versionAttachments(orgId: orgId, surveyId: surveyId) }
    }

    /// A version with its survey (whose title names a downloaded file) and what it was published
    /// from (nil when it was JSON), for any member; another organization's is not found.
    public func visibleVersionFile(_ surveyVersionId: String, of orgId: String, by user: UserRecord)
        throws -> (survey: SurveyRecord, version: SurveyVersionRecord, source: VersionSourceRecord?) {
        try member(user, of: orgId)
        let found = try database.read { db -> (SurveyRecord, SurveyVersionRecord, VersionSourceRecord?)? in
            guard let v = try db.surveyVersion(orgId: orgId, surveyVersionId: surveyVersionId),
                  let s = try db.survey(orgId: orgId, surveyId: v.surveyId) else { return nil }
            return (s, v, try db.versionSource(orgId: orgId, surveyVersionId: surveyVersionId))
        }
        guard let found else { throw ApiError.notFound() }
        return found
    }
}
