import SurveyDomain
import SurveyStorage

/// Field tasks: assigned by admins, completed only by the response that completes them.
public struct FieldTasks: Sendable {
    let operations: Operations

    public struct NewTask: Sendable {
        public let title: String
        public let surveyId: String
        public let assigneeUserId: String
        public let notes: String?
        public let dueAt: Int64?
        public init(title: String, surveyId: String, assigneeUserId: String, notes: String?, dueAt: Int64?) {
            self.title = title; self.surveyId = surveyId; self.assigneeUserId = assigneeUserId; self.notes = notes; self.dueAt = dueAt
        }
    }

    public func create(orgId: String, by user: UserRecord, key: IdempotencyKey<TaskRecord>? = nil,
                       _ request: () throws -> NewTask) throws -> KeyedOutcome<TaskRecord> {
        let ops = operations
        try ops.member(user, of: orgId, withAnyOf: [.admin])
        return try ops.keyedWrite(orgId: orgId, caller: user.userId, target: "", key: key, prepare: { () throws -> TaskRecord in
            let new = try request()
            var errors: [FieldError] = []
            if new.title.isEmpty || new.title.count > 500 { errors.append(FieldError(path: "title", message: "1 to 500 characters")) }
            if try ops.database.read({ try $0.survey(orgId: orgId, surveyId: new.surveyId) }) == nil {
                errors.append(FieldError(path: "surveyId", message: "no such survey in this organization"))
            }
            let assignee = try ops.database.read { try $0.user(new.assigneeUserId) }
            if assignee?.orgId != orgId || assignee?.active != true || assignee?.has(.collector) != true {
                errors.append(FieldError(path: "assigneeUserId", message: "not an active collector of this organization"))
            }
            guard errors.isEmpty else { throw ApiError(.validationFailed, "The task is not valid.", errors: errors) }
            let now = ops.clock.nowMillis()
            return TaskRecord(taskId: Ids.make("tsk", nowMillis: now), orgId: orgId, title: new.title, surveyId: new.surveyId,
                              assigneeUserId: new.assigneeUserId, dueAt: new.dueAt, notes: new.notes, state: .open, createdAt: now,
                              completedAt: nil, completedBy: nil, responseId: nil)
        }, write: { [createdBy = user.userId] task, tx in
            try tx.createTask(task, createdBy: createdBy)
            guard let stored = try tx.read.task(orgId: orgId, taskId: task.taskId) else { throw ApiError(.internalError) }
            return stored
        })
    }
}
