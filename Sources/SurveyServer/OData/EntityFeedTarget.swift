import SurveyOData
import SurveyStorage

/// What a request to an entity list's feed reads, however its door names it: surveyd's own
/// (`/v1/orgs/{orgId}/entity-lists/{name}.svc`) or ODK Central's (`/v1/projects/{n}/datasets/
/// {name}.svc`). The feed is one; its links and its rows' names differ.
struct EntityFeedTarget: Sendable {
    let orgId: String
    let listName: String
    /// Where `@odata.context` and `@odata.nextLink` point.
    let serviceRoot: String
    /// The rows' names, read in the page's snapshot (Central's name the list's users).
    let naming: @Sendable (ReadContext) throws -> ODataNaming
}
