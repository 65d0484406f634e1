import SurveyOData
import SurveyOperations
import SurveyStorage

/// What a request to a survey's feed reads, however its door names it: surveyd's own door
/// (`/v1/orgs/{orgId}/surveys/{surveyId}.svc`) and ODK Central's (`/v1/projects/{n}/forms/
/// {xmlFormId}.svc`) resolve their paths and admit their callers each in its own way, then read
/// the one feed, which differs only in where its links point and the names its rows use.
struct SurveyFeedTarget: Sendable {
    let orgId: String
    let surveyId: String
    /// The admitted reader: what they see is decided as every read decides it.
    let user: UserRecord
    /// Where `@odata.context` and `@odata.nextLink` point.
    let serviceRoot: String
    /// The rows' names, for a page's snapshot (Central's name its users and versions).
    let naming: @Sendable (FeedSource) throws -> ODataNaming
}
