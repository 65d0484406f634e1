import SurveyDomain
import SurveyForms
import SurveyStorage

/// Gives each response stored without summary facts its facts (`SummaryFacts`): responses
/// stored before surveyd kept them, or written into the database by another program. Run at
/// start-up, before the server answers, a thousand responses a transaction; nothing when every
/// response has them (one count of each table).
public struct SummaryFactsBackfill: Sendable {
    let operations: Operations
    static let batch = 1000

    /// How many responses got their facts.
    @discardableResult
    public func run() throws -> Int {
        let database = operations.database
        guard try database.responsesWithoutFactsCount() != 0 else { return 0 }
        var made = 0
        // Each version read and planned once, however many of its responses lack facts.
        var versions: [String: (definition: SurveyDefinition, plan: SummaryFacts.Plan)?] = [:]
        func version(of r: ResponseRecord) throws -> (definition: SurveyDefinition, plan: SummaryFacts.Plan)? {
            if let known = versions[r.surveyVersionId] { return known }
            let found = try database.read { try $0.surveyVersion(orgId: r.orgId, surveyVersionId: r.surveyVersionId) }
                .map { v in try operations.definitions.definition(of: v) }
                .map { (definition: $0, plan: SummaryFacts.Plan($0)) }
            versions[r.surveyVersionId] = .some(found)
            return found
        }
        // A response edited between the read and the write is left for the next round.
        for _ in 0..<3 {
            var after = ""
            var madeThisRound = 0
            while true {
                let page = try database.responsesWithoutFacts(after: after, limit: Self.batch)
                guard let last = page.last else { break }
                after = last.responseId
                var batch: [(response: ResponseRecord, facts: [UInt8])] = []
                for r in page {
                    guard let v = try version(of: r) else { continue }
                    batch.append((r, SummaryFacts(plan: v.plan, definition: v.definition, storedAnswers: r.answers).bytes))
                }
                try database.recordFacts(batch)
                madeThisRound += batch.count
            }
            made += madeThisRound
            if try madeThisRound == 0 || database.responsesWithoutFactsCount() == 0 { break }
        }
        return made
    }
}

extension Operations {
    public var summaryFactsBackfill: SummaryFactsBackfill { SummaryFactsBackfill(operations: self) }
}
