import Synchronization
import SurveyDomain
import SurveyStorage

/// Parsed survey definitions by version id. Versions are immutable, so entries never go stale.
final class DefinitionCache: Sendable {
    private let cache = Mutex<[String: SurveyDefinition]>([:])

    func definition(of version: SurveyVersionRecord) throws -> SurveyDefinition {
        if let d = cache.withLock({ $0[version.surveyVersionId] }) { return d }
        let d = try SurveyDefinition.parse(try JSONParser.parse(Array(version.definition.utf8)))
        cache.withLock { $0[version.surveyVersionId] = d }
        return d
    }
}
