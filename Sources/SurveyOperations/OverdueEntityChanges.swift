import SurveyDomain
import SurveyStorage

/// Entity updates that waited longer than the limit for what they follow (an entity's create, or
/// the update before them in their phone's branch, still on a lost phone): applied all the same,
/// marked `soft` (Docs/entities.md). Each through the gate in a transaction of its own: while
/// its organization's subscription has expired it keeps waiting, and applies after renewal.
public struct OverdueEntityChanges: Sendable {
    let operations: Operations

    /// Updates waiting longer than `limit` milliseconds, at most `batch` of them, oldest first;
    /// how many applied.
    @discardableResult
    public func apply(waitedLongerThan limit: Int64, batch: Int = 500) -> Int {
        let ops = operations
        let before = ops.clock.nowMillis() - limit
        guard let overdue = try? ops.database.read({ try $0.overdueWaitingEntityChanges(receivedBefore: before, limit: batch) }) else { return 0 }
        var applied = 0
        for w in overdue {
            let outcome = try? ops.gate.write(orgId: w.orgId, actor: w.actor) { tx in
                try EntityChange.applyOverdue(responseId: w.responseId, list: w.list, entityId: w.entityId, actor: w.actor, in: tx)
            }
            if case .written(true) = outcome { applied += 1 }
        }
        return applied
    }
}

extension Operations {
    public var overdueEntityChanges: OverdueEntityChanges { OverdueEntityChanges(operations: self) }
}
