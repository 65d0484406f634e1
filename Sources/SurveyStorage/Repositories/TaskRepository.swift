import SurveyDomain

extension ReadContext {
    public func task(orgId: String, taskId: String) throws -> TaskRecord? {
        try conn.query("SELECT \(TaskRecord.columns) FROM tasks WHERE task_id = ? AND org_id = ?", [.text(taskId), .text(orgId)])
            .first.map(TaskRecord.init)
    }

    public func tasks(orgId: String, assignee: String?, after: String?, limit: Int) throws -> [TaskRecord] {
        var sql = "SELECT \(TaskRecord.columns) FROM tasks WHERE org_id = ? AND task_id > ?"
        var args: [SQLValue] = [.text(orgId), .text(after ?? "")]
        if let assignee { sql += " AND assignee_user_id = ?"; args.append(.text(assignee)) }
        sql += " ORDER BY task_id LIMIT ?"
        args.append(.int(Int64(limit)))
        return try conn.query(sql, args).map(TaskRecord.init)
    }

    /// The entities of a list named by a collector's open tasks of a survey, each once, in id
    /// order: what their copy of the list holds when the survey's scope is `assigned`.
    public func assignedEntityIds(orgId: String, surveyId: String, assignee: String, list: String) throws -> [String] {
        try conn.query("""
            SELECT DISTINCT entity_id FROM tasks
            WHERE org_id = ? AND assignee_user_id = ? AND survey_id = ? AND entity_list = ? AND entity_id IS NOT NULL AND state = ?
            ORDER BY entity_id
            """, [.text(orgId), .text(assignee), .text(surveyId), .text(list), .text(TaskState.open.rawValue)]).map { try $0.string("entity_id") }
    }
}

extension GatedTransaction {
    public func createTask(_ t: TaskRecord, createdBy: String) throws {
        try context.conn.run("""
            INSERT INTO tasks(task_id, org_id, title, survey_id, assignee_user_id, due_at, notes, state, created_by, created_at,
                              entity_list, entity_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(t.taskId), .text(orgId), .text(t.title), .text(t.surveyId), .text(t.assigneeUserId), .optional(t.dueAt),
                  .optional(t.notes), .text(TaskState.open.rawValue), .text(createdBy), .int(now), .optional(t.entityList), .optional(t.entityId)])
        try audit(action: "task.create", targetType: "task", targetId: t.taskId, detail: #"{"taskState":"open"}"#)
    }

    /// The open task of `assignee` on `surveyId` that names this entity, the oldest first: the one
    /// a follow-up submission completes. Locked on PostgreSQL until the transaction ends, so that
    /// no other transaction completes it meanwhile.
    public func openEntityTask(surveyId: String, assignee: String, list: String, entityId: String) throws -> TaskRecord? {
        let lock = context.conn.dialect == .postgres ? " FOR UPDATE" : ""
        return try context.conn.query("""
            SELECT \(TaskRecord.columns) FROM tasks
            WHERE org_id = ? AND assignee_user_id = ? AND survey_id = ? AND entity_list = ? AND entity_id = ? AND state = ?
            ORDER BY task_id LIMIT 1
            """ + lock, [.text(orgId), .text(assignee), .text(surveyId), .text(list), .text(entityId), .text(TaskState.open.rawValue)])
            .first.map(TaskRecord.init)
    }

    /// Completes an open task for a response, in this transaction: state, completedAt,
    /// completedBy and responseId together. 1022 when it is no longer open.
    public func completeTask(taskId: String, responseId: String, completedBy: String) throws {
        try context.conn.run("""
            UPDATE tasks SET state = ?, completed_at = ?, completed_by = ?, response_id = ?
            WHERE task_id = ? AND org_id = ? AND state = ?
            """, [.text(TaskState.completed.rawValue), .int(now), .text(completedBy), .text(responseId), .text(taskId), .text(orgId),
                  .text(TaskState.open.rawValue)])
        guard context.conn.changes == 1 else { throw ApiError(.taskAlreadyCompleted, "The field task \(taskId) is already completed.") }
        try audit(action: "task.complete", targetType: "task", targetId: taskId, detail: #"{"taskState":"completed","responseId":"\#(responseId)"}"#)
    }
}
