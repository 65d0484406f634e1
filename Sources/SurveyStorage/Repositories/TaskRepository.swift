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
}

extension GatedTransaction {
    public func createTask(_ t: TaskRecord, createdBy: String) throws {
        try context.conn.run("""
            INSERT INTO tasks(task_id, org_id, title, survey_id, assignee_user_id, due_at, notes, state, created_by, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(t.taskId), .text(orgId), .text(t.title), .text(t.surveyId), .text(t.assigneeUserId), .optional(t.dueAt),
                  .optional(t.notes), .text(TaskState.open.rawValue), .text(createdBy), .int(now)])
        try audit(action: "task.create", targetType: "task", targetId: t.taskId, detail: #"{"taskState":"open"}"#)
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
