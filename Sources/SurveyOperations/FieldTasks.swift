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
        /// The entity the task is about ("visit this household"): both or neither.
        public let entityList: String?
        public let entityId: String?
        public init(title: String, surveyId: String, assigneeUserId: String, notes: String?, dueAt: Int64?,
                    entityList: String? = nil, entityId: String? = nil) {
            self.title = title; self.surveyId = surveyId; self.assigneeUserId = assigneeUserId; self.notes = notes; self.dueAt = dueAt
            self.entityList = entityList; self.entityId = entityId
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
            errors += try Self.entityProblems(new, orgId: orgId, in: ops)
            guard errors.isEmpty else { throw ApiError(.validationFailed, "The task is not valid.", errors: errors) }
            let now = ops.clock.nowMillis()
            return TaskRecord(taskId: Ids.make("tsk", nowMillis: now), orgId: orgId, title: new.title, surveyId: new.surveyId,
                              assigneeUserId: new.assigneeUserId, dueAt: new.dueAt, notes: new.notes, state: .open, createdAt: now,
                              completedAt: nil, completedBy: nil, responseId: nil, entityList: new.entityList, entityId: new.entityId)
        }, write: { [createdBy = user.userId] task, tx in
            try tx.createTask(task, createdBy: createdBy)
            guard let stored = try tx.read.task(orgId: orgId, taskId: task.taskId) else { throw ApiError(.internalError) }
            return stored
        })
    }

    /// What is wrong with the entity a task names: `entityList` and `entityId` come both or
    /// neither; the list must be the organization's; the id must be one an entity can have. The
    /// entity itself need not exist yet: a phone may have created it offline, its create still
    /// on the way (its copy of the list shows it once it arrives).
    static func entityProblems(_ new: NewTask, orgId: String, in ops: Operations) throws -> [FieldError] {
        switch (new.entityList, new.entityId) {
        case (nil, nil):
            return []
        case (nil, .some):
            return [FieldError(path: "entityList", message: "required with entityId: the entity list the entity is in")]
        case (.some, nil):
            return [FieldError(path: "entityId", message: "required with entityList: the entity the task is about")]
        case (.some(let list), .some(let id)):
            var errors: [FieldError] = []
            if try ops.database.read({ try $0.entityList(orgId: orgId, name: list) }) == nil {
                errors.append(FieldError(path: "entityList", message: "no such entity list in this organization"))
            }
            if !ClientIdentifier.isValid(id) {
                errors.append(FieldError(path: "entityId", message: "must be an entity's id: 8–128 characters of A-Z a-z 0-9 _ - : . (a UUID)"))
            }
            return errors
        }
    }
}
