import Synchronization
import SurveyDomain
import SurveyForms
import SurveyStorage

/// Published survey versions — with their survey and parsed definition — by version id. Versions
/// and surveys are immutable once created and never deleted, so an entry never goes stale; a
/// submission then reads neither the version row (its definition is kilobytes) nor the survey.
public final class DefinitionCache: Sendable {
    public init() {}
    public struct Published: Sendable {
        public let version: SurveyVersionRecord
        public let survey: SurveyRecord
        public let definition: SurveyDefinition
        /// How its responses' summary facts are written, worked out once.
        public let facts: SummaryFacts.Plan

        init(version: SurveyVersionRecord, survey: SurveyRecord, definition: SurveyDefinition) {
            self.version = version; self.survey = survey; self.definition = definition
            facts = SummaryFacts.Plan(definition)
        }
    }
    private let definitions = Mutex<[String: SurveyDefinition]>([:])
    private let published = Mutex<[String: Published]>([:])

    public func definition(of version: SurveyVersionRecord) throws -> SurveyDefinition {
        if let d = definitions.withLock({ $0[version.surveyVersionId] }) { return d }
        let d = try SurveyDefinition.parse(try JSONParser.parse(Array(version.definition.utf8)))
        definitions.withLock { $0[version.surveyVersionId] = d }
        return d
    }

    /// A definition parsed when its version was published.
    func remember(_ definition: SurveyDefinition, of surveyVersionId: String) {
        definitions.withLock { $0[surveyVersionId] = definition }
    }

    /// The organization's version `surveyVersionId`, or nil — also for another organization's id,
    /// which the caller answers with the 404 of nothing.
    /// Read on a miss in the caller's own read (`db`), never a second connection of its own.
    public func published(orgId: String, surveyVersionId: String, in db: ReadContext) throws -> Published? {
        if let p = published.withLock({ $0[surveyVersionId] }) { return p.version.orgId == orgId ? p : nil }
        guard let version = try db.surveyVersion(orgId: orgId, surveyVersionId: surveyVersionId),
              let survey = try db.survey(orgId: orgId, surveyId: version.surveyId) else { return nil }
        let p = Published(version: version, survey: survey, definition: try definition(of: version))
        published.withLock { $0[surveyVersionId] = p }
        return p
    }
}
